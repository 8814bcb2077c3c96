"""MLPerf training results in the v0.5 and v0.6 line formats as time-to-accuracy ParsedRuns (pure).

Before mlperf-logging's ``:::MLLOG {...}`` lines (v0.7 on, repro.results.importers.mllog), results were printed as

    v0.5  ``:::MLPv0.5.0 gnmt 1544232771.436360359 (estimator.py:502) run_start``
          ``:::MLPv0.5.0 gnmt 1544234357.960623741 (estimator.py:533) eval_accuracy: {"epoch": 1, "value": 22.57}``
          ``:::MLPv0.5.0 gnmt 1544234357.961570501 (estimator.py:536) run_stop: {"success": true}``
    v0.6  ``:::MLL 1558650414.961 run_start: {"value": null, "metadata": {"lineno": 477, "file": "..."}}``

(mlcommons/training_results_v0.5 and _v0.6). Each line is read as the event it is in the later format (time in
seconds -> ``time_ms``; v0.5's ``eval_accuracy`` ``{"epoch", "value"}`` -> the value with ``metadata.epoch_num``;
its ``run_stop`` ``{"success": true|false}`` -> ``metadata.status`` success|aborted; the benchmark named in every
v0.5 line -> ``submission_benchmark``), and the run is then read by the MLLOG reader: time to accuracy from
run_start to run_stop, the target where ``eval_target`` states it, workers from ``global_batch_size`` /
``submission_platform`` rules or ``--set``. v0.5's ``input_batch_size`` is not taken for a global batch (the
rules of the round do not say whose batch it is). Records are those of the MLLOG reader (workload ``tta``),
with ``metrics["mlperf_log"]`` naming the line format.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import mllog
from repro.results.importers.lines import Line
from repro.results.importers.runs import ParsedRun, tail_of

MLPERF_LEGACY = "mlperf_v0.5_v0.6"
EXAMPLE = ("MLPerf v0.5/v0.6 results (':::MLPv0.5.0 gnmt 1544232771.436 (estimator.py:502) run_start', "
           "':::MLL 1558650414.961 run_start: {\"value\": null, ...}')")
_V05 = re.compile(r":::MLPv0\.5\.0\s+(?P<bench>\S+)\s+(?P<t>\d+(?:\.\d+)?)\s+\([^)]*\)\s+(?P<key>\w+)"
                  r"(?::\s*(?P<value>.*?))?\s*$")
_V06 = re.compile(r":::MLL\s+(?P<t>\d+(?:\.\d+)?)\s+(?P<key>\w+):\s*(?P<body>\{.*\})\s*$")


def _json(text: str | None) -> Any:
    if text is None or text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # v0.5 printed some values bare


def _v05(m: re.Match[str]) -> dict[str, Any]:
    key, value, meta = m["key"], _json(m["value"]), {}
    if key == "eval_accuracy" and isinstance(value, dict):
        meta = {"epoch_num": value.get("epoch")}
        value = value.get("value")
    elif key == "run_stop" and isinstance(value, dict) and "success" in value:
        meta = {"status": "success" if value["success"] is True else "aborted"}
        value = None
    elif key == "input_batch_size":
        key = "v05_input_batch_size"  # whose batch it is the round does not say: not the global batch
    return {"key": key, "value": value, "time_ms": float(m["t"]) * 1000.0, "metadata": meta}


def events(line: Line) -> list[dict[str, Any]]:
    """The events (in the MLLOG form) one legacy line stands for; [] for any other line."""
    if m := _V05.search(line.text):
        found = [_v05(m)]
        if m["key"] == "run_start":  # every v0.5 line names its benchmark; said once, where the run starts
            found.insert(0, {"key": "submission_benchmark", "value": m["bench"], "time_ms": found[0]["time_ms"],
                             "metadata": {}})
        return found
    if m := _V06.search(line.text):
        try:
            body = json.loads(m["body"])
        except ValueError:
            return []
        if not isinstance(body, dict):
            return []
        meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        return [{"key": m["key"], "value": body.get("value"), "time_ms": float(m["t"]) * 1000.0, "metadata": meta}]
    return []


def version(lines: Sequence[Line]) -> str | None:
    """The legacy format the lines use: 'v0.5' or 'v0.6' (None: neither)."""
    for line in lines:
        if _V05.search(line.text):
            return "v0.5"
        if _V06.search(line.text):
            return "v0.6"
    return None


def _as_mllog(lines: Sequence[Line]) -> list[Line]:
    """The lines with each legacy line in the MLLOG form (a line standing for two events appears twice); the
    file's own :::MLLOG lines are left out (they are the MLLOG reader's)."""
    out = []
    for line in lines:
        found = events(line)
        if found:
            out.extend(Line(line.number, line.rank, ":::MLLOG " + json.dumps(e)) for e in found)
        elif mllog.event(line) is None:
            out.append(line)
    return out


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each legacy MLPerf run in a log's lines."""
    by_number = {line.number: line for line in lines}
    out = []
    for group in mllog.groups(_as_mllog(lines)):
        numbers = dict.fromkeys(line.number for line in group)
        original = [by_number[n] for n in numbers if n in by_number]
        if any(events(line) for line in original):
            out.append(original)
    return out


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One legacy MLPerf run, read as the MLLOG reader reads the same events."""
    run = mllog.read_run(_as_mllog(lines), file, given)
    metrics = {**run.metrics, "mlperf_log": version(lines)}
    return dataclasses.replace(run, metrics=metrics, tail=tail_of([line.text for line in lines]))


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every legacy MLPerf run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
