"""MLPerf training results (``:::MLLOG {...}`` lines, mlperf-logging) as time-to-accuracy ParsedRuns (pure).

Each line after ``:::MLLOG`` is a JSON event: ``{"time_ms": ..., "key": "run_start", "value": ...,
"metadata": {...}}``. A run is ``run_start`` .. ``run_stop``; its time to accuracy is the difference of
their ``time_ms`` and whether it reached the target is ``run_stop``'s ``metadata.status`` (``success``
or ``aborted``). ``eval_accuracy`` events give the accuracy per evaluation (``metadata.epoch_num``),
``global_batch_size`` the batch, ``submission_benchmark`` / ``submission_platform`` what ran where.
Every rank may print the events: the first of each key counts. The target is recorded only when the
log states it (``eval_target`` in later versions of the rules).

Workers: where the log states them, from ``global_batch_size`` / ``local_batch_size`` (per accelerator), else
from the ``:::SYSJSON`` system description (``number_of_nodes`` x ``accelerators_per_node``; its software
versions and accelerator model are kept too), else from the platform name where a rule of
``repro.results.importers.platforms`` reads it (each rule names its source); otherwise they stay unknown
unless given (``repro import --set FILE:workers=8``). Records get workload ``tta``, so compare treats them
as time to accuracy. A run whose ``run_stop`` status is not ``success`` (``aborted``) is a failed run.

Accuracy: ``eval_accuracy`` is top-1 only for image classification (resnet); for BERT it is the masked-LM
accuracy (kept as ``final_accuracy`` with ``accuracy_metric``); GPT-3's is the log perplexity and Llama 2
LoRA's the evaluation loss, targets reached from above (``lower_is_better``). ``epoch_num`` counts epochs only
where the benchmark's rules say so: BERT's and GPT-3's count training samples, so they are kept as
``epoch_num`` (and ``samples``), never as epochs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split
from repro.results.importers.lines import Line, error
from repro.results.importers.platforms import read_platform
from repro.results.importers.runs import ParsedRun, Shown, tail_of

MLLOG = "mlperf"
EXAMPLE = "MLPerf training results (':::MLLOG {...}' lines)"
TTA = "tta"
_EVENT = re.compile(r":::MLLOG\s+(\{.*\})\s*$")
_SYSJSON = re.compile(r":::SYSJSON\s+(\{.*\})\s*$")
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


def _workers(platform: str | None, global_batch: Any, local_batch: Any, system: Mapping[str, Any]
             ) -> tuple[int | None, int | None, str]:
    """The accelerator and host counts the log states, and how they were read: the batch sizes, the
    :::SYSJSON system description, then the platform name where a rule of repro.results.importers.platforms
    reads it."""
    nodes, per_node = _count(system.get("number_of_nodes")), _count(system.get("accelerators_per_node"))
    hosts = nodes
    if isinstance(global_batch, int) and isinstance(local_batch, int) and local_batch > 0 \
            and global_batch % local_batch == 0 and global_batch // local_batch > 0:
        return global_batch // local_batch, hosts, "global_batch_size / local_batch_size"
    if nodes and per_node:
        return nodes * per_node, hosts, f":::SYSJSON number_of_nodes {nodes} x accelerators_per_node {per_node}"
    reading = read_platform(platform)
    if reading is None:
        return None, hosts, ""
    return reading.workers, hosts or reading.hosts, reading.how


def _count(value: Any) -> int | None:
    """A positive count from a system description ('8' or 8), None otherwise."""
    try:
        n = int(str(value).strip())
    except ValueError:
        return None
    return n if n > 0 else None


def system_json(lines: Sequence[Line]) -> tuple[dict[str, Any], int | None]:
    """The first :::SYSJSON system description in the lines (MLPerf v2.1+ logs write it), and its line."""
    for line in lines:
        if (m := _SYSJSON.search(line.text)) is None:
            continue
        try:
            data = json.loads(m.group(1))
        except ValueError:
            continue
        if isinstance(data, dict):
            return data, line.number
    return {}, None


_SOFTWARE = {"cuda_version": "cuda", "cuda_driver_version": "driver", "nccl_version": "nccl",
             "cudnn_version": "cudnn", "cublas_version": "cublas", "openmpi_version": "openmpi",
             "mofed_version": "mofed"}


def _software(system: Mapping[str, Any]) -> dict[str, str]:
    """The versions a system description names: its framework and its other_software_stack."""
    out = {"framework": str(system["framework"])} if system.get("framework") else {}
    stack = system.get("other_software_stack")
    if isinstance(stack, dict):
        out.update({_SOFTWARE[k]: str(v) for k, v in stack.items() if k in _SOFTWARE and v})
    elif isinstance(stack, str) and stack:
        out["other_software_stack"] = stack
    return out


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


def _settings(events: Sequence[tuple[dict[str, Any], int]], given: Mapping[str, Any],
              system: tuple[Mapping[str, Any], int | None]) -> tuple[Shown, str]:
    """The settings the events and the system description state (completed by `given`), and how the worker
    count was read."""
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
    workers, hosts, how = _workers(str(platform[0].get("value")) if platform else None,
                                   batch[0].get("value") if batch else None,
                                   local[0].get("value") if local else None, system[0])
    where = local[1] if local and how.startswith("global") else system[1] if how.startswith(":::SYSJSON") \
        else platform[1] if platform else None
    shown.put("workers", workers, where)
    shown.put("hosts", hosts, system[1] if system[0].get("number_of_nodes") else platform[1] if platform else None)
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
    system = system_json(lines)
    shown, how = _settings(events, given or {}, system)
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
    counts = _NOT_EPOCHS.get(name, "epochs")
    samples = _first(events, "train_samples")
    metrics = {
        "format": MLLOG, "reached": status == "success", "status": status or None,
        "time_to_accuracy_s": round(seconds, 3) if status == "success" else None, "run_s": round(seconds, 3),
        "target": target[0].get("value") if target else None,
        "final_top1": _accuracy(last["value"]) if last and classification else None,
        "final_accuracy": _accuracy(last["value"]) if last else None,  # Mask R-CNN: {"BBOX": .., "SEGM": ..}
        "accuracy_metric": "top1" if classification else _METRICS.get(name, "eval_accuracy"),
        "lower_is_better": name in _LOSSES or None,  # a loss or perplexity target is reached from above
        "epochs": _epoch(last) if name not in _NOT_EPOCHS else None,
        "epoch_num": _epoch(last),
        "epoch_num_counts": counts,
        "samples": _epoch(last) if counts.startswith("training samples") else None,
        "train_samples": samples[0].get("value") if samples else None,
        "evaluations": len(accuracies),
        "workers_from": how or None,
        "system": dict(system[0]) or None,
        "stated": ["run_start", "run_stop", "status", "eval_accuracy", *(["eval_target"] if target else [])],
        "derived": {"time_to_accuracy_s": "run_stop time - run_start time", "run_s": "run_stop time - run_start time",
                    **({"workers": how} if how else {})},
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
                     failure=failure, tail=tail_of([line.text for line in lines]), software=_software(system[0]),
                     devices=(str(system[0]["accelerator_model_name"]),) if system[0].get("accelerator_model_name")
                     else ())


# what eval_accuracy measures where it is not top-1, and what epoch_num counts where it is not epochs
_METRICS = {"bert": "masked_lm_accuracy", "ssd": "mAP", "maskrcnn": "bbox/segm mAP", "transformer": "BLEU",
            "gnmt": "BLEU", "dlrm": "AUC", "rnnt": "WER", "unet3d": "mean DICE", "minigo": "win rate",
            "gpt3": "log_perplexity", "llama2_70b_lora": "eval_loss", "stable_diffusion": "FID/CLIP",
            "dlrm_dcnv2": "AUC", "gnn": "accuracy"}
# quality targets reached from above (the MLPerf training rules: GPT-3's log perplexity 2.69, Llama 2 70B
# LoRA's evaluation loss 0.925)
_LOSSES = frozenset({"gpt3", "llama2_70b_lora", "rnnt"})
_NOT_EPOCHS = {"bert": "training samples (per the rules; some submitters log steps)",
               "gpt3": "training samples (the reference logs consumed samples as epoch_num)"}


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each MLPerf run in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every MLPerf run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
