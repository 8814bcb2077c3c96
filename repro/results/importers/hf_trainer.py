"""The Hugging Face Trainer's end-of-training metrics as transformer-training runs (pure).

What ``Trainer.train()`` logs at the end (a Python dict, values numbers or, in recent versions, strings)::

    {'train_runtime': 101.9003, 'train_samples_per_second': 1.963, 'train_steps_per_second': 0.8, 'epoch': 0.69}

``train_samples_per_second`` is the job's samples per second over the whole training (stated; the run's figure),
``train_steps_per_second`` its optimizer steps per second. The command line before it, where the log shows one,
gives the batch per device (``--per_device_train_batch_size``), the model (``--model_name_or_path``) and the
workers (``torchrun --nproc_per_node N [--nnodes M]``); a single-process run's devices come from ``--set``.
Each summary line ends a run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split, training
from repro.results.importers.command import find_commands
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun
from repro.results.importers.training import Step, training_run

HF_TRAINER = "hf_trainer"
EXAMPLE = "the Hugging Face Trainer's summary (\"{'train_runtime': 101.9, 'train_samples_per_second': 1.963, ...}\")"
_SUMMARY = re.compile(r"\{[^{}]*'train_samples_per_second'\s*:[^{}]*\}")
_FIGURES = {"train_samples_per_second": "samples_per_sec", "train_steps_per_second": "steps_per_sec",
            "train_runtime": "runtime_s", "train_loss": "loss"}


def _summary(line: Line) -> dict[str, Any] | None:
    m = _SUMMARY.search(line.text)
    if m is None:
        return None
    try:
        value = ast.literal_eval(m.group(0))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """Each summary line is a run; the lines before it (its command) go with it."""
    out: list[int | None] = []
    index = -1
    for line in lines:
        if _summary(line) is not None:
            index += 1
            out.append(index)
        else:
            out.append(None)
    return out


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each Trainer run in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def _number(value: Any) -> float | None:
    try:
        return float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One Trainer run (its summary line, with the command before it) as a transformer-training run."""
    summary = next(((line, s) for line in reversed(lines) if (s := _summary(line)) is not None), None)
    if summary is None:
        raise error(file, lines[0].number, "no Trainer summary line", EXAMPLE)
    shown = training.shown_for(HF_TRAINER)
    commands = [c for c in find_commands(lines, (".py",)) if c.line < summary[0].number]
    command = commands[-1] if commands else None
    if command is not None:
        batch = command.flag("per_device_train_batch_size")
        if batch and batch.isdigit():
            shown.put("batch_per_worker", int(batch), command.line)
        shown.put("model", command.flag("model_name_or_path"), command.line)
        shown.put("workers", command.processes, command.line)
        shown.put("hosts", command.hosts, command.line)
        shown.put("extra.script", command.script if command.script != ".py" else command.argv[
            next(i for i, a in enumerate(command.argv) if a.endswith(".py"))].rsplit("/", 1)[-1], command.line)
    figures = {name: v for key, name in _FIGURES.items() if (v := _number(summary[1].get(key))) is not None}
    steps = [Step(summary[0].number, None, figures)]
    return training_run(HF_TRAINER, "hf_trainer", lines, file, shown, steps, given,
                        command=command.argv if command else (), env=command.env if command else None)


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every Trainer run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
