"""PyTorch: DistributedDataParallel over torch.distributed (gloo, nccl, mpi), started by torchrun."""

from __future__ import annotations

from typing import Any

from repro.manifest.frameworks import Framework
from repro.manifest.schema import PyTorch as Section
from repro.manifest.software import normal_name, same, torch_fields
from repro.workloads.comm import auto_backend


class PyTorch(Framework):
    """PyTorch, distributed by torch.distributed (or Horovod's torch binding)."""

    name = "pytorch"
    title = "PyTorch"
    section = Section
    distributions = ("torch",)
    version_keys = ("torch", "torch_cuda", "torch_backends")
    default_workload = "torch_cnn"  # the name stacks written before `cnn` ran on PyTorch resolve to (same hash)
    gpu_libraries = ()  # a PyTorch wheel brings its own cuDNN and NCCL: pinning the image's copies is optional
    derived = ("package", "variant")
    compat_module = "repro.manifest.compat_torch"
    comm_library = "torch.distributed"
    backends = ("gloo", "nccl", "mpi")
    default_launcher = "torchrun"
    kube_policy = "torch"
    compile_meaning = "torch.compile: the DDP model compiled by TorchDynamo/Inductor"
    horovod_variable = "PYTORCH"

    def derive(self, stack: Any) -> Section:
        return stack.pytorch.model_copy(update={"package": package(stack), "variant": variant(stack)})

    def found(self, sw: Any) -> tuple[str | None, str | None]:
        return sw.torch, sw.torch_error

    def software(self, probe: dict) -> dict:
        return torch_fields(probe.get("torch"))

    def mismatches(self, stack: Any, sw: Any, where: str, backend: str | None) -> list[str]:
        """PyTorch against what torch itself reports: its version, its build (variant) and, in an image, the package
        it came from; and the torch.distributed backend the point runs."""
        p = stack.pytorch
        if not same(p.version, sw.torch):
            why = f"none ({sw.torch_error})" if sw.torch is None and sw.torch_error else sw.torch or "none"
            return [f"torch: pinned {p.version}, found {why}"]
        out: list[str] = []
        label = (sw.torch or "").partition("+")[2]
        found_build = f"CUDA {sw.torch_cuda}" if sw.torch_cuda else "a CPU build"
        if p.variant == "cpu" and sw.torch_cuda:
            out.append(f"torch variant: pinned cpu, found {found_build} ({sw.torch})")
        elif p.variant and p.variant.startswith("cu"):
            want = f"{p.variant[2:-1]}.{p.variant[-1]}"
            if not sw.torch_cuda or not same(want, sw.torch_cuda):
                out.append(f"torch variant: pinned {p.variant} (CUDA {want}), found {found_build} ({sw.torch})")
        elif label and p.variant and label != p.variant and not label.startswith("git"):
            out.append(f"torch variant: pinned {p.variant}, found {sw.torch}")
        if where == "image" and p.source == "pip" and sw.packages and normal_name(p.package or "torch") \
                not in sw.packages:
            out.append(f"torch package: pinned {p.package or 'torch'} (pip), found it not installed by pip")
        return out

    def backend_mismatches(self, sw: Any, backend: str | None) -> list[str]:
        """The torch.distributed backend a point runs, missing from the torch build found."""
        if backend in self.backends and sw.torch_backends.get(backend) is False:
            return [f"torch.distributed {backend}: needed by --dist-backend {backend}, found not available in this "
                    "torch build"]
        return []

    def show(self, stack: Any) -> dict:
        from repro.manifest.compat_torch import bundled

        return {"bundled": bundled(stack)}

    def auto_backend(self, gpu: bool) -> str | None:
        return auto_backend(gpu)

    def image_blocks(self, stack: Any, plan: Any, options: Any) -> list:
        from repro.image.blocks.stack import torch_blocks

        return torch_blocks(stack, options, plan)


def variant(stack: Any) -> str:
    """The PyTorch wheel's build: cpu on a CPU stack, cu<major><minor> from the stack's CUDA (12.4 -> cu124)."""
    if stack.pytorch.variant:
        return stack.pytorch.variant
    if not stack.cuda:
        return "cpu"
    major, minor = [*stack.cuda.split("."), "0"][:2]
    return f"cu{major}{minor}"


def package(stack: Any) -> str:
    """The package PyTorch comes from: torch from pip, python3-torch from Debian's archive."""
    if stack.pytorch.package:
        return stack.pytorch.package
    return "python3-torch" if stack.pytorch.source == "debian" else "torch"
