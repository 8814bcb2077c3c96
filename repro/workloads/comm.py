"""The communication backend rule every framework program and repro itself share (standard library only)."""

from __future__ import annotations

from .spec import Option

BACKENDS = ("gloo", "nccl", "mpi")  # torch.distributed's

# The PyTorch programs' backend option, declared once for every family that has a PyTorch program
DIST_BACKEND = Option("dist_backend", str, "auto", "torch.distributed backend (auto: nccl on GPUs, gloo on CPUs)",
                      choices=("auto", *BACKENDS), frameworks=("pytorch",))


def auto_backend(gpu: bool) -> str:
    """What a collective backend of `auto` means: nccl where the ranks have GPUs, gloo on CPUs."""
    return "nccl" if gpu else "gloo"


def resolve_backend(requested: str, gpu: bool) -> str:
    """The backend asked for, or the auto rule's for `auto`."""
    return auto_backend(gpu) if requested == "auto" else requested
