"""What a log says about one run, before it becomes a RunRecord (pure values shared by every format).

A ParsedRun holds the settings the log *shows* (absent: unknown, never a default), each with the line
that shows it, the per-rank step samples, the program's own summary figure, the software versions and
device names seen, and the command line. Settings use RunRecord's names (``model``, ``batch_per_worker``,
``workers``...) and ``extra.NAME`` for format-specific ones that define a point:

    extra.mode             training | inference | evaluation (tf_cnn_benchmarks' Mode / --forward_only)
    extra.variable_update  horovod | replicated | parameter_server | independent | ...
    extra.all_reduce       the replicated all-reduce (AllReduce: nccl, --all_reduce_spec)
    extra.parameter_device --local_parameter_device (where parameter-server variables live)
    extra.horovod_device   Horovod on: cpu | gpu
    extra.data_name        the data set's shape for synthetic data (imagenet, cifar10)
    extra.framework        tensorflow | pytorch (Horovod's synthetic benchmarks)
    extra.fp16_allreduce   Horovod's --fp16-allreduce gradient compression
    extra.benchmark        an MLPerf benchmark's name
    extra.system           the system an MLPerf result names
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from repro.results.fabric import Fabric
from repro.results.record import RankResult

TAIL_LINES = 30


@dataclass(frozen=True)
class ParsedRun:
    """One run found in a log."""

    format: str
    file: str
    first_line: int
    last_line: int
    settings: Mapping[str, Any]  # what the log shows; a name absent is unknown
    where: Mapping[str, int] = field(default_factory=dict)  # setting -> the line showing it
    ranks: tuple[RankResult, ...] = ()
    figure: float | None = None  # the program's own summary (images/sec)
    figure_line: int | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    software: Mapping[str, str] = field(default_factory=dict)  # versions seen (tensorflow, nccl, cuda...)
    devices: tuple[str, ...] = ()  # accelerator names seen, in order
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    failure: str | None = None  # the run failed (its error), rather than measured
    warnings: tuple[str, ...] = ()
    tail: str = ""
    fabric: Fabric | None = None  # what NCCL's INFO/WARN lines among the run's lines say (repro.results.nccl)

    @property
    def lines(self) -> str:
        """The run's lines in the file, 'first-last'."""
        return f"{self.first_line}-{self.last_line}"


class Shown:
    """Settings a log shows, each with the line showing it; the first statement of a setting wins."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.where: dict[str, int] = {}

    def put(self, name: str, value: Any, line: int | None) -> None:
        """Record `name` unless it is already known or `value` is None."""
        if value is None or name in self.values:
            return
        self.values[name] = value
        if line is not None:
            self.where[name] = line

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self.values


def tail_of(text_lines: list[str]) -> str:
    """The last lines of a run, kept with the record for a human to read."""
    return "\n".join(text_lines[-TAIL_LINES:])
