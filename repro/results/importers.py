"""Importers of existing benchmark logs into RunRecords (pure: text in, records out).

Two formats, as their programs print them:

* tf_cnn_benchmarks (github.com/tensorflow/benchmarks): a header (``Model:``, ``Batch size: N global`` /
  ``M per device``, ``Devices:``, ``Data format:``, ``Variables:``...), ``Running warm up`` /
  ``Done warm up``, then ``Step\\tImg/sec\\ttotal_loss`` and one line every ``--display_every`` steps
  (``10\\timages/sec: 221.3 +/- 0.4 (jitter = 1.2)\\t8.183``), and ``total images/sec: 1751.23``
  between dashed lines. Under Horovod every rank prints all of it, interleaved (or prefixed
  ``[1,R]<stdout>:`` with ``mpirun --tag-output``).
* Horovod's synthetic benchmark (``tensorflow2_synthetic_benchmark.py`` and its TF1 sibling): rank 0
  prints ``Model:``, ``Batch size:``, ``Number of GPUs:``, ``Running warmup...``, ``Running
  benchmark...``, ``Iter #0: 185.9 img/sec per GPU``..., ``Img/sec per GPU: 186.3 +-1.2`` and
  ``Total img/sec on 4 GPU(s): 745.2 +-4.8``.

Step times are reconstructed from the printed figures. tf_cnn_benchmarks prints a *cumulative* mean
(images/sec over every step since warm-up), so the time of steps 1..n is n x batch / (images/sec at
n), and the mean step time of each display interval is the difference of two such totals over the
interval's length. Horovod prints one figure per iteration of several batches: its mean batch time is
batch / (img/sec). Where only rank 0's figures are in the log (Horovod's benchmark always; a
tf_cnn_benchmarks log of rank 0 only), that rank stands for the synchronous job: its step is the
global step and it carries the global batch, which is what the programs' own totals assume. The
printed summary is kept in ``metrics``; lines of the warm-up phase are never step times.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import Diagnostic, InputError, Location
from repro.workloads.tf_cnn_benchmarks import canonical_model
from repro.results.record import RankResult, RunRecord, Settings, StackRef, new_id, now_iso

TF_CNN = "tf_cnn_benchmarks"
HOROVOD = "horovod_synthetic"
FORMATS = (TF_CNN, HOROVOD)
TAIL_LINES = 30

_TAG = re.compile(r"^\[(?:\d+,)?(\d+)\]<std(?:out|err)>:\s?")
_GPU_NAME = re.compile(r"device:GPU:(\d+).*?name: ([^,]+), pci bus id")
_STEP = re.compile(r"^(\d+)\s+images/sec:\s*([0-9.]+)(?:\s*\+/-\s*([0-9.]+)\s*\(jitter = ([0-9.]+)\))?")
_TOTAL = re.compile(r"^total images/sec:\s*([0-9.]+)\s*$")
_ITER = re.compile(r"^Iter #(\d+):\s*([0-9.]+) img/sec per (GPU|CPU)")
_HVD_MEAN = re.compile(r"^Img/sec per (GPU|CPU):\s*([0-9.]+)\s*\+-\s*([0-9.]+)")
_HVD_TOTAL = re.compile(r"^Total img/sec on (\d+) (GPU|CPU)\(s\):\s*([0-9.]+)\s*\+-\s*([0-9.]+)")
_STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Line:
    """One log line with its 1-based number and the rank of an ``[1,R]<stdout>:`` tag (None untagged)."""

    number: int
    rank: int | None
    text: str


@dataclass(frozen=True)
class ParsedRun:
    """What a log says about one run, before it becomes a RunRecord."""

    format: str
    file: str
    settings: Settings
    ranks: tuple[RankResult, ...]
    metrics: dict[str, Any] = field(default_factory=dict)
    software: dict[str, Any] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    tail: str = ""


def _lines(text: str) -> list[Line]:
    out = []
    for i, raw in enumerate(text.splitlines(), start=1):
        m = _TAG.match(raw)
        rank = int(m.group(1)) if m else None
        out.append(Line(i, rank, (raw[m.end():] if m else raw).rstrip()))
    return out


def _error(file: str, line: int | None, message: str, expected: str, found: str = "") -> InputError:
    return InputError(f"{file}: cannot import this log",
                      [Diagnostic(message, Location(file, line), expected=expected, found=found)])


def _tail(text: str) -> str:
    return "\n".join(text.splitlines()[-TAIL_LINES:])


def _gpu_device(lines: Sequence[Line], default: str) -> str:
    """'GPU:0 Tesla V100-SXM2-16GB' from TensorFlow's device creation log line, else the default."""
    for line in lines:
        m = _GPU_NAME.search(line.text)
        if m:
            return f"GPU:{m.group(1)} {m.group(2).strip()}"
    return default


