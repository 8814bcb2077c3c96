"""MLPerf training results (``:::MLLOG {...}`` lines, mlperf-logging) as time-to-accuracy ParsedRuns (pure).

Each line after ``:::MLLOG`` is a JSON event: ``{"time_ms": ..., "key": "run_start", "value": ...,
"metadata": {...}}``. A run is ``run_start`` .. ``run_stop``; its time to accuracy is the difference of
their ``time_ms`` and whether it reached the target is ``run_stop``'s ``metadata.status`` (``success``
or ``aborted``). ``eval_accuracy`` events give the accuracy per evaluation (``metadata.epoch_num``),
``global_batch_size`` the batch, ``submission_benchmark`` / ``submission_platform`` what ran where.
Every rank may print the events: the first of each key counts. The target is recorded only when the
log states it (``eval_target`` in later versions of the rules).

The logs do not say how many accelerators ran: ``workers`` stays unknown unless given
(``repro import --set FILE:workers=8``). Records get workload ``tta``, so compare treats them as time
to accuracy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of

MLLOG = "mlperf"
TTA = "tta"
_EVENT = re.compile(r":::MLLOG\s+(\{.*\})\s*$")
_STARTS = frozenset({"submission_benchmark", "cache_clear", "init_start"})
# the model each benchmark trains, as tf_cnn_benchmarks and repro name it
_MODELS = {"resnet": "resnet50_v1.5", "bert": "bert-large", "ssd": "ssd-resnet34", "maskrcnn": "mask-rcnn",
           "transformer": "transformer", "gnmt": "gnmt", "minigo": "minigo", "dlrm": "dlrm", "unet3d": "unet3d",
           "rnnt": "rnn-t"}


def event(line: Line) -> dict[str, Any] | None:
    """The JSON event of an MLLOG line, None for any other (or an unreadable one)."""
    m = _EVENT.search(line.text)
    if not m:
        return None
    try:
        data = json.loads(m.group(1))
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("key"), str) else None


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """A new run starts at a submission or init event after a run_stop."""
    index, stopped = 0, False
    out: list[int | None] = []
    for line in lines:
        e = event(line)
        if e is None:
            out.append(None)
            continue
        if e["key"] in _STARTS and stopped:
            index, stopped = index + 1, False
        stopped = stopped or e["key"] == "run_stop"
        out.append(index)
    return out


def _first(events: Sequence[tuple[dict[str, Any], int]], key: str) -> tuple[dict[str, Any], int] | None:
    return next(((e, n) for e, n in events if e["key"] == key), None)


def _epoch(e: dict[str, Any] | None) -> Any:
    meta = e.get("metadata") if e else None
    return meta.get("epoch_num") if isinstance(meta, dict) else None


def read_run(lines: Sequence[Line], file: str) -> ParsedRun:
    """One MLPerf run; InputError when it has no run_start or no run_stop."""
    events = [(e, line.number) for line in lines if (e := event(line)) is not None]
    start, stop = _first(events, "run_start"), _first(events, "run_stop")
    if start is None or stop is None:
        missing = "run_start" if start is None else "run_stop"
        raise error(file, lines[-1].number, f"the MLPerf run has no {missing} event (log cut?)",
                    f':::MLLOG {{"key": "{missing}", "time_ms": ...}}')
    shown = Shown()
    shown.put("workload", TTA, None)
    if bench := _first(events, "submission_benchmark"):
        name = str(bench[0].get("value"))
        shown.put("extra.benchmark", name, bench[1])
        shown.put("model", _MODELS.get(name, name), bench[1])
    if platform := _first(events, "submission_platform"):
        shown.put("extra.system", str(platform[0].get("value")), platform[1])
    if batch := _first(events, "global_batch_size"):
        shown.put("global_batch", batch[0].get("value") if isinstance(batch[0].get("value"), int) else None, batch[1])
    accuracies = [(e, n) for e, n in events if e["key"] == "eval_accuracy" and isinstance(e.get("value"), (int, float))]
    meta = stop[0].get("metadata")
    status = str(meta.get("status", "")).lower() if isinstance(meta, dict) else ""
    times = [e.get("time_ms") for e, _ in (start, stop)]
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in times):
        raise error(file, stop[1], "run_start or run_stop has no time_ms", '"time_ms": 1593154759901')
    seconds = (float(times[1]) - float(times[0])) / 1000.0
    target = _first(events, "eval_target")
    last = accuracies[-1][0] if accuracies else None
    metrics = {
        "format": MLLOG, "reached": status == "success", "status": status or None,
        "time_to_accuracy_s": round(seconds, 3) if status == "success" else None, "run_s": round(seconds, 3),
        "target": target[0].get("value") if target else None,
        "final_top1": float(last["value"]) if last else None,
        "epochs": _epoch(last),
        "evaluations": len(accuracies),
    }
    warnings = [] if status else ["run_stop has no status: whether the target was reached is unknown"]
    return ParsedRun(format=MLLOG, file=file, first_line=lines[0].number, last_line=lines[-1].number,
                     settings=shown.values, where=shown.where, metrics=metrics, warnings=tuple(warnings),
                     tail=tail_of([line.text for line in lines]))


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every MLPerf run in a log's lines (`given` is not needed: MLPerf runs have no step samples)."""
    return [read_run(group, file) for group in split.groups(lines, run_indexes(lines))]
