"""Live progress on a terminal for long commands (rich): the sweep's bar with an ETA, and the running point's.

A workload's progress line (REPRO_PROGRESS, passed on by the runtimes, printed indented under its point) that
starts with `[k/N]` says how far the running point is (the all-reduce sweep prints one per message size, as
nccl-tests prints its rows); the point then gets a bar of its own with time elapsed and an estimate of the time
left. Every line is also printed above the bars.
"""

from __future__ import annotations

import re

STEP = re.compile(r"\s+\[(\d+)/(\d+)\]")  # indented: the workload's lines sit under their point's line


def point_step(text: str) -> tuple[int, int] | None:
    """(k, N) from a workload's progress line, '    [k/N] ...' (indented under the point), else None."""
    m = STEP.match(text)
    if not m:
        return None
    k, n = int(m.group(1)), int(m.group(2))
    return (k, n) if 0 <= k <= n and n > 0 else None


class LiveProgress:
    """A live bar on a terminal: the sweep's position, the running point, time elapsed and left; results above it."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column

        # the description gives way (ellipsis) so that the counts, the time and the ETA always show
        text = Column(ratio=1, no_wrap=True, overflow="ellipsis", min_width=10)
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}", table_column=text),
                            BarColumn(bar_width=16), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"),
                            TimeRemainingColumn(), console=Console(stderr=True), transient=True, expand=True)
        self.task = None
        self.point = None

    def __enter__(self) -> LiveProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.stop()

    def _print(self, text: str) -> None:
        self.bar.console.print(text, markup=False, highlight=False)

    def message(self, text: str) -> None:
        """A line above the bars; a workload's '[k/N] ...' line also moves the running point's bar."""
        self._print(text)
        step = point_step(text)
        if step is not None:
            if self.point is None:
                self.point = self.bar.add_task("  this point", total=step[1])
            self.bar.update(self.point, completed=step[0], total=step[1])

    def _end_point(self) -> None:
        if self.point is not None:
            self.bar.remove_task(self.point)
            self.point = None

    def running(self, n: int, total: int, label: str, where: str) -> None:
        self._end_point()
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, description=f"{label} on {where}", completed=n - 1)

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        self._end_point()
        self._print(f"{label}: {summary}")
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, completed=n)
