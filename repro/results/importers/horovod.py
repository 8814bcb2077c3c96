"""Horovod's synthetic benchmarks (TensorFlow 1/2, Keras, PyTorch) as ParsedRuns (pure).

What rank 0 prints (examples/*/..._synthetic_benchmark.py): ``Model: ResNet50``, ``Batch size: 32``
(per worker), ``Number of GPUs: 4`` (or CPUs), ``Running warmup...``, ``Running benchmark...``,
``Iter #0: 185.9 img/sec per GPU`` (one figure per iteration of ``--num-batches-per-iter`` batches),
``Img/sec per GPU: 186.3 +-1.2`` and ``Total img/sec on 4 GPU(s): 745.2 +-4.8`` (size x the mean per
device). The lines may be rank-tagged (``[1,0]<stdout>:``, horovodrun) or not (mpirun, srun). Ray SGD's
benchmark prints the same lines.

The run's figure is the ``Total img/sec`` line. The samples are each iteration's mean batch time
(batch / img/sec); rank 0 stands for the synchronous job, so its step carries the global batch. Iteration
lines before ``Running benchmark...`` are warm-up. A file holds several runs when a ``Model:`` line
follows a summary.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split
from repro.results.importers.command import find_commands, truthy
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of
from repro.results.importers.seen import seen_in
from repro.results.record import RankResult
from repro.workloads.tf_cnn_benchmarks import canonical_model

HOROVOD = "horovod_synthetic"
SCRIPTS = ("pytorch_synthetic_benchmark.py", "tensorflow2_synthetic_benchmark.py",
           "tensorflow_synthetic_benchmark.py", "tensorflow2_keras_synthetic_benchmark.py",
           "tf2_keras_synthetic_benchmark.py", "keras_synthetic_benchmark.py", "synthetic_benchmark.py")

_MODEL = re.compile(r"^Model:\s*(\S+)")
_BATCH = re.compile(r"^Batch size:\s*(\d+)\s*$")
_DEVICES = re.compile(r"^Number of (GPU|CPU)s?:\s*(\d+)")
_ITER = re.compile(r"^Iter #(\d+):\s*([0-9.]+) img/sec per (GPU|CPU)")
_MEAN = re.compile(r"^Img/sec per (GPU|CPU):\s*([0-9.]+)\s*\+-\s*([0-9.]+)")
_TOTAL = re.compile(r"^Total img/sec on (\d+) (GPU|CPU)\(s\):\s*([0-9.]+)\s*\+-\s*([0-9.]+)")


def _kind(line: Line) -> str:
    t = line.bare
    for name, rx in (("model", _MODEL), ("batch", _BATCH), ("devices", _DEVICES), ("iter", _ITER),
                     ("mean", _MEAN), ("total", _TOTAL)):
        if rx.match(t):
            return name
    if t.startswith("Running benchmark"):
        return "benchmark"
    if t.startswith("Running warmup"):
        return "warmup"
    return "other"


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """The run each line belongs to: a new run starts at a header line after a summary or iterations."""
    index, measured = 0, False
    out: list[int | None] = []
    for line in lines:
        k = _kind(line)
        if line.rank not in (None, 0) and k != "other":
            out.append(None)  # only rank 0 reports; other ranks' lines (if any) are not the run's
            continue
        if k in ("model", "batch", "devices") and measured:
            index, measured = index + 1, False
        measured = measured or k in ("iter", "total")
        out.append(None if k == "other" else index)
    return out


def _framework(script: str | None) -> str | None:
    if not script:
        return None
    return "pytorch" if "pytorch" in script else "tensorflow"


def _settings(lines: Sequence[Line], given: Mapping[str, Any]) -> tuple[Shown, tuple[str, ...], dict[str, str]]:
    shown = Shown()
    for line in lines:
        t = line.bare
        if m := _MODEL.match(t):
            shown.put("model", canonical_model(m.group(1)), line.number)
        elif m := _BATCH.match(t):
            shown.put("batch_per_worker", int(m.group(1)), line.number)
        elif m := _DEVICES.match(t):
            shown.put("workers", int(m.group(2)), line.number)
            shown.put("device_kind", m.group(1), line.number)
    commands = find_commands(lines, SCRIPTS)
    cmd = commands[-1] if commands else None
    if cmd:
        shown.put("model", canonical_model(cmd.flag("model")) if cmd.flag("model") else None, cmd.line)
        batch = cmd.flag("batch_size")
        shown.put("batch_per_worker", int(batch) if batch and batch.isdigit() else None, cmd.line)
        shown.put("workers", cmd.processes, cmd.line)
        shown.put("hosts", cmd.hosts, cmd.line)
        shown.put("extra.framework", _framework(cmd.script), cmd.line)
        shown.put("extra.fp16_allreduce", bool(truthy(cmd.flag("fp16_allreduce"))), cmd.line)
        shown.put("precision", "fp32", cmd.line)  # the benchmarks compute in fp32 (--fp16-allreduce only compresses)
        shown.put("data", "synthetic", cmd.line)
    for name, value in given.items():
        shown.put(name, value, None)
    if shown.get("batch_per_worker") and shown.get("workers"):
        shown.put("global_batch", shown.get("batch_per_worker") * shown.get("workers"), None)
    return shown, cmd.argv if cmd else (), dict(cmd.env) if cmd else {}


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One run's lines as a ParsedRun; InputError when it has no iterations and no summary. `given`:
    settings stated outside the log (repro import --set), used where the log does not show them."""
    shown, argv, env = _settings(lines, given or {})
    benchmark_started = any(_kind(line) == "benchmark" for line in lines)
    measuring = not benchmark_started
    warmup: list[float] = []
    measured: list[float] = []
    total = mean = None
    elided = [line.number for line in lines if line.elision]
    batch = shown.get("batch_per_worker")
    for line in lines:
        k, t = _kind(line), line.bare
        if k == "benchmark":
            measuring = True
        elif k == "iter" and batch:
            ips = float(_ITER.match(t).group(2))
            if ips > 0:
                (measured if measuring else warmup).append(batch / ips)
        elif k == "mean":
            mean = float(_MEAN.match(t).group(2))
        elif k == "total" and total is None:
            m = _TOTAL.match(t)
            total = (int(m.group(1)), float(m.group(3)), float(m.group(4)), line.number, m.group(2))
    has_iters = any(_kind(line) == "iter" for line in lines)
    if total is None and not has_iters:
        raise error(file, lines[-1].number, "the benchmark's run has no iterations and no summary (log cut?)",
                    "'Iter #0: 185.9 img/sec per GPU' lines and 'Total img/sec on 4 GPU(s): 745.2 +-4.8'",
                    lines[-1].bare)
    if total is not None:
        if shown.get("workers") not in (None, total[0]):
            raise error(file, total[3], "the summary's worker count differs from the header's",
                        f"'Total img/sec on {shown.get('workers')} GPU(s): ...'", f"{total[0]} workers")
        shown.put("workers", total[0], total[3])
    warnings = _warnings(elided, batch, has_iters, total)
    workers = shown.get("workers")
    seen = seen_in(lines)
    kind_ = shown.get("device_kind") or (total[4] if total else "GPU")
    name = seen.name(0)
    device = "CPU" if kind_ == "CPU" else (f"GPU:0 {name}" if name else "")
    ranks = (RankResult(rank=0, device=device, warmup_times=warmup, step_times=measured,
                        items_per_step=batch * workers),) if measured and batch and workers else ()
    settings = {k: v for k, v in shown.values.items() if k != "device_kind"}
    metrics = {"format": HOROVOD, "total_images_per_sec": total[1] if total else None,
               "total_images_per_sec_conf": total[2] if total else None, "img_sec_per_device": mean,
               "iterations": len(measured), "warmup_iterations": len(warmup), "elided_lines": elided[:20]}
    return ParsedRun(
        format=HOROVOD, file=file, first_line=lines[0].number, last_line=lines[-1].number, settings=settings,
        where=shown.where, ranks=ranks, figure=total[1] if total else None, figure_line=total[3] if total else None,
        metrics=metrics, software=dict(seen.software), devices=seen.names, command=argv, env=env,
        warnings=tuple(warnings), tail=tail_of([line.text for line in lines]))


def _warnings(elided: list[int], batch: int | None, has_iters: bool, total: tuple | None) -> list[str]:
    out = []
    if elided:
        out.append(f"the log leaves lines out (at line {', '.join(map(str, elided[:5]))}): the samples may be "
                   "incomplete")
    if has_iters and not batch:
        out.append("the batch size is not shown: no samples (set it with --set FILE:batch=N)")
    if total is None:
        out.append("no 'Total img/sec' line: the figure is computed from the iterations")
    return out


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every synthetic-benchmark run in a log's lines (groups without an iteration or summary are not ours)."""
    runs = []
    for group in split.groups(lines, run_indexes(lines)):
        if any(_kind(line) in ("iter", "total", "mean") for line in group):
            runs.append(read_run(group, file, given))
    return runs
