"""All-reduce sweep (MLBench task 0.a, reported the nccl-tests way): latency and bandwidth per size.

    mpirun -np 2 python -m repro.workloads.allreduce [--min-exp 0 --max-exp 7.5 --num 26 | --sizes 1,1024]
        [--dtypes fp32] [--iterations 50] [--large-iterations 10 --large-bytes 1048576] [--warmup-iterations 5]

The defaults (26 sizes from 4 bytes to 126 MB of fp32, as nccl-tests' default doubling sweep; fewer
timed iterations from 1 MiB on, where one all-reduce already takes milliseconds) finish in about a
minute on 2 local workers; rank 0 prints a row per size as it is measured, as nccl-tests does.

Every size (in elements) is reduced along two paths, side by side in one run:

* raw: `MPI_Allreduce` of host buffers through mpi4py, between the same ranks and with the same libmpi
  Horovod uses (each iteration after a barrier, as OSU's benchmarks do). It answers "is the fabric
  healthy?" (seed 004's task 0.a, nccl-tests' purpose). Float types MPI has (fp32, fp64) only; without
  mpi4py in the environment the raw path is recorded as unavailable, with the reason. The raw sweep runs
  first, before Horovod starts: Horovod's background thread would otherwise compete for the cores.
* horovod: `hvd.allreduce(op=Sum)` through whatever controller and operations the processes were launched
  with (MPI by default, Gloo under repro.workloads.gloo, NCCL for GPU tensors when Horovod has it), with
  its background cycle and tensor fusion (`--cycle-time-ms`, `--fusion-threshold`, or HOROVOD_* in the
  stack's env). It answers "what does Horovod get out of the fabric, and which setting fixes it?".

Every iteration is timed on every rank, from the call until the reduced buffer is usable; the latency of
an iteration is the mean over ranks (OSU convention). Rank r contributes r+1 everywhere, so every element
of the result must be n(n+1)/2: elements that are not are counted as wrong (nccl-tests' #wrong).

algbw = bytes / latency; busbw = algbw * 2(n-1)/n, the data a ring all-reduce moves over each link
(nccl-tests' definition). For n = 1 nothing crosses a link, so busbw is 0 there by the same formula.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from . import _common as common
from ._common import WorkloadError, run_main
from .comm import DIST_BACKEND
from .spec import ArgumentParser, Option, WorkloadSpec

DTYPES = {"fp32": ("float32", 4), "fp16": ("float16", 2), "fp64": ("float64", 8), "int32": ("int32", 4)}
RAW_DTYPES = ("fp32", "fp64", "int32")  # MPI has no 16-bit float to sum


MIN_EXP, MAX_EXP, NUM = 0.0, 7.5, 26  # the default sweep: 1 to 31.6M elements (126 MB of fp32), 26 sizes
ITERATIONS, LARGE_ITERATIONS, LARGE_BYTES, WARMUP = 50, 10, 1 << 20, 5
LARGE_WARMUP = 2  # at most, from --large-bytes on: one such all-reduce takes milliseconds to seconds


def default_sizes(min_exp: float = MIN_EXP, max_exp: float = MAX_EXP, num: int = NUM) -> list[int]:
    """Element counts: `num` points of logspace(min_exp, max_exp), rounded, unique, ascending."""
    if num < 1:
        raise WorkloadError(f"--num must be >= 1, got {num}")
    if max_exp < min_exp or min_exp < 0:
        raise WorkloadError(f"need 0 <= --min-exp <= --max-exp, got {min_exp} and {max_exp}")
    points = [min_exp] if num == 1 else [min_exp + (max_exp - min_exp) * i / (num - 1) for i in range(num)]
    # same values as np.unique(np.round(np.logspace(min_exp, max_exp, num)).astype(int))
    return sorted({max(1, round(10.0**p)) for p in points})


def parse_sizes(text: str) -> list[int]:
    """'1,1024,1e6' -> [1, 1024, 1000000] (unique, ascending)."""
    sizes = set()
    for item in text.split(","):
        try:
            value = float(item)
        except ValueError:
            raise WorkloadError(f"bad size '{item}' in --sizes: expected element counts like 1,1024,1e6") from None
        if value < 1 or value != int(value):
            raise WorkloadError(f"bad size '{item}' in --sizes: element counts are whole numbers >= 1")
        sizes.add(int(value))
    return sorted(sizes)


def parse_dtypes(text: str) -> list[str]:
    """'fp32,fp16' -> ['fp32', 'fp16'] (known names only)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in DTYPES]
    if unknown or not names:
        raise WorkloadError(f"unknown dtype {unknown or text!r}: choose from {', '.join(DTYPES)}")
    return names


