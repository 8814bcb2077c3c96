"""MLPerf training results (``:::MLLOG {...}`` lines, mlperf-logging) as time-to-accuracy ParsedRuns (pure).

Each line after ``:::MLLOG`` is a JSON event: ``{"time_ms": ..., "key": "run_start", "value": ...,
"metadata": {...}}``. A run is ``run_start`` .. ``run_stop``; its time to accuracy is the difference of
their ``time_ms`` and whether it reached the target is ``run_stop``'s ``metadata.status`` (``success``
or ``aborted``). ``eval_accuracy`` events give the accuracy per evaluation (``metadata.epoch_num``),
``global_batch_size`` the batch, ``submission_benchmark`` / ``submission_platform`` what ran where.
Every rank may print the events: the first of each key counts. The target is recorded only when the
log states it (``eval_target`` in later versions of the rules).

Workers: where the log states them, from ``global_batch_size`` / ``local_batch_size`` (per accelerator),
else from the platform it names (``submission_platform``: ``gpu-v100-8`` and ``tpu-v3-32`` end in the
accelerator count, ``8xNVIDIA DGX A100`` names 8 systems of a known size); otherwise they stay unknown
unless given (``repro import --set FILE:workers=8``). Records get workload ``tta``, so compare treats them
as time to accuracy. A run whose ``run_stop`` status is not ``success`` (``aborted``) is a failed run.

Accuracy: ``eval_accuracy`` is top-1 only for image classification (resnet); for BERT it is the masked-LM
accuracy (kept as ``final_accuracy`` with ``accuracy_metric``). ``epoch_num`` counts epochs only where the
benchmark's rules say so: BERT's counts training samples (or steps), so it is kept as ``epoch_num``, never
as epochs.
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
    """A new run starts at a submission or init event after a run_stop; events after a run_stop that no
    run_start follows (the submission_* events some logs write last) belong to the run before them."""
    index, stopped = 0, False
    out: list[int | None] = []
    started: set[int] = set()
    for line in lines:
        e = event(line)
        if e is None:
            out.append(None)
            continue
        if e["key"] in _STARTS and stopped:
            index, stopped = index + 1, False
        stopped = stopped or e["key"] == "run_stop"
        if e["key"] == "run_start":
            started.add(index)
        out.append(index)
    return [i - 1 if i is not None and i not in started and i - 1 in started else i for i in out]


# accelerators in one system of the names submitters give (the systems' descriptions in the results
# repositories say so: systems/*.json, accelerators_per_node)
_SYSTEM_SIZE = {"dgx-1": 8, "dgx1": 8, "dgx-2": 16, "dgx2": 16, "dgx-2h": 16, "dgx a100": 8, "dgxa100": 8,
                "dgx h100": 8, "dgxh100": 8}


def _workers(platform: str | None, global_batch: Any, local_batch: Any) -> tuple[int | None, str]:
    """The accelerator count the log states, and how it was read."""
    if isinstance(global_batch, int) and isinstance(local_batch, int) and local_batch > 0 \
            and global_batch % local_batch == 0:
        return global_batch // local_batch, "global_batch_size / local_batch_size"
    if not platform:
        return None, ""
    text = platform.strip()
    if m := re.fullmatch(r"(\d+)x\s*(?:NVIDIA\s+)?(.+)", text, re.I):
        size = _SYSTEM_SIZE.get(m.group(2).strip().lower())
        if size:
            return int(m.group(1)) * size, f"submission_platform {text!r}: {m.group(1)} x {size} accelerators"
    if m := re.fullmatch(r"[A-Za-z][\w.]*(?:-[\w.]+)*-(\d+)", text):  # gpu-v100-8, tpu-v3-32, TPUv3-8192
        return int(m.group(1)), f"submission_platform {text!r}"
    return None, ""


def _systems(platform: str | None) -> int | None:
    """The host count a platform name gives: '2xNVIDIA DGX A100' ran on 2 systems."""
    m = re.fullmatch(r"(\d+)x\s*(?:NVIDIA\s+)?(.+)", (platform or "").strip(), re.I)
    return int(m.group(1)) if m and m.group(2).strip().lower() in _SYSTEM_SIZE else None


def _accuracy(value: Any) -> float | dict[str, float] | None:
    """An eval_accuracy value: a number, or a mapping of numbers (Mask R-CNN's BBOX and SEGM mAP)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, dict) and value and all(isinstance(v, (int, float)) for v in value.values()):
        return {str(k): float(v) for k, v in value.items()}
    return None


def _ms(e: dict[str, Any]) -> float | None:
    """An event's time in milliseconds: its time_ms, or its time_s (some submitters log seconds)."""
    for key, scale in (("time_ms", 1.0), ("time_s", 1000.0)):
        value = e.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) * scale
    return None


