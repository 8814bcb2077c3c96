"""pytorch/examples' ImageNet training (``imagenet/main.py``) as throughput runs (pure).

What the program prints for every ``--print-freq`` (default 10) training iterations, in every process
(``ProgressMeter.display``; versions before 2019 print ``Prec@1`` for ``Acc@1`` and the index from 0)::

    Epoch: [0][   11/5005]	Time  0.605 ( 0.806)	Data  0.000 ( 0.187)	Loss 7.1570e+00 (7.0590e+00)	Acc@1 ...

``Time`` is ``batch_time``: the wall time of that one iteration, data loading included (``end`` is taken at the end
of the previous iteration), then in brackets its running mean since the epoch began. The program prints no
images/sec: the run's figure is *derived*, the images one iteration of the job processes over the mean of the
logged ``Time`` values, and the record says so. Rules, each from main.py:

* batch: ``-b``/``--batch-size`` on the command line the log shows, or the program's default 256 where the shown
  command leaves it out (``--set batch=N`` where no command is shown). Without ``--multiprocessing-distributed``
  one process runs the whole batch (DataParallel over the visible GPUs): the job's batch is ``-b``. With it
  (or where the log shows several ``Use GPU:`` processes), ``-b`` is the batch of one node, each of its
  ``ngpus_per_node`` processes takes ``b / ngpus_per_node`` and prints its own lines: the reader takes the batch
  of one process and the workers from ``--set batch=N,workers=N`` (the job's batch is their product).
* workers: ``Use GPU: N for training`` is printed once by each process that runs on one chosen GPU; the distinct
  N a log shows are the processes of its node. One process with one GPU (``--gpu N``, or the warning ``nccl
  backend >=2.5 requires GPU count>1``, printed when ``torch.cuda.device_count() == 1``) is one worker.
  Otherwise ``--set workers=N``: a DataParallel run's GPU count is not in the log.
* warm-up: the first logged line of each epoch (the loader's worker processes start again every epoch, and the
  first iteration of a run also holds cuDNN's autotuning) is left out of the figure.
* model: ``=> creating model 'resnet18'`` / ``=> using pre-trained model '...'`` (``-a``, default resnet18).
  ``=> Dummy data is used!``: synthetic data (``--dummy``).

A new run starts at a ``=> creating model`` line or a command after iteration lines, or where the
(epoch, iteration) pair goes back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split
from repro.results.importers.command import Command, find_commands
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of
from repro.results.record import RankResult
from repro.workloads.tf_cnn_benchmarks import canonical_model

PYTORCH_IMAGENET = "pytorch_imagenet"
EXAMPLE = ("pytorch/examples' ImageNet training ('Epoch: [0][ 11/5005]  Time  0.605 ( 0.806)  Data  0.000 ( 0.187)"
           "  Loss ...')")
DEFAULT_BATCH = 256  # main.py: parser.add_argument('-b', '--batch-size', default=256)
SCRIPT = "main.py"
_ITER = re.compile(r"^Epoch: \[(\d+)\]\[\s*(\d+)/(\d+)\]\s+Time\s+([0-9.]+)\s+\(\s*([0-9.]+)\)\s+"
                   r"Data\s+([0-9.]+)\s+\(\s*([0-9.]+)\)\s+Loss\s")
_MODEL = re.compile(r"^=> (?:creating|using pre-trained) model '([^']+)'")
_GPU = re.compile(r"^Use GPU: (\d+) for training")
_ONE_GPU = "nccl backend >=2.5 requires GPU count>1"  # main.py warns so when torch.cuda.device_count() == 1
_DUMMY = "=> Dummy data is used!"


def _starts(line: Line) -> bool:
    return bool(_MODEL.match(line.bare)) or bool(find_commands([line], (SCRIPT,)))


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """The run each line belongs to: a new one at a model/command line after iterations, or where steps go back."""
    out: list[int | None] = []
    index, measured, last = 0, False, None
    for line in lines:
        m = _ITER.match(line.bare)
        if m is None:
            if measured and _starts(line):
                index, measured, last = index + 1, False, None
            out.append(index)
            continue
        at = (int(m.group(1)), int(m.group(2)))
        if last is not None and at <= last:
            index += 1
        measured, last = True, at
        out.append(index)
    # a group without iteration lines (prose, a command that printed nothing yet) is no run of this format
    with_iters = {i for i, line in zip(out, lines, strict=True) if _ITER.match(line.bare)}
    return [i if i in with_iters else None for i in out]


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each run of pytorch/examples' ImageNet training in a log's lines."""
    if not any(_ITER.match(line.bare) for line in lines):
        return []
    return split.groups(lines, run_indexes(lines))


def _command(lines: Sequence[Line]) -> Command | None:
    commands = find_commands(lines, (SCRIPT,))
    return commands[-1] if commands else None


def _distributed(command: Command | None, lines: Sequence[Line]) -> bool:
    """Whether the run is one of several processes (their lines interleave, each with its share of -b)."""
    gpus = {m.group(1) for line in lines if (m := _GPU.match(line.bare))}
    return len(gpus) > 1 or (command is not None and command.flag("multiprocessing_distributed") is not None)


