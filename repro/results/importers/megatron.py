"""Megatron-LM, Megatron-DeepSpeed and Primus iteration lines as transformer-training runs (pure).

What the training loop prints every ``--log-interval`` iterations (megatron/training/training.py, training_log)::

     [2025-04-13 23:41:20] iteration       20/    1000 | consumed samples:          320 | elapsed time per
     iteration (ms): 820.7 | throughput per GPU (TFLOP/s/GPU): 68.2 | learning rate: 4.000000E-05 | global batch
     size:    16 | lm loss: 1.072453E+01 | ...

Read: ``elapsed time per iteration (ms)`` (the interval's mean), ``throughput per GPU (TFLOP/s/GPU)`` (printed with
``--log-throughput``), ``global batch size``, ``lm loss``, and the tokens/sec per GPU Primus and newer versions
print (``Tokens per second per GPU (Tok/s/GPU)``, ``tokens per GPU (tokens/s/GPU)``); Megatron-DeepSpeed's
``samples per second`` and ``TFLOPs`` (per GPU). The workers come from the argument dump (``using world size: N``,
``world_size ........ N``) or ``--set``. Samples/sec is derived from the global batch and the time per iteration
(both stated); tokens/sec only where the log states it (per GPU: x workers).
A new run starts where the iteration count goes back (a second run in one file).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split, training
from repro.results.importers.lines import Line
from repro.results.importers.runs import ParsedRun
from repro.results.importers.training import PER_GPU_TOKENS, Step, training_run

MEGATRON = "megatron"
EXAMPLE = "Megatron-LM iteration lines ('iteration  20/ 1000 | ... | elapsed time per iteration (ms): 820.7 | ...')"
_ITERATION = re.compile(r"\biteration\s+(\d+)/\s*(\d+|infinity)\s*\|(.*)$")
_FIELD = re.compile(r"\s*([^|:]+?)\s*:\s*([^|]*?)\s*(?:\||$)")
_WORLD = (re.compile(r"using world size:\s*(\d+)"), re.compile(r"^\s*world_size\s*\.+\s*(\d+)\s*$"))
# the line's field -> (the figure's name, scale to the record's unit)
_FIGURES = {
    "elapsed time per iteration (ms)": ("step_time_s", 1e-3),
    "throughput per GPU (TFLOP/s/GPU)": ("tflops_per_gpu", 1.0),
    "TFLOPs": ("tflops_per_gpu", 1.0),  # Megatron-DeepSpeed: per GPU
    "Tokens per second per GPU (Tok/s/GPU)": (PER_GPU_TOKENS, 1.0),  # Primus
    "tokens per GPU (tokens/s/GPU)": (PER_GPU_TOKENS, 1.0),
    "samples per second": ("samples_per_sec", 1.0),  # Megatron-DeepSpeed: the job's
    "lm loss": ("loss", 1.0),
}


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").split()[0])
    except (ValueError, IndexError):
        return None


def _iteration(line: Line) -> tuple[int, dict[str, str]] | None:
    m = _ITERATION.search(line.bare)
    if m is None or "elapsed time per iteration" not in m.group(3):
        return None
    return int(m.group(1)), {k.strip(): v for k, v in _FIELD.findall(m.group(3)) if k.strip()}


def _step(line: Line) -> Step | None:
    """An iteration line's figures, and the global batch it shows."""
    found = _iteration(line)
    if found is None:
        return None
    number, fields = found
    figures = {}
    for key, (name, scale) in _FIGURES.items():
        if key in fields and (value := _number(fields[key])) is not None:
            figures[name] = value * scale
    batch = _number(fields.get("global batch size", ""))
    return Step(line.number, number, figures, {} if batch is None else {"global_batch": int(batch)})


def _world(line: Line) -> dict[str, Any]:
    """The workers the argument dump shows (`using world size: N`, `world_size ........ N`)."""
    m = next((m for rx in _WORLD if (m := rx.search(line.bare))), None)
    return {"workers": int(m.group(1))} if m else {}


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """A run's index for each iteration line; a new run where the iteration count goes back."""
    return training.run_indexes(lines, _step)


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each Megatron run in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One Megatron run's iteration lines as a transformer-training run."""
    shown = training.shown_for(MEGATRON)
    steps = training.read_steps(lines, file, shown, _step, "no Megatron iteration line with a time per iteration",
                                "'iteration  20/ 1000 | ... | elapsed time per iteration (ms): 820.7 | ...'", _world)
    return training_run(MEGATRON, "megatron", lines, file, shown, steps, given)


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every Megatron run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
