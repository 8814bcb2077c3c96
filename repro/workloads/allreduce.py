"""All-reduce sweep (MLBench task 0.a, reported the nccl-tests way): latency and bandwidth per size.

    mpirun -np 2 python -m repro.workloads.allreduce [--min-exp 0 --max-exp 8 --num 80 | --sizes 1,1024]
        [--dtypes fp32,fp16] [--iterations 100] [--warmup 10]

Each size (in elements) is reduced with `hvd.allreduce(op=Sum)` through whatever controller and
operations the processes were launched with (MPI by default, Gloo under repro.workloads.gloo, NCCL
for GPU tensors when Horovod has it). Every iteration is timed on every rank, from the call until
the reduced tensor is usable; the latency of an iteration is the mean over ranks (OSU convention).

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
from .spec import ArgumentParser, Option, WorkloadSpec

DTYPES = {"fp32": ("float32", 4), "fp16": ("float16", 2), "fp64": ("float64", 8), "int32": ("int32", 4)}


def default_sizes(min_exp: float = 0.0, max_exp: float = 8.0, num: int = 80) -> list[int]:
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


SPEC = WorkloadSpec(
    name="allreduce",
    summary=__doc__.split("\n\n")[0],
    kind="allreduce",
    module="repro.workloads.allreduce",
    batch=None,
    options=(
        Option("min_exp", float, 0.0, "smallest size is 10**min-exp elements", minimum=0),
        Option("max_exp", float, 8.0, "largest size is 10**max-exp elements", minimum=0),
        Option("num", int, 80, "log-spaced points (before deduplication)", minimum=1),
        Option("sizes", str, None, "explicit element counts, comma-separated (overrides the above)",
               pattern=r"[0-9]+(,[0-9]+)*", pattern_help="comma-separated whole numbers"),
        Option("dtypes", str, "fp32,fp16", "comma-separated, from fp32, fp16", items=("fp32", "fp16")),
        Option("iterations", int, 100, "timed all-reduces per size and dtype", minimum=1),
        Option("warmup", int, 10, "untimed all-reduces first", minimum=0),
        *common.COMMON_OPTIONS,
    ),
)


def build_parser() -> ArgumentParser:
    """The workload's flags, from its SPEC."""
    return SPEC.parser(common.add_output_argument)


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, run the sweep, emit the result (rank 0)."""
    args = build_parser().parse_args(argv)
    sizes = parse_sizes(args.sizes) if args.sizes else default_sizes(args.min_exp, args.max_exp, args.num)
    dtypes = parse_dtypes(args.dtypes)

    world = common.start(args.intra_threads, args.inter_threads)
    import horovod.tensorflow as hvd
    import tensorflow as tf

    backend = ("nccl" if hvd.nccl_built() else "gpu") if world.gpu else world.cpu_operations
    device = "/GPU:0" if world.gpu else "/CPU:0"

    def sync(tensor: Any) -> None:
        # CPU: .numpy() shares the buffer (no copy). GPU: one element to the host waits for the stream.
        if world.gpu:
            tensor[:1].numpy()
        else:
            tensor.numpy()

    per_rank: dict[tuple[str, int], list[float]] = {}
    clock = time.perf_counter
    for dtype in dtypes:
        tf_dtype = getattr(tf, DTYPES[dtype][0])
        for elements in sizes:
            with tf.device(device):
                tensor = tf.ones([elements], dtype=tf_dtype)
            name = f"repro_allreduce_{dtype}_{elements}"
            times = []
            for iteration in range(args.warmup + args.iterations):
                began = clock()
                out = hvd.allreduce(tensor, op=hvd.Sum, name=name)
                sync(out)
                elapsed = clock() - began
                if iteration >= args.warmup:
                    times.append(elapsed)
            per_rank[(dtype, elements)] = times
            del tensor, out
        if world.rank == 0:
            common.log(f"allreduce: {dtype} done ({len(sizes)} sizes)")

    gathered = common.gather([[d, e, t] for (d, e), t in per_rank.items()])
    rows = []
    for index, (dtype, elements, _) in enumerate(gathered[0]):
        latencies = mean_over_ranks([rank_rows[index][2] for rank_rows in gathered])
        rows.append(summarize(dtype, elements, latencies, world.size))

    settings = {
        "sizes": sizes,
        "min_exp": None if args.sizes else args.min_exp,
        "max_exp": None if args.sizes else args.max_exp,
        "num": None if args.sizes else args.num,
        "dtypes": dtypes,
        "iterations": args.iterations,
        "warmup": args.warmup,
        "op": "sum",
        "seed": args.seed,
        **common.runtime_settings(world),
    }
    metrics = {
        "backend": backend,
        "latency_aggregation": "mean over ranks per iteration",
        "bus_factor": bus_factor(world.size),
        "results": rows,
    }
    record = common.rank_record(world, [], [], 0)
    return common.finish("allreduce", world, settings, record, metrics, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
