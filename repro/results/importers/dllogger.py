"""NVIDIA DLLogger's output (DeepLearningExamples' training programs) as throughput runs (pure).

DLLogger writes each entry through its backends; two forms reach logs (github.com/NVIDIA/dllogger):

* StdOutBackend: ``DLL <timestamp> - <step> <key> : <value> [unit] <key> : <value> ...``. The step is what the
  program's ``step_format`` makes of it: ``(0, 120)`` (a tuple, ResNet-50 TF), ``Iteration: 16`` (dllogger's
  default for an int), ``()`` or nothing for the end-of-run summary (``step=()``), a word (``PARAMETER``) for
  the program's settings. Launchers may put ``[0] `` or ``1: `` before it.
* JSONStreamBackend: ``DLLL {"timestamp": ..., "elapsedtime": ..., "type": "LOG", "step": [...], "data": {...}}``,
  one line per entry; ``"type": "METADATA"`` entries give a metric's unit (``{"metric": ..., "metadata":
  {"unit": ...}}``).

The throughput keys, per the programs that print them (all the job's figure: the hooks divide the *global* batch
by the step time, DeepLearningExamples' TensorFlow ConvNets ``TrainingLoggingHook(global_batch_size, ...)``):

    total_ips, train.total_ips            images/sec (ConvNets, TensorFlow and PyTorch)
    throughput_train                       sequences/sec where the unit printed says so (BERT TF: ``seq/s``,
                                           TF2: ``sequences/s``); images/sec for nnU-Net's benchmark callback
                                           (its lines carry ``latency_train_90`` and print no unit)
    training_sequences_per_second          sequences/sec (BERT PyTorch)
    train_throughput                       images/sec unless the unit printed says sequences

Images give a throughput record (workload ``dllogger``); sequences give a transformer-training record of the
``lm`` kind (workload ``dllogger_lm``, samples/sec) as the other transformer readers do. The run's figure is the
summary entry's value (step ``()``) where there is one (stated), else the mean of the per-iteration values after
the first (warm-up), marked derived. The log shows no workers or batch: ``--set`` gives them.

A run ends at its summary entry; a new one starts where the step goes back.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repro.results.importers import split
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of
from repro.results.importers.training import Step, training_run

DLLOGGER = "dllogger"
LM_WORKLOAD = "dllogger_lm"
EXAMPLE = ("NVIDIA DLLogger ('DLL 2021-03-23 11:48:38.824370 - (0, 120) total_ips : 2879.14 images/s' or "
           "'DLLL {\"step\": [0, 120], \"data\": {\"total_ips\": 2879.14}, ...}')")
_STDOUT = re.compile(r"^(?:\[\d+\]\s*|\d+:\s*)?DLL \d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)? -(.*)$")
_JSON = re.compile(r"^(?:\[\d+\]\s*|\d+:\s*)?DLLL (\{.*\})\s*$")
THROUGHPUT_KEYS = ("total_ips", "train.total_ips", "throughput_train", "training_sequences_per_second",
                   "train_throughput")
_SEQUENCES = re.compile(r"^(?:seq|sequences?|sentences?|samples?)(?:/s|/sec|/second)?$", re.I)
_IMAGES = re.compile(r"^(?:img|imgs|images?)(?:/s|/sec|/second)?$", re.I)
_HVD_SIZE = re.compile(r"model_training_utils\.py:\d+\]\s+hvd\.size\(\) = (\d+)$")  # BERT TF2, Horovod runs
_NNUNET = "latency_train_90"  # nnU-Net's LoggingCallback: its throughput counts images and prints no unit


@dataclass(frozen=True)
class Entry:
    """One DLLogger entry: its line, step (None: the summary, step ``()``), data and the units printed."""

    line: int
    step: tuple[int, ...] | None
    data: Mapping[str, float]
    units: Mapping[str, str]

    @property
    def key(self) -> str | None:
        """The throughput key the entry carries, if any."""
        return next((k for k in THROUGHPUT_KEYS if k in self.data), None)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _stdout(line: Line, body: str) -> Entry | None:
    """A StdOutBackend line: the step is what comes before the first `key : value`, units follow values."""
    tokens = body.split()
    data: dict[str, float] = {}
    units: dict[str, str] = {}
    first = None
    i = 0
    while i < len(tokens):
        if i + 2 < len(tokens) and tokens[i + 1] == ":":
            first = i if first is None else first
            key, value = tokens[i], _number(tokens[i + 2])
            i += 3
            unit = []
            while i < len(tokens) and not (i + 1 < len(tokens) and tokens[i + 1] == ":"):
                unit.append(tokens[i])
                i += 1
            if value is not None:
                data[key] = value
                if unit:
                    units[key] = " ".join(unit)
            continue
        i += 1
    if first is None:
        return None
    step_text = " ".join(tokens[:first])
    if step_text in ("", "()"):
        return Entry(line.number, None, data, units)
    numbers = re.findall(r"\d+", step_text)
    if not numbers:  # PARAMETER and other named steps: the program's settings, no measurement
        return Entry(line.number, (), data, units)
    return Entry(line.number, tuple(int(n) for n in numbers), data, units)


def _json(line: Line, body: str, units: dict[str, str]) -> Entry | None:
    """A JSONStreamBackend line; a METADATA entry's unit goes into `units` (for the entries after it)."""
    try:
        entry = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict):
        return None
    if entry.get("type") == "METADATA":
        meta = entry.get("metadata")
        if isinstance(entry.get("metric"), str) and isinstance(meta, dict) and isinstance(meta.get("unit"), str):
            units[entry["metric"]] = meta["unit"]
        return None
    raw = entry.get("data")
    if not isinstance(raw, dict):
        return None
    data = {str(k): n for k, v in raw.items() if (n := _number(v)) is not None}
    step = entry.get("step")
    if step in ([], (), "", None):
        at: tuple[int, ...] | None = None
    elif isinstance(step, int) and not isinstance(step, bool):
        at = (step,)
    elif isinstance(step, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in step):
        at = tuple(step)
    else:  # "PARAMETER" and other named steps
        at = ()
    return Entry(line.number, at, data, {k: u for k, u in units.items() if k in data})


