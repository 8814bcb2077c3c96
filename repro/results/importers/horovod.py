"""Horovod's synthetic benchmarks (TensorFlow 1/2, Keras, PyTorch) as ParsedRuns (pure).

What rank 0 prints (examples/*/..._synthetic_benchmark.py): ``Model: ResNet50``, ``Batch size: 32``
(per worker), ``Number of GPUs: 4`` (or CPUs), ``Running warmup...``, ``Running benchmark...``,
``Iter #0: 185.9 img/sec per GPU`` (one figure per iteration of ``--num-batches-per-iter`` batches),
``Img/sec per GPU: 186.3 +-1.2`` and ``Total img/sec on 4 GPU(s): 745.2 +-4.8`` (size x the mean per
device). The lines may be rank-tagged (``[1,0]<stdout>:``, horovodrun) or not (mpirun, srun). Ray SGD's
benchmark prints the same lines, and so does Bluefog's (examples/pytorch_benchmark.py under ``bfrun``): its runs
are read by repro.results.importers.bluefog, not here (``program`` tells them apart).

The run's figure is the ``Total img/sec`` line. The samples are each iteration's mean batch time
(batch / img/sec); rank 0 stands for the synchronous job, so its step carries the global batch. Iteration
lines before ``Running benchmark...`` are warm-up. A file holds several runs when a ``Model:`` line
follows a summary.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from repro.results.importers import split
from repro.results.importers.command import find_commands, parse_command, truthy
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of
from repro.results.importers.seen import seen_in
from repro.results.record import RankResult
from repro.workloads.tf_cnn_benchmarks import canonical_model

HOROVOD = "horovod_synthetic"
EXAMPLE = "Horovod's or BytePS's synthetic benchmark ('Iter #0: ... img/sec per GPU')"
BYTEPS = "byteps_synthetic"
SCRIPTS = ("pytorch_synthetic_benchmark.py", "tensorflow2_synthetic_benchmark.py",
           "tensorflow_synthetic_benchmark.py", "tensorflow2_keras_synthetic_benchmark.py",
           "tf2_keras_synthetic_benchmark.py", "keras_synthetic_benchmark.py", "synthetic_benchmark.py",
           "benchmark_cross_barrier_byteps.py", "benchmark_byteps.py", "benchmark_byteps_ddp.py",
           "pytorch_benchmark.py", "pytorch_opt_linear_speedup_test.py")  # the last two: Bluefog's
BLUEFOG_SCRIPTS = SCRIPTS[-2:]
# the flags the settings are read from; every other flag of the program's command line is a setting of its
# own (extra.NAME), so that runs whose command lines differ are never pooled as repeats
_MAPPED = {"model", "batch_size", "fp16_allreduce", "no_cuda"}
DEFAULT_ITERS = 10  # --num-iters of every one of these programs
DEFAULT_BATCH = 32  # --batch-size of every one of these programs

_BFRUN = re.compile(r"^(?:\S*[$#>]\s+)?(?:\w+=\S*\s+)*(?:\S*/)?bfrun\s")  # a command Bluefog's launcher runs
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
        if k == "other" and line.rank is None and any(s in line.text for s in SCRIPTS) and \
                parse_command(line.text, line.number, SCRIPTS) is not None:
            k = "command"  # the command that starts the next run of a pasted session
            if measured:
                index, measured = index + 1, False
            out.append(index)
            continue
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
    return "pytorch" if "pytorch" in script or "byteps" in script else "tensorflow"


def program(lines: Sequence[Line], script: str | None) -> str | None:
    """Which program printed the run: BytePS's benchmark (bpslaunch, 'BytePS launching worker'), Bluefog's
    (its scripts, or launched by bfrun) or Horovod's; None when the log does not tell (the output formats are
    the same)."""
    if (script and "byteps" in script) or any(line.bare.startswith("BytePS launching worker") for line in lines):
        return "byteps"
    if script in BLUEFOG_SCRIPTS or any(_BFRUN.match(line.bare) for line in lines):
        return "bluefog"
    if script and "synthetic_benchmark" in script:
        return "horovod"
    return None


def _extra_flags(shown: Shown, flags: Mapping[str, str], line: int) -> None:
    for name, value in flags.items():
        if name not in _MAPPED:
            shown.put(f"extra.{name}", True if value == "True" else value, line)


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
    made_by = program(lines, cmd.script if cmd else None)
    if made_by == "byteps":
        shown.put("workload", BYTEPS, None)
    shown.put("extra.program", made_by, cmd.line if cmd else None)
    if cmd:
        shown.put("model", canonical_model(cmd.flag("model")) if cmd.flag("model") else None, cmd.line)
        batch = cmd.flag("batch_size")
        shown.put("batch_per_worker", int(batch) if batch and batch.isdigit() else None, cmd.line)
        shown.put("workers", cmd.processes, cmd.line)
        shown.put("hosts", cmd.hosts, cmd.line)
        if made_by == "horovod":
            shown.put("backend", cmd.controller, cmd.line)
        shown.put("extra.framework", _framework(cmd.script), cmd.line)
        shown.put("extra.fp16_allreduce", bool(truthy(cmd.flag("fp16_allreduce"))), cmd.line)
        if not any("fp16" in name for name in cmd.flags if name not in ("fp16_allreduce", "fp16_pushpull")):
            shown.put("precision", "fp32", cmd.line)  # they compute in fp32 (--fp16-allreduce only compresses)
        shown.put("data", "synthetic", cmd.line)
        _extra_flags(shown, cmd.flags, cmd.line)
        if "byteps" in cmd.script and "cross_barrier" in cmd.script:
            shown.put("extra.cross_barrier", True, cmd.line)
    model_line = next((line for line in lines if _MODEL.match(line.bare)), None)
    if model_line is not None:  # torchvision's names are lower case (resnet50), Keras applications' not (ResNet50)
        name = _MODEL.match(model_line.bare).group(1)
        shown.put("extra.framework", "pytorch" if name == name.lower() else "tensorflow", model_line.number)
    for name, value in given.items():
        shown.put(name, value, None)
    if cmd and cmd.flag("batch_size") is None and "batch_per_worker" not in shown:
        # neither the log nor --set gives it, and the command line leaves it out: the program's default
        shown.put("batch_per_worker", DEFAULT_BATCH, cmd.line)
        shown.put("extra.batch_from", "the program's default (no --batch-size on its command line)", cmd.line)
    if shown.get("batch_per_worker") and shown.get("workers"):
        shown.put("global_batch", shown.get("batch_per_worker") * shown.get("workers"), None)
    return shown, cmd.argv if cmd else (), dict(cmd.env) if cmd else {}


@dataclass
class _Scan:
    """The figures of one run: iterations (warm-up and measured, with their Iter #), mean and summary."""

    warmup: list[float] = field(default_factory=list)
    measured: list[float] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)  # the Iter # of each measured figure
    mean: float | None = None
    total: tuple[int, float, float, int, str] | None = None  # workers, img/sec, +-, line, GPU|CPU


