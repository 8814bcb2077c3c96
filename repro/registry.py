"""Named plug-ins: one registry per open axis (runtimes, launchers, schedulers, workloads, comparison
kinds, output formats), as ReFrame registers its schedulers and launchers by name.

    RUNTIMES = Registry[Runtime]("runtime")

    @RUNTIMES.register("docker")
    class DockerRuntime: ...

The CLI's choices and help come from `names()` and `describe()`; an unknown name is an input error that
lists the known ones. Adding a runtime, launcher, ... is one class plus one registration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from repro.errors import InputError

T = TypeVar("T")
# One lock for every registry's first imports: threads look plug-ins up at once (the host checks run one per
# host), and a module being imported must be seen as neither missing nor loaded twice. Reentrant: a module may
# look up another plug-in, or register itself, while it is imported.
_LOADING = threading.RLock()


class Registry(Generic[T]):
    """An ordered mapping of names to plug-ins of one kind."""

    def __init__(self, kind: str, *, on_add: Callable[[T], object] | None = None) -> None:
        self.kind = kind
        self._on_add = on_add
        self._items: dict[str, T] = {}
        self._lazy: dict[str, tuple[str, bool]] = {}
        self._help: dict[str, str] = {}

    def register(self, name: str, *, help: str = "", instance: bool = False) -> Callable:
        """Decorator that registers the decorated object under `name` (with instance=True: an instance of the
        decorated class, for stateless plug-ins); a name is registered once."""

        def add(item):
            self.add(name, item() if instance else item, help=help)
            return item

        return add

    def add(self, name: str, item: T, *, help: str = "") -> T:
        """Register `item` under `name` (ValueError if the name is taken: plug-ins never shadow each other)."""
        if name in self._items and self._items[name] is not item:
            raise ValueError(f"a {self.kind} named {name!r} is registered already")
        if self._on_add is not None:  # it may refuse the item (a plug-in lacking its protocol): before it is kept
            self._on_add(item)
        self._items[name] = item
        if help or name not in self._help:
            doc = (getattr(item, "__doc__", None) or "").strip().splitlines()
            self._help[name] = help or (doc[0] if doc else "")
        return item

    def remove(self, name: str) -> None:
        """Unregister `name` (tests register toy plug-ins and take them away again)."""
        self._items.pop(name, None)
        self._lazy.pop(name, None)
        self._help.pop(name, None)

    def lazy(self, name: str, target: str, *, help: str, instance: bool = False) -> None:
        """Register a built-in by 'module:attribute' without importing it (so `repro --help` stays fast); it is
        imported on first use."""
        self._lazy[name] = (target, instance)
        self._help[name] = help

    def _load(self, name: str) -> None:
        import importlib

        with _LOADING:
            if name not in self._lazy:  # another thread loaded it while this one waited
                return
            target, instance = self._lazy[name]
            module, _, attr = target.partition(":")
            item = getattr(importlib.import_module(module), attr)
            if name not in self._items:  # the module may have registered it itself
                self.add(name, item() if instance else item, help=self._help.get(name, ""))
            # only now: until it is registered, a lookup by another thread waits on the lock instead of
            # finding the name neither lazy nor loaded ("unknown framework 'pytorch'", seen on a new machine)
            self._lazy.pop(name, None)

    def get(self, name: str) -> T:
        """The plug-in called `name`; InputError naming the known ones (and the closest) otherwise."""
        if name in self._lazy:
            self._load(name)
        try:
            return self._items[name]
        except KeyError:
            import difflib  # only for the error: every command imports a registry

            close = difflib.get_close_matches(str(name), list(self.names()), n=1)
            hint = f"did you mean {close[0]}?" if close else ""
            raise InputError(f"unknown {self.kind} '{name}': expected one of {', '.join(self.names())}",
                             hint=hint) from None

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self._help, *self._items]))

    def describe(self) -> str:
        """'a: what a does; b: what b does' for --help texts."""
        return "; ".join(f"{n}: {h}" if h else n for n, h in self._help.items())

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def items(self) -> list[tuple[str, T]]:
        return [(name, self.get(name)) for name in self.names()]
