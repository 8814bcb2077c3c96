"""Live progress on a terminal for long commands (rich): what is happening from the first second, the sweep's bar,
the running point's bar, and an ETA computed from the step times measured in this sweep.

A workload's progress line (REPRO_PROGRESS, passed on by the runtimes, printed indented under its point) that
starts with `[k/N]` says how far the running point is: the all-reduce sweep prints one per message size (as
nccl-tests prints its rows; each is also printed above the bars), a training workload one per step at most twice a
second (`[k/N] step ...`: shown in the point's bar, not printed above it, so a minute of steps is not a minute of
lines). The ETA is Eta's: the running point's remaining steps at its measured time per step, and each point still
to run at the mean time the points of this sweep took (start-up included); points skipped by --resume take no time
and teach it nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from repro.workloads._common import step_of


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


class LiveProgress:
    """A live bar on a terminal: what is being done, the sweep's position, the running point, time elapsed and
    left (measured); results above it."""

    def __init__(self, eta: Eta | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.table import Column
        from rich.text import Text

        self.eta = eta or Eta()
        live = self

        class EtaColumn(ProgressColumn):
            """'ETA 0:01:05' from Eta (the sweep's row: the sweep's; the point's row: the point's)."""

            def render(self, task) -> Text:
                point = task.fields.get("point", False)
                if task.total is None:
                    return Text("")
                left = live.eta.point_left() if point else live.eta.left()
                return Text(f"ETA {clock_text(left)}", style="progress.remaining")

        # the description gives way (ellipsis) so that the counts, the time and the ETA always show
        text = Column(ratio=1, no_wrap=True, overflow="ellipsis", min_width=10)
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}", table_column=text),
                            BarColumn(bar_width=16), MofNCompleteColumn(), TimeElapsedColumn(), EtaColumn(),
                            console=Console(stderr=True), transient=True, expand=True)
        self.task = None  # the sweep's row
        self.point = None  # the running point's row
        self.doing = None  # what happens before the first point (a row without a bar)

    def __enter__(self) -> LiveProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.stop()

    def _print(self, text: str) -> None:
        self.bar.console.print(text, markup=False, highlight=False)

    def status(self, text: str) -> None:
        """What is happening now, before the points run (checking hosts, probing their software): printed, and
        shown beside a spinner until the first point starts."""
        self._print(text)
        if self.task is None:
            if self.doing is None:
                self.doing = self.bar.add_task(text, total=None)
            self.bar.update(self.doing, description=text)

    def message(self, text: str) -> None:
        """A line above the bars; a workload's '[k/N] ...' line also moves the running point's bar (a training
        step's line only moves it)."""
        step = point_step(text)
        if step is None or not is_training_step(text):
            self._print(text)
        if step is not None:
            self.eta.step(*step)
            if self.point is None:
                self.point = self.bar.add_task("  this point", total=step[1], point=True)
            detail = text.strip().split("] ", 1)[-1] if is_training_step(text) else "this point"
            self.bar.update(self.point, completed=step[0], total=step[1], description=f"  {detail}")

    def _end_point(self) -> None:
        if self.point is not None:
            self.bar.remove_task(self.point)
            self.point = None
        if self.doing is not None:
            self.bar.remove_task(self.doing)
            self.doing = None

    def running(self, n: int, total: int, label: str, where: str) -> None:
        self._end_point()
        self.eta.point_started(n, total)
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, description=f"{label} on {where}", completed=n - 1)

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        self._end_point()
        self.eta.point_finished(n, total, skipped=summary.startswith("done earlier"))
        self._print(f"{label}: {summary}")
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, completed=n)
