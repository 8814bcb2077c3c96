"""The CNNs the torch_* workloads train, built from torch.nn (torchvision does not import beside the CPU wheel).

ImageNet models follow torchvision's definitions, so parameter counts match what PyTorch users know:
ResNet-50/101 (bottleneck blocks, stride on the 3x3 convolution: "v1.5"; 25.6M / 44.5M parameters),
VGG-16 (no batch norm, 138.4M) and Inception-v3 (without the auxiliary classifier, 23.8M at 1000 classes).
CIFAR ResNet-20/32/56 follow He et al. 2015 section 4.2, as repro.workloads.models does for TensorFlow:
16/32/64 filters, 6n+2 layers, parameter-free shortcuts (option A: subsample and zero-pad; 0.27M for
ResNet-20). Every model returns logits. torch is imported inside `build`: the tables import without it.
"""

from __future__ import annotations

from typing import Any

# the same CIFAR depths, image sides and class counts as the TensorFlow workloads (one table, in models)
from .models import CIFAR_RESNET_BLOCKS, default_image_size, default_num_classes

__all__ = ["CIFAR_RESNET_BLOCKS", "MODELS", "build", "default_image_size", "default_num_classes", "min_image_size"]

IMAGENET_MODELS = ("resnet50", "resnet101", "vgg16", "inception3")
MODELS = IMAGENET_MODELS + tuple(CIFAR_RESNET_BLOCKS)
_RESNET_LAYERS = {"resnet50": (3, 4, 6, 3), "resnet101": (3, 4, 23, 3)}
_MIN_IMAGE_SIZE = {"inception3": 75, "vgg16": 32}


def min_image_size(model: str) -> int:
    """The smallest image side the architecture accepts."""
    return _MIN_IMAGE_SIZE.get(model, 8 if model in CIFAR_RESNET_BLOCKS else 32)


def build(model: str, num_classes: int) -> Any:
    """A fresh, randomly initialised torch.nn.Module `model` mapping NCHW images to logits."""
    import torch.nn as nn

    if model in CIFAR_RESNET_BLOCKS:
        net: nn.Module = _cifar_resnet(CIFAR_RESNET_BLOCKS[model], num_classes)
    elif model in _RESNET_LAYERS:
        net = _resnet(_RESNET_LAYERS[model], num_classes)
    elif model == "vgg16":
        net = _vgg16(num_classes)
    elif model == "inception3":
        net = _inception3(num_classes)
    else:
        raise ValueError(f"unknown model {model!r}: choose from {', '.join(MODELS)}")
    _init(net)
    return net


def _init(net: Any) -> None:
    import torch.nn as nn

    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)


def _conv_bn(cin: int, cout: int, kernel: Any, stride: int = 1, padding: Any = 0) -> Any:
    """Inception's BasicConv2d: convolution, batch norm (eps 1e-3), ReLU."""
    import torch.nn as nn

    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, padding, bias=False),
                         nn.BatchNorm2d(cout, eps=1e-3),
                         nn.ReLU(inplace=True))


# --------------------------------------------------------------------------- CIFAR ResNets


