"""The one place where a stage's exception becomes a failed outcome (ReFrame's `_safe_call`).

A point of a sweep, a host of a shipment or a playbook run can fail for many reasons; whichever stage
raised, the pipeline records the failure with a one-line reason and goes on (or stops, for Ctrl-C),
instead of each stage catching errors its own way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from repro.errors import ReproError

T = TypeVar("T")


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """A stage's value, or why there is none."""

    value: T | None
    failure: str | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def safe_call(stage: str, fn: Callable[[], T]) -> Outcome[T]:
    """Run `fn`; a repro error or an unexpected exception becomes a failed Outcome naming the stage.

    KeyboardInterrupt (Ctrl-C, SIGTERM, SIGHUP) is never swallowed: the caller records what it was doing
    and stops.
    """
    try:
        return Outcome(fn())
    except ReproError as exc:
        return Outcome(None, f"{stage}: {exc.message}")
    except (OSError, RuntimeError, ValueError, TypeError, KeyError, IndexError) as exc:
        return Outcome(None, f"{stage}: {type(exc).__name__}: {exc}")
