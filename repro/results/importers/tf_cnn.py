"""tf_cnn_benchmarks output (github.com/tensorflow/benchmarks), TF 1.x and 2.x, as ParsedRuns (pure).

What the program prints (benchmark_cnn.py): a header (``TensorFlow:``, ``Model:``, ``Dataset:``,
``Mode:``, ``Batch size:  N global`` and ``M per device`` on the next line, indented or not, ``Num
batches:``, ``Devices:``, ``Data format:``, ``Variables:``, ``AllReduce:``, ``Horovod on:``), ``Running
warm up`` / ``Done warm up``, ``Step Img/sec total_loss``, then step 1 and every ``--display_every``
steps ``10 images/sec: 221.3 +/- 0.4 (jitter = 1.2) 8.183`` (a running mean since the warm-up), and
``total images/sec: 1751.23`` between dashed lines. Under Horovod every rank prints all of it (the total
is each rank's estimate of the whole job's), interleaved or tagged ``[1,R]<stdout>:``.

The run's figure is the program's own ``total images/sec`` (rank 0's when ranks are tagged, else the
first printed). The step samples are the mean step time of each display interval, reconstructed from
the running means: steps 1..n took n x batch / (images/sec at n) seconds.

A file may hold several runs (a script looping over models, batch sizes or GPU counts): a run starts at
a header or a ``Step`` line once the previous run of the same output stream printed figures or failed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split
from repro.results.importers.command import Command, find_commands, truthy
from repro.results.importers.lines import Line, error, split_lines
from repro.results.importers.runs import ParsedRun, Shown, tail_of
from repro.results.importers.seen import seen_in
from repro.results.importers.tf_cnn_samples import Scan, samples
from repro.workloads.tf_cnn_benchmarks import canonical_model

TF_CNN = "tf_cnn_benchmarks"
EXAMPLE = "tf_cnn_benchmarks output ('10\\timages/sec: ...', 'total images/sec: ...')"
SCRIPTS = ("tf_cnn_benchmarks.py",)

_HEADER = {
    "tensorflow": re.compile(r"^TensorFlow:\s+(\S+)"),
    "model": re.compile(r"^Model:\s+(\S+)"),
    "dataset": re.compile(r"^(?:Dataset|Data):\s+(.+)$"),
    "mode": re.compile(r"^Mode:\s+(.+)$"),
    "global_batch": re.compile(r"^Batch size:\s+([0-9.]+)\s+global"),
    "per_device": re.compile(r"^(?:Batch size:\s+)?([0-9.]+)\s+per device"),
    "num_batches": re.compile(r"^Num batches:\s+(\d+)"),
    "devices": re.compile(r"^Devices:\s+\[(.*)\]"),
    "data_format": re.compile(r"^Data format:\s+(\w+)"),
    "variable_update": re.compile(r"^Variables:\s+(\S+)"),
    "all_reduce": re.compile(r"^AllReduce:\s+(\S+)"),
    "horovod_device": re.compile(r"^Horovod on:\s+(\S+)"),
    "use_nccl": re.compile(r"^Use NCCL:\s+(\S+)"),
}
_STEP = re.compile(r"^(\d+)\s+images/sec:\s*([0-9.]+)")
_STEP_HEADER = re.compile(r"^Step\s+Img/sec")
_TOTAL = re.compile(r"^total images/sec:\s*([0-9.]+)")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\)")
_ERROR = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception):\s*\S")
# a crash: glog's fatal lines (TensorFlow's 'YYYY-MM-DD hh:mm:ss.us: F file.cc:N] ...', glog's 'F0603 16:28:14.9
# 123 file.cc:N] ...') and CPython's 'Fatal Python error: Aborted' (faulthandler)
_FATAL = re.compile(r"^(?:\d{4}-\d\d-\d\d [\d:.]+: F [\w/.-]+:\d+\]|F\d{4} [\d:.]+\s+\d+ [\w/.-]+:\d+\]|"
                    r"Fatal Python error: )")


def kind(line: Line) -> str:
    """What a line is to this format: header, step_header, step, total, warmup, done_warmup, failure, other."""
    t = line.bare
    if _STEP.match(t):
        return "step"
    if _TOTAL.match(t):
        return "total"
    if _STEP_HEADER.match(t):
        return "step_header"
    if t.startswith("Running warm up"):
        return "warmup"
    if t.startswith("Done warm up"):
        return "done_warmup"
    if _TRACEBACK.match(t) or _ERROR.match(t) or _FATAL.match(t):
        return "failure"
    if any(rx.match(t) for rx in _HEADER.values()):
        return "header"
    return "other"


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """The run each line belongs to (None: not this format's), see the module docstring."""
    index: dict[int | None, int] = defaultdict(int)
    done: dict[int | None, bool] = defaultdict(bool)  # the stream's current run printed figures or failed
    totals: dict[int | None, bool] = defaultdict(bool)
    warming: dict[int | None, bool] = defaultdict(bool)
    out: list[int | None] = []
    for line in lines:
        k, key = kind(line), line.rank
        if k in ("warmup", "done_warmup"):
            warming[key] = k == "warmup"
        if k == "step" and warming[key]:
            out.append(index[key])  # a figure of the warm-up: not the end of anything
            continue
        start = k in ("header", "step_header") and done[key]
        if k == "step" and totals[key] and (key is not None or int(_STEP.match(line.bare).group(1)) == 1):
            start = True  # a headerless run after a summary
        if start:
            index[key] += 1
            done[key] = totals[key] = False
        if k in ("step", "total", "failure"):
            done[key] = True
        totals[key] = totals[key] or k == "total"
        out.append(None if k == "other" else index[key])
    return out


def _scan(lines: Sequence[Line]) -> Scan:
    """Header fields, each printing stream's (step, images/sec, line) after its warm-up, totals, failure.

    Tagged lines belong to their rank; in untagged logs the k-th figure of a step number is slot k's.
    """
    scan = Scan()
    measuring: dict[int | None, bool] = defaultdict(lambda: True)
    seen: dict[int, int] = defaultdict(int)
    traceback = False
    for i, line in enumerate(lines):
        t, k = line.bare, kind(line)
        if line.elision:
            scan.elided.append(line.number)
        elif k == "header":
            for name, rx in _HEADER.items():
                if (m := rx.match(t)) and name not in scan.header:
                    scan.header[name] = (m.group(1).strip(), line.number)
        elif k in ("warmup", "done_warmup"):
            measuring[line.rank] = k == "done_warmup"
        elif k == "step":
            m = _STEP.match(t)
            if not measuring[line.rank]:
                scan.warmup_lines += 1  # printed during the warm-up: never a sample
                continue
            step = int(m.group(1))
            slot = line.rank if line.rank is not None else seen[step]
            seen[step] += 1
            scan.series[slot].append((step, float(m.group(2)), line.number))
        elif k == "total":
            scan.totals.append((line.rank, float(_TOTAL.match(t).group(1)), line.number))
        elif k == "failure" and _FATAL.match(t):
            if scan.failure is None or not _FATAL.match(scan.failure[0]):  # the first fatal line is the cause
                scan.failure = (t, line.number)
        elif k == "failure":
            traceback = traceback or bool(_TRACEBACK.match(t))
            if scan.failure is not None and _FATAL.match(scan.failure[0]):
                continue
            if _ERROR.match(t) or scan.failure is None:
                detail = lines[i + 1].bare if i + 1 < len(lines) and t.endswith("found.") else ""
                scan.failure = (f"{t} {detail}".strip(), line.number)
    if scan.failure and not traceback and not _ERROR.match(scan.failure[0]) and not _FATAL.match(scan.failure[0]):
        scan.failure = None
    return scan


def _number(value: str | None) -> int | None:
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


def _data(shown: Shown, header: dict[str, tuple[str, int]], cmd: Command | None) -> None:
    if "dataset" in header:
        text, line = header["dataset"]
        name = text.split()[0].lower()
        synthetic = "synthetic" in text.lower()
        shown.put("data", "synthetic" if synthetic else name, line)
        shown.put("extra.data_name", name, line)
    if cmd:
        data_dir, name = cmd.flag("data_dir"), cmd.flag("data_name")
        shown.put("data", (name or "real") if data_dir else "synthetic", cmd.line)
        shown.put("extra.data_name", name.lower() if name else None, cmd.line)


def _mode(shown: Shown, header: dict[str, tuple[str, int]], cmd: Command | None) -> None:
    if "mode" in header:
        text, line = header["mode"]
        low = text.lower()
        mode = "inference" if "forward" in low else "evaluation" if "eval" in low else "training" if "train" in low \
            else low
        shown.put("extra.mode", mode, line)
    if cmd:
        mode = "inference" if truthy(cmd.flag("forward_only")) else "evaluation" if truthy(cmd.flag("eval")) \
            else "training"
        shown.put("extra.mode", mode, cmd.line)


def _devices(header: dict[str, tuple[str, int]]) -> int | None:
    """How many devices the header's Devices: line lists (one process's, in a distributed job)."""
    text = header.get("devices", ("", 0))[0]
    return len([d for d in text.split(",") if d.strip()]) or None


def _workers(shown: Shown, header: dict[str, tuple[str, int]], cmd: Command | None, ranks: set[int]) -> None:
    """The job's worker (device) count. What the header prints wins over the command line, which a paste
    may show incompletely: 'N global' is every device's batch (benchmark_cnn.py: the per-device batch x
    the devices of a process x the processes), so global / per device counts the job's devices."""
    horovod = shown.get("extra.variable_update") == "horovod"
    distributed = "/job:" in header.get("devices", ("", 0))[0]  # a worker of a distributed job lists its own
    per, total = shown.get("batch_per_worker"), _number(header.get("global_batch", ("", 0))[0])
    # a distributed job's process prints 'global' as its own batch in TF 1.5's benchmark_cnn.py, as the job's
    # in later ones: only a global batch larger than its own devices' tells the job's device count
    if per and total and total % per == 0 and not (distributed and total // per == _devices(header)):
        shown.put("workers", total // per, header["global_batch"][1])
    if "devices" in header and not distributed:
        shown.put("workers", _devices(header), header["devices"][1])
    if distributed and _devices(header) and per and total and total // per != _devices(header):
        shown.put("extra.devices_per_process", _devices(header), header["devices"][1])
    if cmd and horovod:
        shown.put("workers", cmd.processes, cmd.line)
    elif cmd and not distributed:
        shown.put("workers", _number(cmd.flag("num_gpus")) or 1, cmd.line)
    if horovod and ranks:
        shown.put("workers", max(ranks) + 1, None)


def disagreements(header: dict[str, tuple[str, int]], cmd: Command | None, shown: Shown) -> list[str]:
    """Where the command line a log shows says otherwise than the header the program printed."""
    if cmd is None:
        return []
    out = []
    workers = shown.get("workers")
    horovod = shown.get("extra.variable_update") == "horovod"
    said = cmd.processes if horovod else (_number(cmd.flag("num_gpus")) or 1)
    devices = _devices(header)
    if devices and said and not horovod and said != devices:
        out.append(f"the command line (line {cmd.line}) runs {said} GPU(s) per process"
                   f"{'' if cmd.flag('num_gpus') else ' (no --num_gpus: 1)'}, the header's Devices: (line "
                   f"{header['devices'][1]}) lists {devices}; the header is used (workers={workers})")
    for name, flag in (("model", "model"), ("batch_per_worker", "batch_size")):
        value = cmd.flag(flag)
        if value and shown.where.get(name) != cmd.line and str(shown.get(name)) not in (value, canonical_model(value)):
            out.append(f"the command line (line {cmd.line}) says --{flag}={value}, the header says "
                       f"{shown.get(name)}; the header is used")
    return out


def settings_shown(header: dict[str, tuple[str, int]], cmd: Command | None, ranks: set[int]) -> Shown:
    """The settings a run's header and command line show (see repro.results.importers.runs)."""
    s = Shown()

    def head(name: str) -> tuple[str | None, int | None]:
        value, line = header.get(name, (None, None))
        return value, line

    def flag(*names: str) -> str | None:
        return cmd.flag(*names) if cmd else None

    cl = cmd.line if cmd else None
    model, line = head("model")
    s.put("model", canonical_model(model) if model else None, line)
    s.put("model", canonical_model(flag("model")) if flag("model") else None, cl)
    per, line = head("per_device")
    s.put("batch_per_worker", _number(per), line)
    s.put("batch_per_worker", _number(flag("batch_size")), cl)
    update, line = head("variable_update")
    s.put("extra.variable_update", update, line)
    s.put("extra.variable_update", flag("variable_update") or ("parameter_server" if cmd else None), cl)
    _workers(s, header, cmd, ranks)
    total, line = head("global_batch")
    s.put("global_batch", _number(total), line)
    if s.get("batch_per_worker") and s.get("workers"):
        s.put("global_batch", s.get("batch_per_worker") * s.get("workers"), None)
    fp16 = truthy(flag("use_fp16"))
    s.put("precision", None if cmd is None else "fp16" if fp16 else "fp32", cl)
    xla = truthy(flag("xla")) or truthy(flag("xla_compile"))
    s.put("xla", None if cmd is None else bool(xla), cl)
    fmt, line = head("data_format")
    s.put("data_format", fmt, line)
    s.put("data_format", flag("data_format"), cl)
    _data(s, header, cmd)
    _mode(s, header, cmd)
    variable_update = s.get("extra.variable_update")
    reduce, line = head("all_reduce")
    s.put("extra.all_reduce", None if reduce in (None, "None") else reduce, line)
    if variable_update != "horovod":
        s.put("extra.all_reduce", flag("all_reduce_spec"), cl)
        s.put("extra.parameter_device", flag("local_parameter_device") or ("gpu" if cmd else None), cl)
    else:
        device, line = head("horovod_device")
        s.put("extra.horovod_device", device, line)
        s.put("extra.horovod_device", flag("horovod_device"), cl)
        s.put("backend", cmd.controller if cmd else None, cl)  # Horovod's controller (mpirun: MPI)
    nccl, line = head("use_nccl")
    s.put("extra.nccl", truthy(nccl), line)
    s.put("hosts", cmd.hosts if cmd else None, cl)
    steps, line = head("num_batches")
    s.put("steps", _number(steps), line)
    s.put("steps", _number(flag("num_batches")), cl)
    s.put("warmup_steps", _number(flag("num_warmup_batches")), cl)
    return s


def _figure(totals: Sequence[tuple[int | None, float, int]]) -> tuple[float | None, int | None]:
    if not totals:
        return None, None
    tagged = [t for t in totals if t[0] is not None]
    _, value, line = min(tagged, key=lambda t: t[0]) if tagged else totals[0]
    return value, line


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One run's lines (see run_indexes) as a ParsedRun; InputError when nothing was measured. `given`:
    settings stated outside the log (repro import --set), used where the log does not show them."""
    scan = _scan(lines)
    commands = find_commands(lines, SCRIPTS)
    cmd = commands[-1] if commands else None
    tagged = {line.rank for line in lines if line.rank is not None}
    shown = settings_shown(scan.header, cmd, tagged)
    for name, value in (given or {}).items():
        shown.put(name, value, None)
    figure, figure_line = _figure(scan.totals)
    if not scan.series and figure is None and scan.failure is None:
        raise error(file, lines[-1].number, "the run has no step figures and no summary (log cut before the "
                    "run measured anything?)", "'total images/sec: 1751.23' after lines like "
                    "'10\\timages/sec: 221.3 +/- 0.4 (jitter = 1.2)\\t8.183'", lines[-1].bare)
    seen = seen_in(lines)
    ranks, warnings = samples(scan, shown, seen, figure is None and scan.failure is None)
    noted = disagreements(scan.header, cmd, shown)
    warnings = [*noted, *warnings]
    failure = None
    if scan.failure and figure is None:  # an error or a crash before the summary: a failed run, with its reason
        failure = f"{scan.failure[0][:300]} (line {scan.failure[1]})"
    steps, last = shown.get("steps"), max((p[-1][0] for p in scan.series.values() if p), default=None)
    if failure is None and figure is None and steps and last is not None and last < steps and not scan.elided:
        failure = (f"the log ends at step {last} of {steps}, before the summary (cut, or the run died without "
                   f"an error message; line {lines[-1].number})")
    metrics = {"format": TF_CNN, "program": TF_CNN, "total_images_per_sec": figure, "noted": noted,
               "total_images_per_sec_ranks": [v for _, v, _ in scan.totals],
               "warmup_lines_excluded": scan.warmup_lines, "elided_lines": scan.elided[:20]}
    software = dict(seen.software)
    if "tensorflow" in scan.header:
        software["tensorflow"] = scan.header["tensorflow"][0]
    return ParsedRun(
        format=TF_CNN, file=file, first_line=lines[0].number, last_line=lines[-1].number, settings=shown.values,
        where=shown.where, ranks=ranks, figure=figure, figure_line=figure_line, metrics=metrics, software=software,
        devices=seen.names, command=cmd.argv if cmd else (), env=cmd.env if cmd else {}, failure=failure,
        warnings=tuple(warnings), tail=tail_of([line.text for line in lines]))


def _ours(group: Sequence[Line]) -> bool:
    """Whether a group of lines is tf_cnn_benchmarks output: 'Model:' alone is also Horovod's, and a
    traceback alone is anyone's unless it names the program."""
    for line in group:
        k = kind(line)
        if k in ("step", "total", "step_header") or (k == "header" and not _HEADER["model"].match(line.bare)):
            return True
    return any("tf_cnn_benchmarks" in line.text or "benchmark_cnn" in line.text for line in group) and \
        any(kind(line) == "failure" for line in group)


def span(group: Sequence[Line]) -> tuple[int, int]:
    """A run's lines from its first line of this format (the lines before it: its command, a previous run's tail)."""
    first = next((line.number for line in group if kind(line) != "other"), group[0].number)
    return first, group[-1].number


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each tf_cnn_benchmarks run (complete or not) in a log's lines."""
    return [group for group in split.groups(lines, run_indexes(lines)) if _ours(group)]


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every tf_cnn_benchmarks run in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]


def parse_tf_cnn_output(stdout: str, *, source: str = "<stdout>") -> ParsedRun:
    """The one tf_cnn_benchmarks run in `stdout` (one process or several ranks, tagged or not).

    For ``repro bench --workload tf_cnn_benchmarks``: the returned ParsedRun has the per-rank step
    samples (``ranks``: RankResult with ``step_times`` and ``items_per_step``), the run's own summary
    (``figure``, images/sec, None when the output has no ``total images/sec`` line), the settings the
    program printed (``settings``, RunRecord names, absent = not printed) and ``failure`` (the error
    when the program failed before measuring). Raises InputError (naming `source`:line) when the output
    holds no run or several.
    """
    lines = split_lines(stdout)
    runs = read(lines, source)
    if len(runs) != 1:
        raise error(source, lines[-1].number if lines else None,
                    f"{'no' if not runs else len(runs)} tf_cnn_benchmarks runs in this output",
                    "the output of one tf_cnn_benchmarks run")
    return runs[0]
