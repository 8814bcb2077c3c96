"""The communication backend rule every framework program and repro itself share (standard library only)."""

from __future__ import annotations


def auto_backend(gpu: bool) -> str:
    """What a collective backend of `auto` means: nccl where the ranks have GPUs, gloo on CPUs."""
    return "nccl" if gpu else "gloo"


def resolve_backend(requested: str, gpu: bool) -> str:
    """The backend asked for, or the auto rule's for `auto`."""
    return auto_backend(gpu) if requested == "auto" else requested