def _first(events: Sequence[tuple[dict[str, Any], int]], key: str) -> tuple[dict[str, Any], int] | None:
    return next(((e, n) for e, n in events if e["key"] == key), None)


def _epoch(e: dict[str, Any] | None) -> Any:
    meta = e.get("metadata") if e else None
    return meta.get("epoch_num") if isinstance(meta, dict) else None


def _settings(events: Sequence[tuple[dict[str, Any], int]], given: Mapping[str, Any]) -> tuple[Shown, str]:
    """The settings the events state (completed by `given`), and how the worker count was read."""
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
    local = _first(events, "local_batch_size")
    workers, how = _workers(str(platform[0].get("value")) if platform else None,
                            batch[0].get("value") if batch else None, local[0].get("value") if local else None)
    shown.put("workers", workers, (local or platform or (None, None))[1])
    shown.put("hosts", _systems(str(platform[0].get("value")) if platform else None), platform[1] if platform else None)
    if local and isinstance(local[0].get("value"), int):
        shown.put("batch_per_worker", local[0]["value"], local[1])
    for name, value in given.items():
        shown.put(name, value, None)
    return shown, how


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One MLPerf run; InputError when it has no run_start or no run_stop."""
    events = [(e, line.number) for line in lines if (e := event(line)) is not None]
    start, stop = _first(events, "run_start"), _first(events, "run_stop")
    if start is None or stop is None:
        missing = "run_start" if start is None else "run_stop"
        raise error(file, lines[-1].number, f"the MLPerf run has no {missing} event (log cut?)",
                    f':::MLLOG {{"key": "{missing}", "time_ms": ...}}')
    shown, how = _settings(events, given or {})
    accuracies = [(e, n) for e, n in events if e["key"] == "eval_accuracy" and _accuracy(e.get("value")) is not None]
    meta = stop[0].get("metadata")
    status = str(meta.get("status", "")).lower() if isinstance(meta, dict) else ""
    times = [_ms(e) for e, _ in (start, stop)]
    if times[0] is None or times[1] is None:
        raise error(file, stop[1], "run_start or run_stop has no time_ms (or time_s)", '"time_ms": 1593154759901')
    seconds = (times[1] - times[0]) / 1000.0
    target = _first(events, "eval_target")
    last = accuracies[-1][0] if accuracies else None
    name = str(shown.get("extra.benchmark") or "")
    classification = name in ("resnet", "")  # eval_accuracy is top-1 only for image classification
    samples = _first(events, "train_samples")
    metrics = {
        "format": MLLOG, "reached": status == "success", "status": status or None,
        "time_to_accuracy_s": round(seconds, 3) if status == "success" else None, "run_s": round(seconds, 3),
        "target": target[0].get("value") if target else None,
        "final_top1": _accuracy(last["value"]) if last and classification else None,
        "final_accuracy": _accuracy(last["value"]) if last else None,  # Mask R-CNN: {"BBOX": .., "SEGM": ..}
        "accuracy_metric": "top1" if classification else _METRICS.get(name, "eval_accuracy"),
        "epochs": _epoch(last) if name not in _NOT_EPOCHS else None,
        "epoch_num": _epoch(last),
        "epoch_num_counts": _NOT_EPOCHS.get(name, "epochs"),
        "train_samples": samples[0].get("value") if samples else None,
        "evaluations": len(accuracies),
        "workers_from": how or None,
    }
    warnings = [] if status else ["run_stop has no status: whether the target was reached is unknown"]
    init = _first(events, "init_start")
    if init and _ms(init[0]) and times[0] < (_ms(init[0]) or 0):
        warnings.append(f"run_start (line {start[1]}) is timed before init_start (line {init[1]}): the log's "
                        "time to accuracy counts from a time the run had not reached")
    failure = None
    if status and status != "success":
        failure = f"run_stop status: {status} (the target was not reached; line {stop[1]})"
    return ParsedRun(format=MLLOG, file=file, first_line=lines[0].number, last_line=lines[-1].number,
                     settings=shown.values, where=shown.where, metrics=metrics, warnings=tuple(warnings),
                     failure=failure, tail=tail_of([line.text for line in lines]))


# what eval_accuracy measures where it is not top-1, and what epoch_num counts where it is not epochs
_METRICS = {"bert": "masked_lm_accuracy", "ssd": "mAP", "maskrcnn": "bbox/segm mAP", "transformer": "BLEU",
            "gnmt": "BLEU", "dlrm": "AUC", "rnnt": "WER", "unet3d": "mean DICE", "minigo": "win rate"}
_NOT_EPOCHS = {"bert": "training samples (per the rules; some submitters log steps)"}


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each MLPerf run in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every MLPerf run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