def bus_factor(world_size: int) -> float:
    """busbw / algbw for all-reduce: 2(n-1)/n (0 for a single worker)."""
    return 2.0 * (world_size - 1) / world_size


def summarize(dtype: str, elements: int, latencies: Sequence[float], world_size: int) -> dict[str, Any]:
    """One result row: raw latencies and their median/mean, with bandwidths in bytes/second."""
    nbytes = elements * DTYPES[dtype][1]
    lat_median = common.median(latencies)
    lat_mean = common.mean(latencies)
    algbw_median = nbytes / lat_median if lat_median else None
    algbw_mean = nbytes / lat_mean if lat_mean else None
    factor = bus_factor(world_size)
    return {
        "dtype": dtype,
        "elements": elements,
        "bytes": nbytes,
        "latencies": [float(t) for t in latencies],
        "latency_median": lat_median,
        "latency_mean": lat_mean,
        "latency_min": min(latencies) if latencies else None,
        "algbw_median": algbw_median,
        "busbw_median": algbw_median * factor if algbw_median is not None else None,
        "algbw_mean": algbw_mean,
        "busbw_mean": algbw_mean * factor if algbw_mean is not None else None,
    }


def mean_over_ranks(per_rank: Sequence[Sequence[float]]) -> list[float]:
    """Iteration-wise mean of the ranks' latency lists (all the same length)."""
    lengths = {len(r) for r in per_rank}
    if len(lengths) != 1:
        raise WorkloadError(f"ranks timed different numbers of iterations: {sorted(lengths)}")
    count = len(per_rank)
    return [sum(r[i] for r in per_rank) / count for i in range(lengths.pop())]


TORCH_DTYPES = ("fp32", "fp16", "fp64")

# The allreduce family: its options once, one program per framework (torch_allreduce: the PyTorch program's
# older name); the PyTorch program sweeps MLBench task 0.a's sizes by default
SPEC = WorkloadSpec(
    name="allreduce",
    summary="All-reduce sweep: latency and bus bandwidth per size (Horovod and MPI, or torch.distributed).",
    kind="allreduce",
    programs={"tensorflow": "repro.workloads.allreduce", "pytorch": "repro.workloads.torch_allreduce"},
    batch=None,
    options=(
        DIST_BACKEND,
        Option("device", str, "auto", "where the tensors live (auto: cuda for nccl, else cpu)",
               choices=("auto", "cpu", "cuda"), frameworks=("pytorch",)),
        Option("min_exp", float, MIN_EXP, "smallest size is 10**min-exp elements", minimum=0),
        Option("max_exp", float, MAX_EXP, "largest size is 10**max-exp elements", minimum=0,
               on={"pytorch": {"default": 8.0}}),
        Option("num", int, NUM, "log-spaced points (before deduplication)", minimum=1, on={"pytorch": {"default": 80}}),
        Option("sizes", str, None, "explicit element counts, comma-separated (overrides the above)",
               pattern=r"[0-9]+(,[0-9]+)*", pattern_help="comma-separated whole numbers"),
        Option("dtypes", str, "fp32", "comma-separated, from fp32, fp16 (fp16: Horovod's path only)",
               items=("fp32", "fp16"),
               on={"pytorch": {"help": "comma-separated, from fp32, fp16, fp64", "items": TORCH_DTYPES}}),
        Option("iterations", int, ITERATIONS, "timed all-reduces per size and dtype", minimum=1,
               on={"pytorch": {"default": 100}}),
        Option("large_iterations", int, LARGE_ITERATIONS, "timed all-reduces per size from --large-bytes on "
               f"(after at most {LARGE_WARMUP} untimed ones)", minimum=1,
               on={"pytorch": {"default": 100, "help": "timed all-reduces per size from --large-bytes on"}}),
        Option("large_bytes", int, LARGE_BYTES, "message size (bytes) from which --large-iterations apply",
               minimum=1, on={"pytorch": {"default": 1 << 62}}),
        Option("warmup_iterations", int, WARMUP, "untimed all-reduces per size first", minimum=0),
        Option("cycle_time_ms", float, None, "Horovod's background cycle (HOROVOD_CYCLE_TIME, ms)", minimum=0,
               exclusive_minimum=True, frameworks=("tensorflow",)),
        Option("fusion_threshold", int, None, "Horovod's tensor fusion buffer (HOROVOD_FUSION_THRESHOLD, bytes)",
               minimum=0, frameworks=("tensorflow",)),
        Option("raw", bool, True, "also time MPI_Allreduce directly (mpi4py)", frameworks=("tensorflow",)),
        *common.COMMON_OPTIONS,
    ),
)
PROGRAM = SPEC.program("tensorflow")