def _command_flags(lines: Sequence[Line], script: str) -> tuple[tuple[str, ...], dict[str, str]]:
    """The command line that ran `script`, if the log shows it, and its --flag=value pairs."""
    for line in lines:
        if script not in line.text or not re.search(r"\b(python[0-9.]*|mpirun|horovodrun)\b", line.text):
            continue
        try:
            argv = shlex.split(line.text.lstrip("$# "))
        except ValueError:
            continue
        flags: dict[str, str] = {}
        start = next(i for i, arg in enumerate(argv) if script in arg)
        for i, arg in enumerate(argv[start + 1:], start=start + 1):
            if arg.startswith("-"):
                name, eq, value = arg.lstrip("-").partition("=")
                if not eq and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                    value = argv[i + 1]
                flags[name] = value if (eq or value) else "True"
        return tuple(argv), flags
    return (), {}


def _truthy(value: str | None) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


# -- tf_cnn_benchmarks ------------------------------------------------------------------------------

_HEADER = {
    "tensorflow": re.compile(r"^TensorFlow:\s+(\S+)"),
    "model": re.compile(r"^Model:\s+(\S+)"),
    "dataset": re.compile(r"^Dataset:\s+(.+)$"),
    "global_batch": re.compile(r"^Batch size:\s+([0-9.]+) global"),
    "per_device": re.compile(r"^\s+([0-9.]+) per device"),
    "num_batches": re.compile(r"^Num batches:\s+(\d+)"),
    "devices": re.compile(r"^Devices:\s+\[(.*)\]"),
    "data_format": re.compile(r"^Data format:\s+(\w+)"),
    "optimizer": re.compile(r"^Optimizer:\s+(\S+)"),
    "variable_update": re.compile(r"^Variables:\s+(\S+)"),
    "all_reduce_spec": re.compile(r"^AllReduce:\s+(\S+)"),
    "horovod_device": re.compile(r"^Horovod on:\s+(\S+)"),
}


def _interval_times(file: str, points: list[tuple[int, float, int]], batch: int) -> list[float]:
    """Mean step time of each display interval from cumulative (step, images/sec) figures."""
    if len(points) > 1 and points[0][0] == 1:
        points = points[1:]  # step 1 alone would make the first interval 1 step long instead of display_every
    times, done, elapsed = [], 0, 0.0
    for step, ips, number in points:
        if ips <= 0 or step <= done:
            raise _error(file, number, "step figures must grow in step number with positive images/sec",
                         f"a step after {done} with images/sec > 0", f"step {step}, {ips} images/sec")
        total = step * batch / ips
        dt = (total - elapsed) / (step - done)
        if dt <= 0:
            raise _error(file, number, "images/sec is not a cumulative mean of the steps so far",
                         "figures consistent with tf_cnn_benchmarks' running mean", f"{ips} at step {step}")
        times.append(dt)
        done, elapsed = step, total
    return times


@dataclass
class _Scan:
    """What one pass over a tf_cnn_benchmarks log collects."""

    header: dict[str, tuple[str, int]] = field(default_factory=dict)  # field -> (value, line)
    series: dict[int, list[tuple[int, float, int]]] = field(default_factory=lambda: defaultdict(list))
    totals: list[tuple[int, float]] = field(default_factory=list)  # (rank, total images/sec)
    warmup_lines: int = 0