def entries(lines: Sequence[Line]) -> list[Entry]:
    """Every DLLogger entry of a log's lines, in order."""
    out: list[Entry] = []
    units: dict[str, str] = {}
    for line in lines:
        if "DLL" not in line.text:
            continue
        if (m := _JSON.match(line.bare)) is not None:
            found = _json(line, m.group(1), units)
        elif (m := _STDOUT.match(line.bare)) is not None:
            found = _stdout(line, m.group(1))
        else:
            found = None
        if found is not None:
            out.append(found)
    return out


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """A run's index for each line with a throughput entry: a new run after a summary or where the step goes back."""
    at = {e.line: e for e in entries(lines) if e.key is not None and e.step != ()}
    out: list[int | None] = []
    index, last, closed = -1, None, True
    for line in lines:
        entry = at.get(line.number)
        if entry is None:
            out.append(None)
            continue
        if closed or (entry.step is not None and last is not None and entry.step <= last):
            index += 1
        closed = entry.step is None
        last = entry.step
        out.append(index)
    return out


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each DLLogger run in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def items_of(entry: Entry) -> str | None:
    """What an entry's throughput counts: images or sequences, from its unit, else its key; None when unsure."""
    key = entry.key
    unit = entry.units.get(key or "", "")
    if _SEQUENCES.match(unit):
        return "sequences"
    if _IMAGES.match(unit):
        return "images"
    if unit:
        return None
    if key in ("total_ips", "train.total_ips", "train_throughput"):
        return "images"
    if key == "training_sequences_per_second":
        return "sequences"
    return "images" if _NNUNET in entry.data else None


def _workers(lines: Sequence[Line], shown: Shown) -> None:
    """The workers where the program states them: BERT TF2's ``hvd.size() = N`` (Horovod's process count)."""
    for line in lines:
        if (m := _HVD_SIZE.search(line.text)) is not None:
            shown.put("workers", int(m.group(1)), line.number)
            return


