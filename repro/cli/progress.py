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

import sys

from repro.pipeline.progress import Eta, clock_text, is_training_step, point_step
from repro.progress import Progress

__all__ = ["Eta", "LiveProgress", "QuietProgress", "clock_text", "is_training_step", "point_step"]


class QuietProgress(Progress):
    """-q: only what went wrong (failed points, warnings, clean-up left to do); results print at the end."""

    def status(self, text: str) -> None:
        pass

    def message(self, text: str) -> None:
        if "warning" in text or "could not" in text or "removed" in text:
            print(text, file=sys.stderr, flush=True)

    def running(self, n: int, total: int, label: str, where: str) -> None:
        pass

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        if summary.startswith(("FAILED", "interrupted")):
            print(f"{label}: {summary}", file=sys.stderr, flush=True)


class LiveProgress(Progress):
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
