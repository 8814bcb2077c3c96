"""DeepSpeed's throughput-timer lines as transformer-training runs (pure).

What the engine's ThroughputTimer logs every ``steps_per_print`` steps (deepspeed/utils/timer.py; older versions
print ``0/20`` instead of ``epoch=0/micro_step=20/global_step=20``)::

    [2023-08-02 00:41:17,936] [INFO] [timer.py:215:stop] epoch=0/micro_step=10/global_step=10,
    RunningAvgSamplesPerSec=220.69530887096045, CurrSamplesPerSec=222.88787331278564, MemAllocated=0.07GB, ...

The timer's batch is the engine's ``train_batch_size`` (the global batch), so both figures are the job's samples
per second; ``RunningAvgSamplesPerSec`` averages every step since the timer's start step (its warm-up left out). The
run's figure is the last line's running average (stated). Workers come from ``--set`` (or a launcher's command).
A new run starts where the step count goes back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split, training
from repro.results.importers.lines import Line
from repro.results.importers.runs import ParsedRun
from repro.results.importers.training import Step, training_run

DEEPSPEED = "deepspeed"
EXAMPLE = "DeepSpeed's throughput timer ('global_step=10, RunningAvgSamplesPerSec=220.69, CurrSamplesPerSec=...')"
_TIMER = re.compile(r"(?:global_step=|\b\d+/)(\d+),\s*RunningAvgSamplesPerSec=([\d.eE+-]+),\s*"
                    r"CurrSamplesPerSec=([\d.eE+-]+)(?:,\s*MemAllocated=([\d.]+)GB,\s*MaxMemAllocated=([\d.]+)GB)?")


def _step(line: Line) -> Step | None:
    """A timer line's figures: the running average and the current samples/sec, the peak memory where shown."""
    if (m := _TIMER.search(line.text)) is None:
        return None
    figures = {"samples_per_sec": round(float(m.group(2)), 4), "curr_samples_per_sec": round(float(m.group(3)), 4)}
    if m.group(5):
        figures["max_memory_gb"] = float(m.group(5))
    return Step(line.number, int(m.group(1)), figures)


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """A run's index for each timer line; a new run where the step count goes back."""
    return training.run_indexes(lines, _step)


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each DeepSpeed run in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One DeepSpeed run's timer lines as a transformer-training run (figure: the last running average)."""
    shown = training.shown_for(DEEPSPEED)
    steps = training.read_steps(lines, file, shown, _step, "no DeepSpeed throughput-timer line", EXAMPLE)
    return training_run(DEEPSPEED, "deepspeed", lines, file, shown, steps[-1:], given)


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every DeepSpeed run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
