"""Live progress on a terminal for long commands (rich)."""

from __future__ import annotations


class LiveProgress:
    """A live bar on a terminal: the sweep's position, the running point, time elapsed; results above it."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.task = None

    def __enter__(self) -> LiveProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.stop()

    def message(self, text: str) -> None:
        self.bar.console.print(text, markup=False, highlight=False)

    def running(self, n: int, total: int, label: str, where: str) -> None:
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, description=f"{label} on {where}", completed=n - 1)

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        self.message(f"{label}: {summary}")
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, completed=n)