def _workers(command: Command | None, lines: Sequence[Line], shown: Shown) -> None:
    """Put the workers where the log says: one process on one GPU."""
    gpu = next((line for line in lines if _GPU.match(line.bare)), None)
    if gpu is not None:
        shown.put("workers", 1, gpu.number)  # --gpu N without --multiprocessing-distributed: one GPU
        return
    warned = next((line for line in lines if _ONE_GPU in line.text), None)
    nodes = command.flag("world_size") if command is not None else None
    if warned is not None and command is not None and not (nodes and nodes.isdigit() and int(nodes) > 1):
        shown.put("workers", 1, warned.number)  # one process, DataParallel over the one GPU there is


def _batch(command: Command | None, shown: Shown) -> str:
    """Put the job's batch the command gives; return where it came from (for the record's provenance)."""
    if command is None:
        return "--set"
    given = command.flag("b", "batch_size")
    batch = int(given) if given and given.isdigit() else DEFAULT_BATCH
    # the program's default is not in the log: no line shows it (the record's provenance says where it came from)
    shown.put("global_batch", batch, command.line if given else None)
    return "the command's -b" if given else f"the program's default -b {DEFAULT_BATCH} (the command leaves it out)"


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One run's iteration lines (with its command, model and GPU lines) as a throughput run."""
    iters = [(line, m) for line in lines if (m := _ITER.match(line.bare))]
    if not iters:
        raise error(file, lines[0].number, "no iteration line of pytorch/examples' ImageNet training", EXAMPLE)
    shown = Shown()
    shown.put("workload", PYTORCH_IMAGENET, None)
    shown.put("extra.program", PYTORCH_IMAGENET, None)
    shown.put("extra.framework", "pytorch", None)
    command = _command([line for line in lines if line.number < iters[0][0].number])
    model = next(((line, m) for line in lines if (m := _MODEL.match(line.bare))), None)
    if model is not None:
        shown.put("model", canonical_model(model[1].group(1)), model[0].number)
    elif command is not None:
        shown.put("model", canonical_model(command.flag("a", "arch") or "resnet18"), command.line)
    dummy = next((line for line in lines if line.bare.startswith(_DUMMY)), None)
    if dummy is not None:
        shown.put("data", "synthetic", dummy.number)
    if _distributed(command, lines):
        # each process runs -b / ngpus_per_node and prints its own lines: batch and workers from --set
        batch_from = "--set"
        shown.put("extra.distributed", True, command.line if command else None)
    else:
        _workers(command, lines, shown)
        batch_from = _batch(command, shown)
    if shown.get("workers") == 1 and isinstance(shown.get("global_batch"), int):  # the log's own, before --set
        shown.put("batch_per_worker", shown.get("global_batch"), shown.where.get("global_batch"))
    for name, value in (given or {}).items():
        shown.put(name, value, None)
    workers = shown.get("workers")
    job_batch = shown.get("global_batch")
    if job_batch is None and isinstance(shown.get("batch_per_worker"), int) and isinstance(workers, int):
        job_batch = shown.get("batch_per_worker") * workers
    if job_batch is None and isinstance(shown.get("batch_per_worker"), int) and workers == 1:
        job_batch = shown.get("batch_per_worker")
    first_of_epoch, seen_epochs = [], set()
    for _line, m in iters:
        first_of_epoch.append(m.group(1) not in seen_epochs)
        seen_epochs.add(m.group(1))
    warm = [float(m.group(4)) for (_, m), first in zip(iters, first_of_epoch, strict=True) if first]
    steps = [float(m.group(4)) for (_, m), first in zip(iters, first_of_epoch, strict=True) if not first]
    window = steps or warm
    span = f"lines {iters[0][0].number}-{iters[-1][0].number}"
    metrics: dict[str, Any] = {
        "format": PYTORCH_IMAGENET, "program": PYTORCH_IMAGENET,
        "sec_per_iter_mean": round(sum(window) / len(window), 6),
        "stated": {"Time per iteration": f"{span} (each logged iteration's own time, data loading included)"},
        "derived": {},
    }
    figure = None
    warnings: list[str] = []
    if isinstance(job_batch, int):
        figure = round(job_batch * len(window) / sum(window), 3) if sum(window) else None
        if "global_batch" in shown and "global_batch" not in shown.where and "global_batch" not in (given or {}):
            metrics["derived"]["global_batch"] = batch_from
        metrics["derived"]["figure"] = (f"the job's batch {job_batch} per iteration (batch from {batch_from}) over "
                                        f"the mean stated Time of the logged iterations but each epoch's first")
        if isinstance(workers, int) and figure is not None:
            metrics["images_per_sec_per_worker"] = round(figure / workers, 3)
    else:
        raise error(file, iters[0][0].number, "the log shows no batch size of this run (no command line, or "
                    "several processes, each with its share of -b)",
                    f"--set '{file.rsplit('/', 1)[-1]}:batch=N,workers=N' (batch: what one process runs)")
    metrics["derived"]["step times"] = "each logged iteration's stated Time (the first of each epoch: warm-up)"
    if not steps:
        warnings.append("only the first logged iteration of each epoch is in the log: the figure includes "
                        "the loader's start")
    ranks = (RankResult(rank=0, device="", warmup_times=warm if steps else [], step_times=window,
                        items_per_step=job_batch),)
    return ParsedRun(format=PYTORCH_IMAGENET, file=file, first_line=lines[0].number, last_line=lines[-1].number,
                     settings=shown.values, where=shown.where, ranks=ranks, figure=figure, metrics=metrics,
                     command=command.argv if command else (), env=command.env if command else {},
                     warnings=tuple(warnings), tail=tail_of([line.text for line in lines]))


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every run of pytorch/examples' ImageNet training in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
