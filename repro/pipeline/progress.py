"""`repro bench`'s progress as plain lines (logs, CI; the CLI shows a live bar on terminals instead): the
repro.progress.Progress protocol, implemented once for lines."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from repro.progress import Lines, Progress
from repro.workloads._common import step_of

STEP_LINE_EVERY_S = 10.0  # a training step's progress line in a log: one per this many seconds (and the last)


class LineProgress(Progress):
    """Progress as plain lines on stderr (logs, CI); the CLI shows a live bar on terminals instead."""

    def __init__(self, write: Callable[[str], None] | None = None, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.write = write or (lambda line: print(line, file=sys.stderr, flush=True))
        self.clock = clock
        self.step_shown = -STEP_LINE_EVERY_S

    def status(self, text: str) -> None:
        """What is happening before the points run (checking hosts, probing their software)."""
        self.write(text)

    def message(self, text: str) -> None:
        step = step_of(text)
        if step is not None and step[2] and step[0] < step[1]:  # training steps: a line every few seconds
            if self.clock() - self.step_shown < STEP_LINE_EVERY_S:
                return
            self.step_shown = self.clock()
        self.write(text)

    def running(self, n: int, total: int, label: str, where: str) -> None:
        self.write(f"{label}: running on {where}")

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        self.write(f"{label}: {summary}")


def as_progress(progress: Progress | Lines | None) -> Progress:
    """A sweep's Progress: the one given, plain lines on stderr for None, or lines through a plain callable."""
    if progress is None:
        return LineProgress()
    if isinstance(progress, Progress):
        return progress
    return LineProgress(progress)


# -- how far a sweep is: the running point's step lines and an ETA (the CLI's live bar shows them) --------------

def point_step(text: str) -> tuple[int, int] | None:
    """(k, N) from a workload's progress line, '    [k/N] ...' (indented under the point), else None."""
    found = step_of(text) if text[:1].isspace() else None  # the sweep's own '[n/total]' lines are not indented
    return found[:2] if found else None


def is_training_step(text: str) -> bool:
    """A training step's line ('    [k/N] step ...'): the point's bar shows it; it is not printed above the bars."""
    found = step_of(text) if text[:1].isspace() else None
    return bool(found and found[2])


@dataclass
class Eta:
    """Time left in a sweep, from what this sweep measured (pure; `clock` is injectable for tests).

    The running point: its remaining steps at its own time per step (from its step lines), else the mean point
    time less its elapsed time. Each point after it: the mean time of the points this sweep ran, else, before
    any finished, the running point's start-up plus its steps at its time per step. None until something was
    measured.
    """

    clock: Callable[[], float] = time.monotonic
    durations: list[float] = field(default_factory=list)  # points run (not skipped) in this sweep, seconds
    n: int = 0  # the running (or last) point, 1-based
    total: int = 0
    started: float | None = None  # when the running point started
    first: tuple[int, float] | None = None  # (k, when) of its first step line
    last: tuple[int, float] | None = None  # (k, when) of its latest step line
    steps: int = 0  # N of its step lines

    def point_started(self, n: int, total: int) -> None:
        self.n, self.total = n, total
        self.started, self.first, self.last, self.steps = self.clock(), None, None, 0

    def step(self, k: int, steps: int) -> None:
        now = self.clock()
        if self.first is None:
            self.first = (k, now)
        self.last, self.steps = (k, now), steps

    def point_finished(self, n: int, total: int, *, skipped: bool = False) -> None:
        self.n, self.total = n, total
        if not skipped and self.started is not None:
            self.durations.append(self.clock() - self.started)
        self.started, self.first, self.last, self.steps = None, None, None, 0

    def per_step(self) -> float | None:
        if self.first and self.last and self.last[0] > self.first[0]:
            return (self.last[1] - self.first[1]) / (self.last[0] - self.first[0])
        return None

    def per_point(self) -> float | None:
        if self.durations:
            return sum(self.durations) / len(self.durations)
        step = self.per_step()
        if step is None or self.started is None or self.first is None:
            return None
        startup = self.first[1] - self.started - step * self.first[0]  # before the first step line
        return max(0.0, startup) + step * self.steps

    def point_left(self) -> float | None:
        """Seconds left in the running point (None: not measurable yet)."""
        if self.started is None:
            return 0.0
        now = self.clock()
        step = self.per_step()
        if step is not None and self.last is not None:
            return max(0.0, (self.steps - self.last[0]) * step - (now - self.last[1]))
        mean = self.per_point() if self.durations else None
        return None if mean is None else max(0.0, mean - (now - self.started))

    def left(self) -> float | None:
        """Seconds left in the sweep (None: not measurable yet)."""
        current = self.point_left()
        after = self.total - self.n
        if after <= 0:
            return current
        per = self.per_point()
        if current is None or per is None:
            return None
        return current + after * per


def clock_text(seconds: float | None) -> str:
    """'0:01:05'; '-:--:--' when unknown."""
    if seconds is None:
        return "-:--:--"
    s = round(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
