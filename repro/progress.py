"""What a long command tells while it works: one protocol, declared once (it was declared five times and duck-typed).

A stage that only has lines to say takes `Lines`, a callable given each line (`print`, a list's `append`, a
logger). A sweep says more: where it is before the points run (`status`), what a running point prints
(`message`), and each point's start and end (`running`, `finished`). That is `Progress`; the CLI gives a live
bar on terminals, plain lines otherwise (repro.pipeline.progress.LineProgress), or only what went wrong (-q).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

Lines = Callable[[str], None]


def silent(_line: str) -> None:
    """A `Lines` that says nothing (the default of a stage nobody watches)."""


@runtime_checkable
class Progress(Protocol):
    """A sweep's progress: every member is called; a plain `Lines` is wrapped into one (LineProgress)."""

    def status(self, text: str) -> None:
        """What is happening before the points run (checking hosts, probing their software)."""

    def message(self, text: str) -> None:
        """A line a running point printed, or a warning about it."""

    def running(self, n: int, total: int, label: str, where: str) -> None:
        """Point n of total starts on `where`."""

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        """Point n of total ended (`summary`: its figure, or FAILED and why)."""