def _cifar_resnet(blocks: int, num_classes: int) -> Any:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Basic(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.stride, self.pad = stride, cout - cin

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            short = x
            if self.stride != 1 or self.pad:
                short = x[:, :, ::self.stride, ::self.stride]
                short = F.pad(short, (0, 0, 0, 0, self.pad // 2, self.pad - self.pad // 2))
            return F.relu(y + short)

    layers: list[nn.Module] = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True)]
    cin = 16
    for stage, cout in enumerate((16, 32, 64)):
        for block in range(blocks):
            layers.append(Basic(cin, cout, 2 if stage > 0 and block == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, num_classes)]
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- ResNet-50/101


def _resnet(counts: tuple[int, ...], num_classes: int) -> Any:
    import torch
    import torch.nn as nn

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            short = x if self.down is None else self.down(x)
            return self.relu(self.body(x) + short)

    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                               nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, count in enumerate(counts):
        width = 64 * 2**stage
        for block in range(count):
            layers.append(Bottleneck(cin, width, 2 if stage > 0 and block == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- VGG-16


def _vgg16(num_classes: int) -> Any:
    import torch.nn as nn

    layers: list[nn.Module] = []
    cin = 3
    for item in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if item == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(cin, int(item), 3, padding=1), nn.ReLU(inplace=True)]
            cin = int(item)
    layers += [nn.AdaptiveAvgPool2d(7), nn.Flatten(),
               nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(),
               nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(), nn.Linear(4096, num_classes)]
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- Inception-v3


def _inception3(num_classes: int) -> Any:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    c = _conv_bn

    class Branches(nn.Module):
        """Parallel branches whose outputs are concatenated on the channel axis."""

        def __init__(self, *branches: nn.Module, pool: nn.Module | None = None) -> None:
            super().__init__()
            self.branches = nn.ModuleList(branches)
            self.pool = pool

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = [b(x) for b in self.branches]
            if self.pool is not None:
                out.append(self.pool(x))
            return torch.cat(out, 1)

    def avg_then(conv: nn.Module) -> nn.Module:
        return nn.Sequential(nn.AvgPool2d(3, 1, 1), conv)

    def block_a(cin: int, pool_features: int) -> nn.Module:
        return Branches(c(cin, 64, 1), nn.Sequential(c(cin, 48, 1), c(48, 64, 5, padding=2)),
                        nn.Sequential(c(cin, 64, 1), c(64, 96, 3, padding=1), c(96, 96, 3, padding=1)),
                        avg_then(c(cin, pool_features, 1)))

    def block_b(cin: int) -> nn.Module:
        return Branches(c(cin, 384, 3, 2),
                        nn.Sequential(c(cin, 64, 1), c(64, 96, 3, padding=1), c(96, 96, 3, 2)),
                        pool=nn.MaxPool2d(3, 2))

    def block_c(cin: int, c7: int) -> nn.Module:
        return Branches(
            c(cin, 192, 1),
            nn.Sequential(c(cin, c7, 1), c(c7, c7, (1, 7), padding=(0, 3)), c(c7, 192, (7, 1), padding=(3, 0))),
            nn.Sequential(c(cin, c7, 1), c(c7, c7, (7, 1), padding=(3, 0)), c(c7, c7, (1, 7), padding=(0, 3)),
                          c(c7, c7, (7, 1), padding=(3, 0)), c(c7, 192, (1, 7), padding=(0, 3))),
            avg_then(c(cin, 192, 1)))

    def block_d(cin: int) -> nn.Module:
        return Branches(nn.Sequential(c(cin, 192, 1), c(192, 320, 3, 2)),
                        nn.Sequential(c(cin, 192, 1), c(192, 192, (1, 7), padding=(0, 3)),
                                      c(192, 192, (7, 1), padding=(3, 0)), c(192, 192, 3, 2)),
                        pool=nn.MaxPool2d(3, 2))

    def split(cin: int) -> nn.Module:
        return Branches(c(cin, 384, (1, 3), padding=(0, 1)), c(cin, 384, (3, 1), padding=(1, 0)))

    def block_e(cin: int) -> nn.Module:
        return Branches(c(cin, 320, 1), nn.Sequential(c(cin, 384, 1), split(384)),
                        nn.Sequential(c(cin, 448, 1), c(448, 384, 3, padding=1), split(384)),
                        avg_then(c(cin, 192, 1)))

    class Inception3(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(c(3, 32, 3, 2), c(32, 32, 3), c(32, 64, 3, padding=1), nn.MaxPool2d(3, 2),
                                      c(64, 80, 1), c(80, 192, 3), nn.MaxPool2d(3, 2))
            self.blocks = nn.Sequential(block_a(192, 32), block_a(256, 64), block_a(288, 64), block_b(288),
                                        block_c(768, 128), block_c(768, 160), block_c(768, 160), block_c(768, 192),
                                        block_d(768), block_e(1280), block_e(2048))
            self.fc = nn.Linear(2048, num_classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.blocks(self.stem(x))
            return self.fc(F.dropout(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1), 0.5, self.training))

    return Inception3()
