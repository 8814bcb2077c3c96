"""One compatibility policy for every command that takes a stack (validate, up, bench, render).

Errors stop the command before anything is built, launched or written; warnings are shown and, with
`strict`, stop it too. Notes are shown by `repro validate` only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from repro.errors import CompatibilityError
from repro.manifest import LoadedStack
from repro.manifest.compat import ERROR, WARNING, Finding, check


@dataclass(frozen=True)
class Gate:
    """The findings of one stack and whether they stop the command."""

    loaded: LoadedStack
    findings: tuple[Finding, ...]
    strict: bool = False

    @property
    def blocking(self) -> tuple[Finding, ...]:
        stop = {ERROR, WARNING} if self.strict else {ERROR}
        return tuple(f for f in self.findings if f.severity in stop)

    @property
    def shown(self) -> tuple[Finding, ...]:
        """What every command prints: errors and warnings (notes are for `repro validate`)."""
        return tuple(f for f in self.findings if f.severity in (ERROR, WARNING))


def gate(loaded: LoadedStack, *, strict: bool = False) -> Gate:
    """The stack's compatibility findings under the policy (no side effects)."""
    return Gate(loaded, tuple(check(loaded)), strict)


def admit(loaded: LoadedStack, *, action: str, strict: bool = False,
          show: Callable[[str], None] | None = None) -> Gate:
    """Check the stack before `action`; show errors and warnings; CompatibilityError if any blocks it."""
    g = gate(loaded, strict=strict)
    for f in g.shown if show else ():
        show(f.render())
    if g.blocking:
        n = len(g.blocking)
        what = "errors or warnings (--strict)" if strict else "error" + ("s" if n != 1 else "")
        raise CompatibilityError(f"{loaded.file}: {n} compatibility {what}; nothing was {action}",
                                 hint="`repro validate` explains each one")
    return g
