"""Stack manifests: load with positions, validate, resolve `extends`, derive, hash, check compatibility.

`from repro.manifest import LoadedStack, Stack, load_stack` imports the schema on first use only, so that
modules which need only a small part of the package (repro.manifest.software) stay cheap to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from repro.manifest.resolve import LoadedStack, load_stack
    from repro.manifest.schema import Stack

__all__ = ["LoadedStack", "Stack", "load_stack"]


def __getattr__(name: str) -> Any:
    if name in ("LoadedStack", "load_stack"):
        from repro.manifest import resolve

        return getattr(resolve, name)
    if name == "Stack":
        from repro.manifest.schema import Stack

        return Stack
    raise AttributeError(f"module 'repro.manifest' has no attribute {name!r}")
