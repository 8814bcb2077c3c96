"""Stack manifests: load with positions, validate, resolve `extends`, derive, hash, check compatibility."""

from repro.manifest.resolve import LoadedStack, load_stack
from repro.manifest.schema import Stack

__all__ = ["LoadedStack", "Stack", "load_stack"]
