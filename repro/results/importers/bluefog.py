"""Bluefog's synthetic benchmark (Bluefog-Lib/bluefog, examples/pytorch_benchmark.py) as ParsedRuns (pure).

Bluefog's benchmark is Horovod's PyTorch synthetic benchmark with Bluefog's distributed optimizers, launched by
``bfrun`` (Bluefog's mpirun wrapper), and prints the same lines (``Model:``, ``Batch size:``, ``Number of GPUs:``,
``Iter #N: ... img/sec per GPU``, ``Total img/sec on N GPU(s): ... +- ...``), so the lines are read by the Horovod
reader's parser (repro.results.importers.horovod); what makes a run Bluefog's is its command (``bfrun``, or the
script ``pytorch_benchmark.py``). Read besides: the all-reduce method, ``--dist-optimizer`` (win_put,
neighbor_allreduce, hierarchical_neighbor_allreduce, allreduce, gradient_allreduce, horovod; the program's
default neighbor_allreduce where the command line leaves it out), ``--disable-dynamic-topology`` and
``--atc-style`` (settings of their own, as every flag is), and the batch size (``--batch-size`` or the
``Batch size:`` line). The figure is the ``Total img/sec`` line, as for Horovod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import horovod
from repro.results.importers.lines import Line
from repro.results.importers.runs import ParsedRun

BLUEFOG = "bluefog_synthetic"
EXAMPLE = ("Bluefog's benchmark under bfrun ('bfrun -np 16 ... python examples/pytorch_benchmark.py "
           "--dist-optimizer=neighbor_allreduce', then 'Total img/sec on 16 GPU(s): 4310.6 +- 146.9')")
DEFAULT_OPTIMIZER = "neighbor_allreduce"  # examples/pytorch_benchmark.py's --dist-optimizer default


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each Bluefog benchmark run in a log's lines."""
    return [group for group in horovod.all_groups(lines) if horovod.made_by(group) == "bluefog"]


def span(group: Sequence[Line]) -> tuple[int, int]:
    """The first and last line of a run's lines."""
    return group[0].number, group[-1].number


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One Bluefog run: the Horovod format's figures, with Bluefog's workload, program and all-reduce method."""
    run = horovod.read_run(lines, file, given)
    settings = {**run.settings, "workload": BLUEFOG, "extra.program": "bluefog"}
    settings.pop("backend", None)  # Bluefog's own communication, not a Horovod controller
    settings.pop("extra.fp16_allreduce", None)  # a flag of Horovod's benchmark that Bluefog's does not have
    where = dict(run.where)
    metrics = {**run.metrics, "format": BLUEFOG, "program": "bluefog"}
    if run.command and "extra.dist_optimizer" not in settings:
        # the command is shown and leaves the flag out: the program's default ran (said, as for the batch)
        settings["extra.dist_optimizer"] = DEFAULT_OPTIMIZER
        metrics["dist_optimizer_from"] = "the program's default (no --dist-optimizer on its command line)"
    metrics["dist_optimizer"] = settings.get("extra.dist_optimizer")
    return dataclasses.replace(run, format=BLUEFOG, settings=settings, where=where, metrics=metrics)


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every Bluefog benchmark run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
