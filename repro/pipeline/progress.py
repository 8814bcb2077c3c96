"""`repro bench`'s progress as plain lines (logs, CI; the CLI shows a live bar on terminals instead): the
repro.progress.Progress protocol, implemented once for lines."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

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