def _scan(lines: Sequence[Line], batch: int | None, measuring: bool) -> _Scan:
    scan = _Scan()
    for line in lines:
        k, t = _kind(line), line.bare
        if k == "benchmark":
            measuring = True
        elif k == "iter" and batch:
            ips = float(_ITER.match(t).group(2))
            if ips > 0 and measuring:
                scan.measured.append(batch / ips)
                scan.numbers.append(int(_ITER.match(t).group(1)))
            elif ips > 0:
                scan.warmup.append(batch / ips)
        elif k == "mean":
            scan.mean = float(_MEAN.match(t).group(2))
        elif k == "total" and scan.total is None:
            m = _TOTAL.match(t)
            scan.total = (int(m.group(1)), float(m.group(3)), float(m.group(4)), line.number, m.group(2))
    return scan


def _reconcile(shown: Shown, lines: Sequence[Line], file: str, total: tuple | None) -> list[str]:
    """The worker count: what the program printed wins over the command line a paste shows, and where they
    differ it is said; a summary that contradicts the program's own header is refused."""
    noted = []
    commands = find_commands(lines, SCRIPTS)
    cmd = commands[-1] if commands else None
    if cmd and cmd.processes and shown.get("workers") not in (None, cmd.processes) \
            and shown.where.get("workers") != cmd.line:
        noted.append(f"the command line (line {cmd.line}) starts {cmd.processes} processes, the log (line "
                     f"{shown.where.get('workers')}) shows {shown.get('workers')} GPU(s); the log is used")
    if total is None:
        return noted
    said, where = shown.get("workers"), shown.where.get("workers")
    from_header = any(line.number == where and _kind(line) == "devices" for line in lines)
    if said not in (None, total[0]) and from_header:
        raise error(file, total[3], "the summary's worker count differs from the header's",
                    f"'Total img/sec on {shown.get('workers')} GPU(s): ...'", f"{total[0]} workers")
    if said not in (None, total[0]):
        noted.append(f"the command line (line {where}) starts {said} processes, the summary (line {total[3]}) "
                     f"counts {total[0]} GPU(s); the summary is used")
        shown.values["workers"], shown.where["workers"] = total[0], total[3]
        if shown.get("batch_per_worker"):
            shown.values["global_batch"] = shown.get("batch_per_worker") * total[0]
    shown.put("workers", total[0], total[3])
    return noted