def build_parser() -> ArgumentParser:
    """The workload's flags, from its SPEC."""
    return PROGRAM.parser(common.add_output_argument)


def iteration_counts(nbytes: int, iterations: int = ITERATIONS, warmup: int = WARMUP,
                     large_iterations: int = LARGE_ITERATIONS, large_bytes: int = LARGE_BYTES) -> tuple[int, int]:
    """(timed, untimed) all-reduces for a message of `nbytes`: fewer of both from `large_bytes` on."""
    if nbytes >= large_bytes:
        return large_iterations, min(warmup, LARGE_WARMUP)
    return iterations, warmup


def expected_sum(world_size: int) -> int:
    """What every element of the reduction must be when rank r contributes r+1."""
    return world_size * (world_size + 1) // 2


def raw_comm() -> tuple[Any, str | None]:
    """mpi4py's world communicator, started before Horovod (so its background thread is not yet competing for
    the cores while the raw path is timed; Horovod then uses the same libmpi), or why there is none."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        return None, f"mpi4py is not installed ({exc})"
    if not MPI.Is_initialized():
        MPI.Init_thread(MPI.THREAD_MULTIPLE)
    return MPI.COMM_WORLD, None


def time_raw(comm: Any, dtype: str, elements: int, iterations: int, warmup: int) -> tuple[list[float], int]:
    """MPI_Allreduce of host buffers: per-iteration latencies (after a barrier) and the count of wrong elements."""
    import numpy as np
    from mpi4py import MPI

    send = np.full(elements, comm.Get_rank() + 1, dtype=DTYPES[dtype][0])
    recv = np.empty_like(send)
    clock = time.perf_counter
    times = []
    for iteration in range(warmup + iterations):
        comm.Barrier()
        began = clock()
        comm.Allreduce(send, recv, op=MPI.SUM)
        elapsed = clock() - began
        if iteration >= warmup:
            times.append(elapsed)
    return times, int(np.count_nonzero(recv != expected_sum(comm.Get_size())))


def time_horovod(world: Any, dtype: str, elements: int, iterations: int, warmup: int) -> tuple[list[float], int]:
    """hvd.allreduce(op=Sum): per-iteration latencies and the count of wrong elements."""
    import horovod.tensorflow as hvd
    import tensorflow as tf

    with tf.device("/GPU:0" if world.gpu else "/CPU:0"):
        tensor = tf.fill([elements], tf.constant(world.rank + 1, dtype=getattr(tf, DTYPES[dtype][0])))
    name = f"repro_allreduce_{dtype}_{elements}"
    clock = time.perf_counter
    times = []
    out = tensor
    for iteration in range(warmup + iterations):
        began = clock()
        out = hvd.allreduce(tensor, op=hvd.Sum, name=name)
        # CPU: .numpy() shares the buffer (no copy). GPU: one element to the host waits for the stream.
        (out[:1] if world.gpu else out).numpy()
        elapsed = clock() - began
        if iteration >= warmup:
            times.append(elapsed)
    wrong = int(tf.math.count_nonzero(tf.not_equal(out, tf.cast(expected_sum(world.size), out.dtype))).numpy())
    return times, wrong


def progress_row(dtype: str, elements: int, entry: dict[str, Any], world_size: int) -> str:
    """One size as it is measured (rank 0's own times), nccl-tests' columns: size, count, type, time, busbw, #wrong."""
    nbytes = elements * DTYPES[dtype][1]

    def path(name: str, times: list[float], wrong: int) -> str:
        latency = common.median(times)
        busbw = nbytes / latency * bus_factor(world_size) / 1e9 if latency else 0.0
        return f"{name} median {latency * 1e6:10.1f} us {busbw:8.3f} GB/s #wrong {wrong}"

    cols = [f"{nbytes:>12,} B {elements:>11,} {dtype} rank 0"]
    if "horovod" in entry:
        cols.append(path("hvd", entry["horovod"], entry["wrong"]))
    if "raw" in entry:
        cols.append(path("raw", entry["raw"], entry["raw_wrong"]))
    return "  ".join(cols)


def _environment(args: Any) -> None:
    """Horovod's tuning flags become its environment before it starts."""
    import os

    if args.cycle_time_ms is not None:
        os.environ["HOROVOD_CYCLE_TIME"] = repr(args.cycle_time_ms)
    if args.fusion_threshold is not None:
        os.environ["HOROVOD_FUSION_THRESHOLD"] = str(args.fusion_threshold)


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, run the sweep along both paths, emit the result (rank 0).

    One function on purpose: the program reads top to bottom (raw sweep, then Horovod's, then the result)."""
    args = build_parser().parse_args(argv)
    sizes = parse_sizes(args.sizes) if args.sizes else default_sizes(args.min_exp, args.max_exp, args.num)
    dtypes = parse_dtypes(args.dtypes)
    _environment(args)
    comm, raw_missing = raw_comm() if args.raw else (None, "not asked for (--no-raw)")
    plan = [(dtype, elements) for dtype in dtypes for elements in sizes]
    raw_plan = [(dtype, elements) for dtype, elements in plan if comm is not None and dtype in RAW_DTYPES]
    total = len(raw_plan) + len(plan)

    def counts_for(dtype: str, elements: int) -> tuple[int, int]:
        return iteration_counts(elements * DTYPES[dtype][1], args.iterations, args.warmup_iterations,
                                args.large_iterations, args.large_bytes)

    raw: dict[tuple[str, int], tuple[list[float], int]] = {}
    for index, (dtype, elements) in enumerate(raw_plan):  # the whole raw sweep before Horovod's thread starts
        raw[(dtype, elements)] = time_raw(comm, dtype, elements, *counts_for(dtype, elements))
        if comm.Get_rank() == 0:
            times, wrong = raw[(dtype, elements)]
            row = progress_row(dtype, elements, {"raw": times, "raw_wrong": wrong}, comm.Get_size())
            common.progress(f"[{index + 1}/{total}] {row}")
    world = common.start(args.intra_threads, args.inter_threads)
    import horovod.tensorflow as hvd

    backend = ("nccl" if hvd.nccl_built() else "gpu") if world.gpu else world.cpu_operations
    if comm is not None and comm.Get_size() != world.size:  # e.g. Gloo's own launcher: each process alone in MPI
        comm_size, comm, raw = comm.Get_size(), None, {}
        raw_missing = f"MPI sees {comm_size} rank(s) of Horovod's {world.size}: not started by an MPI launcher"
    per_rank: dict[tuple[str, int], dict[str, Any]] = {}
    for index, (dtype, elements) in enumerate(plan):
        entry: dict[str, Any] = {}
        if (dtype, elements) in raw:
            entry["raw"], entry["raw_wrong"] = raw[(dtype, elements)]
        entry["horovod"], entry["wrong"] = time_horovod(world, dtype, elements, *counts_for(dtype, elements))
        per_rank[(dtype, elements)] = entry
        if world.rank == 0:
            common.progress(f"[{len(raw_plan) + index + 1}/{total}] "
                            f"{progress_row(dtype, elements, entry, world.size)}")

    gathered = common.gather([[d, e, t] for (d, e), t in per_rank.items()])
    rows = []
    for index, (dtype, elements, _) in enumerate(gathered[0]):
        ranks = [rank_rows[index][2] for rank_rows in gathered]
        row = summarize(dtype, elements, mean_over_ranks([r["horovod"] for r in ranks]), world.size)
        row["wrong"] = sum(r["wrong"] for r in ranks)
        row["raw"] = (summarize(dtype, elements, mean_over_ranks([r["raw"] for r in ranks]), world.size)
                      if "raw" in ranks[0] else None)
        row["raw_wrong"] = sum(r["raw_wrong"] for r in ranks) if "raw" in ranks[0] else None
        rows.append(row)

    settings = {
        "sizes": sizes,
        "min_exp": None if args.sizes else args.min_exp,
        "max_exp": None if args.sizes else args.max_exp,
        "num": None if args.sizes else args.num,
        "dtypes": dtypes,
        "iterations": args.iterations,
        "large_iterations": args.large_iterations,
        "large_bytes": args.large_bytes,
        "large_warmup_iterations": min(args.warmup_iterations, LARGE_WARMUP),
        "warmup_iterations": args.warmup_iterations,
        "cycle_time_ms": args.cycle_time_ms,
        "fusion_threshold": args.fusion_threshold,
        "raw": bool(args.raw),
        "op": "sum",
        "seed": args.seed,
        **common.runtime_settings(world),
    }
    metrics = {
        "backend": backend,
        "raw_backend": None if comm is None else f"mpi4py MPI_Allreduce ({_mpi_library(comm)})",
        "raw_missing": raw_missing,
        "latency_aggregation": "mean over ranks per iteration",
        "bus_factor": bus_factor(world.size),
        "results": rows,
    }
    record = common.rank_record(world, [], [], 0)
    return common.finish("allreduce", world, settings, record, metrics, args.output)


def _mpi_library(comm: Any) -> str:
    from mpi4py import MPI

    return MPI.Get_library_version().splitlines()[0].split(",")[0].strip()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