def _figure(measured: Sequence[Entry]) -> tuple[float, Entry | None, str, list[Entry]]:
    """The run's figure, the summary entry it is (None: derived), how, and the per-iteration entries."""
    summary = next((e for e in reversed(measured) if e.step is None), None)
    iterations = [e for e in measured if e.step is not None]
    if summary is not None:
        return summary.data[summary.key or ""], summary, f"the summary entry (line {summary.line})", iterations
    window = iterations[1:] if len(iterations) > 1 else iterations
    values = [e.data[e.key or ""] for e in window]
    over = (f"lines {window[0].line}-{window[-1].line}" if len(window) > 1 else f"line {window[0].line}")
    how = (f"mean of the per-iteration values after the first (warm-up), {over}" if len(iterations) > 1
           else f"the one logged iteration ({over}): the log has no summary entry")
    return round(sum(values) / len(values), 4), None, how, iterations


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One DLLogger run's entries as a throughput run (images) or a transformer-training run (sequences)."""
    measured = [e for e in entries(lines) if e.key is not None and e.step != ()]
    if not measured:
        raise error(file, lines[0].number, "no DLLogger entry with a throughput key", EXAMPLE)
    kinds = {items_of(e) for e in measured}
    if None in kinds or len(kinds) > 1:
        bad = next(e for e in measured if items_of(e) is None or items_of(e) != items_of(measured[0]))
        raise error(file, bad.line, f"{bad.key}: what it counts is not clear (its unit: "
                    f"{bad.units.get(bad.key or '') or 'none printed'})",
                    "a unit of images (images/s, img/s) or sequences (seq/s, sequences/s)")
    items = kinds.pop()
    figure, summary, how, iterations = _figure(measured)
    key = (summary or measured[-1]).key or ""
    if items == "sequences":
        return _lm_run(lines, file, given, figure, summary, how, iterations, key)
    shown = Shown()
    shown.put("workload", DLLOGGER, None)
    shown.put("extra.program", DLLOGGER, None)
    _workers(lines, shown)
    for name, value in (given or {}).items():
        shown.put(name, value, None)
    metrics: dict[str, Any] = {
        "format": DLLOGGER, "program": DLLOGGER, "items": "images", "key": key,
        "unit": (summary or measured[-1]).units.get(key, ""),
        "iterations": [{"line": e.line, "step": list(e.step or ()), key: e.data.get(key)} for e in iterations],
        "stated": {key: how} if summary is not None else {
            key: f"each iteration's own value, lines {measured[0].line}-{measured[-1].line}"},
        "derived": {} if summary is not None else {"figure": how},
    }
    return ParsedRun(format=DLLOGGER, file=file, first_line=lines[0].number, last_line=lines[-1].number,
                     settings=shown.values, where=shown.where, figure=figure,
                     figure_line=summary.line if summary is not None else None, metrics=metrics,
                     tail=tail_of([line.text for line in lines]))


def _lm_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None, figure: float,
            summary: Entry | None, how: str, iterations: Sequence[Entry], key: str) -> ParsedRun:
    """A sequences run as the transformer readers' record (samples/sec), the figure stated or derived as read."""
    shown = Shown()
    shown.put("workload", LM_WORKLOAD, None)
    shown.put("extra.program", DLLOGGER, None)
    _workers(lines, shown)
    steps = [Step(summary.line, None, {"samples_per_sec": figure})] if summary is not None else \
        [Step(e.line, e.step[-1] if e.step else None, {"samples_per_sec": e.data[key]}) for e in iterations]
    run = training_run(DLLOGGER, DLLOGGER, lines, file, shown, steps, given)
    metrics = dict(run.metrics)
    metrics["key"] = key
    if summary is None:
        # the per-iteration mean is repro's, not a figure the program printed
        metrics["stated"] = {key: f"each iteration's own value, lines {iterations[0].line}-{iterations[-1].line}"}
        metrics["derived"] = {**metrics.get("derived", {}), "figure": how, "samples_per_sec": how}
    else:
        metrics["stated"] = {key: how, "samples_per_sec": how}
    return dataclasses.replace(run, figure=figure, figure_line=summary.line if summary is not None else None,
                               metrics=metrics)


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every DLLogger run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