def _cut(shown: Shown, scan: _Scan, elided: list[int], last_line: int) -> str | None:
    """Why a run without its summary failed: every one of these programs prints its summary last."""
    if scan.total is not None or elided:
        return None
    iters = shown.get("extra.num_iters")
    expected = int(iters) if isinstance(iters, str) and iters.isdigit() else DEFAULT_ITERS
    count = max(scan.numbers, default=-1) + 1
    return (f"the log ends after {count} of {expected} iterations, before the summary (cut, or the run died; "
            f"line {last_line})")


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One run's lines as a ParsedRun; InputError when it has no iterations and no summary. `given`:
    settings stated outside the log (repro import --set), used where the log does not show them."""
    shown, argv, env = _settings(lines, given or {})
    benchmark_started = any(_kind(line) == "benchmark" for line in lines)
    script = next((s for s in SCRIPTS if any(a.endswith(s) for a in argv)), None)
    elided = [line.number for line in lines if line.elision]
    batch = shown.get("batch_per_worker")
    scan = _scan(lines, batch, not benchmark_started)
    has_iters = any(_kind(line) == "iter" for line in lines)
    rule = _warmup_rule(script, benchmark_started, scan.measured, scan.mean, batch)
    if rule == KERAS_EPOCH0 and scan.numbers and scan.numbers[0] == 0:  # only epoch 0, where it is shown
        scan.warmup, scan.measured = [*scan.warmup, scan.measured[0]], scan.measured[1:]
    total = scan.total
    if total is None and not has_iters:
        raise error(file, lines[-1].number, "the benchmark's run has no iterations and no summary (log cut?)",
                    "'Iter #0: 185.9 img/sec per GPU' lines and 'Total img/sec on 4 GPU(s): 745.2 +-4.8'",
                    lines[-1].bare)
    noted = _reconcile(shown, lines, file, total)
    warnings = [*noted, *_warnings(elided, batch, has_iters, total)]
    workers = shown.get("workers")
    seen = seen_in(lines)
    kind_ = shown.get("device_kind") or (total[4] if total else "GPU")
    name = seen.name(0)
    device = "CPU" if kind_ == "CPU" else (f"GPU:0 {name}" if name else "")
    ranks = (RankResult(rank=0, device=device, warmup_times=scan.warmup, step_times=scan.measured,
                        items_per_step=batch * workers),) if scan.measured and batch and workers else ()
    settings = {k: v for k, v in shown.values.items() if k not in ("device_kind", "extra.batch_from")}
    if shown.get("extra.batch_from"):
        warnings.append(f"batch {shown.get('batch_per_worker')} per worker: {shown.get('extra.batch_from')}")
    metrics = {"format": HOROVOD, "program": shown.get("extra.program"), "warmup_rule": rule, "noted": noted,
               "total_images_per_sec": total[1] if total else None,
               "total_images_per_sec_conf": total[2] if total else None, "img_sec_per_device": scan.mean,
               "iterations": len(scan.measured), "warmup_iterations": len(scan.warmup), "elided_lines": elided[:20]}
    return ParsedRun(
        format=HOROVOD, file=file, first_line=lines[0].number, last_line=lines[-1].number, settings=settings,
        where=shown.where, ranks=ranks, figure=total[1] if total else None, figure_line=total[3] if total else None,
        metrics=metrics, software=dict(seen.software), devices=seen.names, command=argv, env=env,
        failure=_cut(shown, scan, elided, lines[-1].number), warnings=tuple(warnings),
        tail=tail_of([line.text for line in lines]))


KERAS_EPOCH0 = "keras: Iter #0 is the warm-up (the program leaves it out of its mean)"
BENCHMARK_LINE = "iterations after 'Running benchmark...'"


def _warmup_rule(script: str | None, benchmark_started: bool, measured: list[float], mean: float | None,
                 batch: int | None) -> str:
    """The program's own warm-up rule. Horovod's Keras benchmark (tensorflow2_keras_synthetic_benchmark.py)
    prints no 'Running benchmark...' and times its warm-up as epoch 0, which it prints as Iter #0 and leaves
    out of its mean; without the command line, the printed mean tells which rule made it."""
    if benchmark_started:
        return BENCHMARK_LINE
    if script and "keras" in script:
        return KERAS_EPOCH0
    if mean and batch and len(measured) > 2:
        rates = [batch / t for t in measured]
        all_mean, rest_mean = sum(rates) / len(rates), sum(rates[1:]) / len(rates[1:])
        if abs(rest_mean - mean) < abs(all_mean - mean):
            return KERAS_EPOCH0
    return "every iteration"


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


def all_groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each run these benchmarks' line format holds, whichever program printed it."""
    return [group for group in split.groups(lines, run_indexes(lines))
            if any(_kind(line) in ("iter", "total", "mean") for line in group)]


def made_by(group: Sequence[Line]) -> str | None:
    """The program that printed one run's lines (see `program`)."""
    commands = find_commands(group, SCRIPTS)
    return program(group, commands[-1].script if commands else None)


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each Horovod (or BytePS) synthetic-benchmark run; Bluefog's are its own reader's."""
    return [group for group in all_groups(lines) if made_by(group) != "bluefog"]


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every synthetic-benchmark run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