def _scan_tf_cnn(lines: Sequence[Line]) -> _Scan:
    """Header fields, each rank's (step, images/sec, line) figures after its warm-up, and the totals.

    Tagged lines belong to their rank; in untagged logs the k-th figure of a step number is rank k's.
    """
    scan = _Scan()
    measuring: dict[int | None, bool] = defaultdict(bool)
    seen: dict[int, int] = defaultdict(int)
    for line in lines:
        t = line.text
        for name, rx in _HEADER.items():
            m = rx.match(t)
            if m and name not in scan.header:
                scan.header[name] = (m.group(1).strip(), line.number)
        if t.startswith("Step") and "Img/sec" in t:
            measuring[line.rank] = True
        elif m := _STEP.match(t):
            if not measuring[line.rank]:
                scan.warmup_lines += 1  # a warm-up phase line: never a step time
                continue
            step = int(m.group(1))
            slot = line.rank if line.rank is not None else seen[step]
            seen[step] += 1
            scan.series[slot].append((step, float(m.group(2)), line.number))
        elif m := _TOTAL.match(t.strip()):
            scan.totals.append((line.rank if line.rank is not None else len(scan.totals), float(m.group(1))))
    return scan


def parse_tf_cnn_benchmarks(text: str, file: str = "<log>") -> ParsedRun:
    """A tf_cnn_benchmarks log (single or multi GPU, Horovod or not) as a ParsedRun."""
    lines = _lines(text)
    scan = _scan_tf_cnn(lines)
    header, series, totals = scan.header, scan.series, scan.totals
    for name in ("model", "global_batch", "per_device"):
        if name not in header:
            what = {"model": "Model:       resnet50", "global_batch": "Batch size:  256 global",
                    "per_device": "             64 per device"}[name]
            first = min((pts[0][2] for pts in series.values()), default=1)
            raise _error(file, first, "the tf_cnn_benchmarks header is incomplete",
                         f"a line like '{what}' before the step figures")
    if not series:
        raise _error(file, len(lines), "no step figures after the warm-up",
                     "'Step\\tImg/sec\\ttotal_loss' followed by lines like "
                     "'10\\timages/sec: 221.3 +/- 0.4 (jitter = 1.2)\\t8.183'")
    if not totals:
        raise _error(file, len(lines), "the run's summary is missing (log truncated?)",
                     "'total images/sec: 1751.23' between dashed lines after the step figures")
    per_device = int(float(header["per_device"][0]))
    global_batch = int(float(header["global_batch"][0]))
    devices = [d for d in header.get("devices", ("", 0))[0].split(",") if d.strip()]
    workers = len(devices) or max(1, global_batch // max(per_device, 1))
    variable_update = header.get("variable_update", ("", 0))[0]
    processes = workers if variable_update == "horovod" else 1
    if len(series) not in (1, processes):
        raise _error(file, None, f"step figures of {len(series)} ranks", f"those of 1 rank or of all {processes}")
    # every printed rank's figure is its own; one rank alone stands for the synchronous job
    items = global_batch // processes
    rank_items = global_batch if len(series) == 1 else items
    command, flags = _command_flags(lines, "tf_cnn_benchmarks.py")
    gpu = "CPU" if "cpu" in (devices[0].lower() if devices else "") else "GPU"
    device = _gpu_device(lines, gpu) if gpu == "GPU" else "CPU"
    ranks = tuple(RankResult(rank=slot, device=device, step_times=_interval_times(file, pts, items),
                             items_per_step=rank_items) for slot, pts in sorted(series.items()))
    dataset = header.get("dataset", ("imagenet (synthetic)", 0))[0]
    boundaries = [p[0] for p in series[min(series)] if p[0] != 1] or [1]
    display_every = boundaries[0]  # tf_cnn_benchmarks prints step 1, then every display_every steps
    settings = Settings(
        workload=TF_CNN, model=canonical_model(header["model"][0]), batch_per_worker=per_device,
        global_batch=global_batch, precision="fp16" if _truthy(flags.get("use_fp16")) else "fp32",
        xla=_truthy(flags.get("xla")) or _truthy(flags.get("xla_compile")),
        data_format=header.get("data_format", (None, 0))[0],
        data="synthetic" if "synthetic" in dataset else dataset.split()[0], workers=workers,
        warmup_steps=int(flags["num_warmup_batches"]) if flags.get("num_warmup_batches", "").isdigit() else None,
        steps=int(header["num_batches"][0]) if "num_batches" in header else None,
        # how gradients are exchanged (horovod, replicated, parameter_server) tells points apart: a Horovod
        # sweep's 1-worker run is its baseline, a replicated run is another series
        extra={"variable_update": variable_update} if variable_update else {},
    )
    rank_totals = [v for _, v in sorted(totals)]
    metrics = {
        "format": TF_CNN, "source": Path(file).name, "total_images_per_sec": rank_totals[0],
        "total_images_per_sec_ranks": rank_totals, "display_every": display_every,
        "warmup_lines_excluded": scan.warmup_lines,
        "step_times": "mean step time per display interval, from tf_cnn_benchmarks' cumulative images/sec"
        + ("; rank 0 stands for the synchronous job (global batch)" if len(series) == 1 and processes > 1 else ""),
    }
    for name in ("optimizer", "all_reduce_spec", "horovod_device"):
        if name in header:
            metrics[name] = header[name][0]
    software = {"tensorflow": header["tensorflow"][0]} if "tensorflow" in header else {}
    return ParsedRun(TF_CNN, file, settings, ranks, metrics, software, command, _tail(text))


# -- Horovod synthetic benchmark ---------------------------------------------------------------------

def parse_horovod_synthetic(text: str, file: str = "<log>") -> ParsedRun:
    """A Horovod synthetic benchmark log (rank 0's output) as a ParsedRun."""
    lines = _lines(text)
    model = batch = workers = None
    device_kind = "GPU"
    benchmark_started = any(line.text.strip().startswith("Running benchmark") for line in lines)
    measuring = not benchmark_started
    warmup: list[float] = []
    measured: list[float] = []
    mean = total = None
    for line in lines:
        t = line.text.strip()
        if line.rank not in (None, 0):
            continue
        if (m := re.match(r"^Model:\s*(\S+)", t)) and model is None:
            model = m.group(1)
        elif (m := re.match(r"^Batch size:\s*(\d+)", t)) and batch is None:
            batch = int(m.group(1))
        elif (m := re.match(r"^Number of (GPU|CPU)s?:\s*(\d+)", t)) and workers is None:
            device_kind, workers = m.group(1), int(m.group(2))
        elif t.startswith("Running benchmark"):
            measuring = True
        elif m := _ITER.match(t):
            if batch is None:
                raise _error(file, line.number, "an iteration figure before the batch size",
                             "'Batch size: 32' before the 'Iter #N' lines", t)
            ips = float(m.group(2))
            if ips <= 0:
                raise _error(file, line.number, "an iteration with no throughput", "img/sec > 0", t)
            (measured if measuring else warmup).append(batch / ips)
        elif m := _HVD_MEAN.match(t):
            mean = (float(m.group(2)), float(m.group(3)))
        elif m := _HVD_TOTAL.match(t):
            total = (int(m.group(1)), float(m.group(3)), float(m.group(4)), line.number)
    for value, what in ((model, "Model: ResNet50"), (batch, "Batch size: 32"), (workers, "Number of GPUs: 4")):
        if value is None:
            first = next((x.number for x in lines if _ITER.match(x.text.strip())), 1)
            raise _error(file, first, "the benchmark's header is incomplete",
                         f"a line like '{what}' before the iteration figures")
    if not measured:
        raise _error(file, len(lines), "no iteration figures", "lines like 'Iter #0: 185.9 img/sec per GPU'")
    if total is None:
        raise _error(file, len(lines), "the run's summary is missing (log truncated?)",
                     "'Total img/sec on 4 GPU(s): 745.2 +-4.8' after the iterations")
    if total[0] != workers:
        raise _error(file, total[3], "the summary's worker count differs from the header's",
                     f"'Total img/sec on {workers} {device_kind}(s): ...'", f"{total[0]} {device_kind}(s)")
    device = _gpu_device(lines, "GPU") if device_kind == "GPU" else "CPU"
    rank = RankResult(rank=0, device=device, warmup_times=warmup, step_times=measured,
                      items_per_step=batch * workers)
    settings = Settings(workload=HOROVOD, model=canonical_model(model), batch_per_worker=batch,
                        global_batch=batch * workers, workers=workers, warmup_steps=None, steps=None)
    metrics = {
        "format": HOROVOD, "source": Path(file).name, "img_sec_per_device": mean[0] if mean else None,
        "img_sec_per_device_conf": mean[1] if mean else None, "total_images_per_sec": total[1],
        "total_images_per_sec_conf": total[2], "iterations": len(measured), "warmup_iterations": len(warmup),
        "step_times": "mean batch time per iteration (batch / img/sec); rank 0 stands for the synchronous job",
    }
    command, _ = _command_flags(lines, "synthetic_benchmark.py")
    return ParsedRun(HOROVOD, file, settings, (rank,), metrics, {}, command, _tail(text))


# -- detection and records ---------------------------------------------------------------------------

def detect(text: str) -> str | None:
    """Which format a log is in, or None."""
    body = "\n".join(line.text for line in _lines(text))
    if re.search(r"^\d+\s+images/sec:", body, re.M) or re.search(r"^total images/sec:", body, re.M):
        return TF_CNN
    if re.search(r"^Iter #\d+: [0-9.]+ img/sec per", body, re.M) or "Total img/sec on" in body:
        return HOROVOD
    return None


def parse_log(text: str, file: str = "<log>", fmt: str = "auto") -> ParsedRun:
    """Parse a log in the given format (or the one it is detected to be)."""
    if fmt == "auto":
        detected = detect(text)
        if detected is None:
            first = next((line for line in text.splitlines() if line.strip()), "")
            raise _error(file, 1 if first else None, "not a log repro can import",
                         "tf_cnn_benchmarks output ('10\\timages/sec: ...', 'total images/sec: ...') or Horovod's "
                         "synthetic benchmark output ('Iter #0: ... img/sec per GPU')", first[:80])
        fmt = detected
    if fmt == TF_CNN:
        return parse_tf_cnn_benchmarks(text, file)
    if fmt == HOROVOD:
        return parse_horovod_synthetic(text, file)
    raise InputError(f"unknown log format '{fmt}': expected auto, {', '.join(FORMATS)}")


def import_stack(stack: str) -> StackRef:
    """The StackRef imported records carry: a manifest file's, or a name's (hash from the name)."""
    path = Path(stack)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        from repro.manifest import load_stack

        loaded = load_stack(path)
        return StackRef(name=loaded.stack.name, hash=loaded.hash, image_hash=loaded.image_hash, file=str(path),
                        manifest=loaded.stack.model_dump(mode="json"))
    if not _STACK_NAME.match(stack):
        raise InputError(f"--stack {stack!r}: expected a stack name (letters, digits, . _ -) or a manifest file")
    digest = hashlib.sha256(f"repro-import:{stack}".encode()).hexdigest()[:12]
    return StackRef(name=stack, hash=digest)


def to_record(parsed: ParsedRun, stack: StackRef, *, hosts: int | None = None,
              precision: str | None = None, xla: bool | None = None) -> RunRecord:
    """A RunRecord (origin import) from a parsed log; options state what the log does not say."""
    updates: dict[str, Any] = {}
    if hosts is not None:
        updates["hosts"] = hosts
    if precision is not None:
        updates["precision"] = precision
    if xla is not None:
        updates["xla"] = xla
    settings = parsed.settings.model_copy(update=updates) if updates else parsed.settings
    settings = Settings.model_validate(settings.model_dump())
    return RunRecord(id=new_id(), created=now_iso(), status="ok", origin="import", stack=stack, settings=settings,
                     runtime="imported", ranks=list(parsed.ranks), metrics=dict(parsed.metrics),
                     software=dict(parsed.software), command=list(parsed.command), log_tail=parsed.tail)


def import_log(path: str | Path, stack: StackRef, *, fmt: str = "auto", hosts: int | None = None,
               precision: str | None = None, xla: bool | None = None) -> RunRecord:
    """Read and parse one log file into a record."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror or exc})") from None
    return to_record(parse_log(text, str(p), fmt), stack, hosts=hosts, precision=precision, xla=xla)
