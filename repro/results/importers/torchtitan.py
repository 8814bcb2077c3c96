"""torchtitan's step lines as transformer-training runs (pure).

What the trainer prints every ``metrics.log_freq`` steps (torchtitan/components/metrics.py; older versions without
``grad_norm``, with colour codes around each field, often behind ``[rank0]:[titan] ... - root - INFO - ``)::

    step: 10  loss: 10.7069  grad_norm:  2.9062  memory: 30.99GiB(32.62%)  tps: 7,034  tflops: 407.35  mfu: 41.19%

``tps`` is tokens per second *per device*, ``tflops`` model TFLOP/s per device and ``mfu`` the model FLOPs
utilisation against the device's peak, as torchtitan computes them (stated); the job's tokens/sec is ``tps`` x the
workers (derived). The workers come from the launch (``NGPU=8 ./run_train.sh``, ``torchrun --nproc_per_node``) or
``--set``. A new run starts at a launch command or where the step count goes back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split, training
from repro.results.importers.command import find_commands
from repro.results.importers.lines import Line
from repro.results.importers.runs import ParsedRun
from repro.results.importers.training import PER_GPU_TOKENS, Step, training_run

TORCHTITAN = "torchtitan"
EXAMPLE = "torchtitan step lines ('step: 10  loss: 10.7069  memory: 30.99GiB(32.62%)  tps: 7,034  tflops: ...')"
SCRIPTS = ("run_train.sh", "run_llama_train.sh", "torchtitan.train", "train.py")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STEP = re.compile(r"\bstep:\s*(\d+)\s+loss:\s*([-\d.]+)(?:\s+grad_norm:\s*[-\d.]+)?\s+"
                   r"memory:\s*([\d.]+)GiB\(([\d.]+)%\)\s+(?:tps|wps):\s*([\d,]+)"
                   r"(?:\s+tflops:\s*([\d,.]+)\s+mfu:\s*([\d.]+)%)?")


def _match(line: Line) -> re.Match[str] | None:
    return _STEP.search(_ANSI.sub("", line.text))


def _step(line: Line) -> Step | None:
    """A step line's figures: loss, memory, tokens/sec per GPU, and TFLOP/s per GPU and MFU where it states them."""
    if (m := _match(line)) is None:
        return None
    figures = {"loss": float(m.group(2)), "memory_gib": float(m.group(3)),
               PER_GPU_TOKENS: float(m.group(5).replace(",", ""))}
    if m.group(6):
        figures["tflops_per_gpu"] = float(m.group(6).replace(",", ""))
        figures["mfu"] = float(m.group(7)) / 100.0  # printed as a percentage
    return Step(line.number, int(m.group(1)), figures)


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """A run's index for each step line: a new run after a launch command or where the step count goes back."""
    return training.run_indexes(lines, _step, {c.line for c in find_commands(lines, SCRIPTS)})


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each torchtitan run (with the command before it) in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One torchtitan run's step lines as a transformer-training run."""
    shown = training.shown_for(TORCHTITAN)
    commands = find_commands(lines, SCRIPTS)
    command = commands[0] if commands else None
    if command is not None:
        ngpu = command.env.get("NGPU") or command.flag("nproc_per_node")
        if ngpu and ngpu.isdigit():
            shown.put("workers", int(ngpu), command.line)
        shown.put("workers", command.processes, command.line)
        for name in ("training.compile", "model.converters", "float8.recipe_name"):
            if (value := command.flag(name)) is not None:  # what the command changes defines the point
                shown.put(f"extra.{name.replace('.', '_')}", value.strip("'\""), command.line)
    steps = training.read_steps(lines, file, shown, _step, "no torchtitan step line", EXAMPLE)
    return training_run(TORCHTITAN, "torchtitan", lines, file, shown, steps, given,
                        command=command.argv if command else (), env=command.env if command else None)


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every torchtitan run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
