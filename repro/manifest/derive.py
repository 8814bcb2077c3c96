"""Fields a manifest may leave out because they follow from the others (pure)."""

from __future__ import annotations

from repro.manifest import frameworks
from repro.manifest.schema import Stack


def cuda_image_tag(cuda: str, cudnn: str | None, os_distro: str, os_version: str, flavour: str = "devel") -> str:
    """The nvidia/cuda tag for a CUDA / cuDNN / OS combination.

    Up to CUDA 10.2 tags use major.minor (10.0-cudnn7-devel-ubuntu18.04); from 11.x the full x.y.z
    (12.2.2-cudnn8-devel-ubuntu22.04); cuDNN 9-era tags carry no cuDNN number (compat-facts §5).
    """
    parts = cuda.split(".")
    cuda_tag = ".".join(parts[:2]) if int(parts[0]) <= 10 else ".".join([*parts, "0", "0"][:3])
    cudnn_tag = ""
    if cudnn:
        major = int(cudnn.split(".")[0])
        cudnn_tag = "cudnn-" if major >= 9 else f"cudnn{major}-"
    distro = {"ubuntu": "ubuntu", "centos": "centos", "rockylinux": "rockylinux", "debian": "debian"}[os_distro]
    os_tag = f"{distro}{os_version}"
    return f"{cuda_tag}-{cudnn_tag}{flavour}-{os_tag}"


def base_image(stack: Stack) -> str:
    """The image the stack builds FROM: nvidia/cuda for GPU stacks, the distribution image for CPU."""
    if stack.base_image:
        return stack.base_image
    if stack.cuda:
        return "nvidia/cuda:" + cuda_image_tag(stack.cuda, stack.cudnn, stack.os.distro, stack.os.version)
    return f"{stack.os.distro}:{stack.os.version}"


def derive(stack: Stack) -> Stack:
    """Fill every derived field; a field the manifest sets is kept as written."""
    bench = stack.benchmark
    if bench.data_format is None:
        bench = bench.model_copy(update={"data_format": "NCHW" if stack.gpu else "NHWC"})
    update: dict = {"base_image": base_image(stack), "benchmark": bench}
    framework = frameworks.of(stack)  # its section's derived fields are the framework's own
    update[framework.name] = framework.derive(stack)
    return stack.model_copy(update=update)
