"""What a host or image was found to hold, in the words of `results show` (the frameworks from their registry)."""

from __future__ import annotations

from repro.manifest import frameworks
from repro.manifest.schema import Stack
from repro.manifest.software import Software, framework_found


def software_line(sw: Software) -> str:
    """'python 3.11.2, tensorflow 2.15.1, horovod 0.28.1, openmpi 4.1.4' (each framework found by its name)."""
    found = ", ".join(f"{name} {version}" for name, version in framework_found(sw).items())
    return f"python {sw.python}, {found}, horovod {sw.horovod}, {sw.mpi}"


def framework_show(stack: Stack) -> dict:
    """What `repro show` adds for the stack's framework (PyTorch: what its wheel bundles)."""
    return frameworks.of(stack).show(stack)
