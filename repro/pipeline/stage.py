"""How a stage's exception becomes a failed outcome (ReFrame's `_safe_call`); `repro bench` uses it for
planning a point.

Planning a point can fail for many reasons; whatever raised, the pipeline records the point as failed with
a one-line reason and goes on (or stops, for Ctrl-C). Other stages (shipping an image, running playbooks)
still catch their errors their own way.
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
