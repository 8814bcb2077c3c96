"""All-reduce sweep with torch.distributed (MLBench task 0.a): latency and bus bandwidth per size and backend.

    torchrun --nproc-per-node 2 -m repro.workloads.torch_allreduce [--dist-backend gloo|nccl|mpi]
        [--min-exp 0 --max-exp 8 --num 80 | --sizes 1,1024] [--iterations 100] [--warmup-iterations 5]
    (or mpirun / srun: the rank variables are mapped, repro.workloads._torch)

MLBench's sweep by default: np.logspace(0, 8, num=80) elements of fp32 (rounded, duplicates dropped), each
all-reduced 100 times (`--large-iterations` from `--large-bytes` on: set both to shorten a run). Backends:
gloo (CPU tensors, or GPU tensors), nccl (GPU tensors, one GPU per rank) and mpi (only where PyTorch was
built with MPI: the PyPI wheels are not, and the run says so). Every iteration is timed on every rank from
the call until the reduced buffer is ready (the device synchronized at both ends, repro.workloads.timing);
an iteration's latency is the mean over ranks. Rank r contributes r+1, so every element must come back
n(n+1)/2; elements that do not are counted as #wrong. algbw = bytes / latency, busbw = algbw x 2(n-1)/n
(nccl-tests). The result has the same shape as the Horovod `allreduce` workload's (metrics.backend and one
row per size), so `repro compare` sets a PyTorch stack's all-reduce against a Horovod stack's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _common as common
from . import _torch, allreduce, timing
from ._common import WorkloadError, run_main
from .comm import resolve_backend
from .spec import ArgumentParser

MIN_EXP, MAX_EXP, NUM, ITERATIONS, WARMUP = 0.0, 8.0, 80, 100, 5  # MLBench task 0.a
DTYPES = ("fp32", "fp16", "fp64")
DEVICES = ("auto", "cpu", "cuda")

# the allreduce family's PyTorch program, under the name records and scripts from before the family use
SPEC = allreduce.SPEC.program("pytorch").alias("torch_allreduce")


def build_parser() -> ArgumentParser:
    """The workload's flags, from its SPEC."""
    return SPEC.parser(common.add_output_argument)


def tensor_device(requested: str, backend: str) -> str:
    """cpu or cuda: the one asked for, else cuda for nccl and cpu otherwise; nccl refuses CPU tensors."""
    device = requested if requested != "auto" else ("cuda" if backend == "nccl" else "cpu")
    if backend == "nccl" and device != "cuda":
        raise WorkloadError("the nccl backend reduces GPU tensors only: use --device cuda (or auto)")
    return device


def time_allreduce(dist: Any, torch: Any, device: Any, world: Any, dtype: str, elements: int, iterations: int,
                   warmup: int) -> tuple[list[float], int]:
    """dist.all_reduce(SUM) of a buffer of `elements`: per-iteration latencies and the count of wrong elements."""
    torch_dtype = {"fp32": torch.float32, "fp16": torch.float16, "fp64": torch.float64}[dtype]
    sync = timing.device_of(torch, device)
    times = []
    tensor = torch.empty(elements, dtype=torch_dtype, device=device)
    for iteration in range(warmup + iterations):
        tensor.fill_(world.rank + 1)  # outside the timed interval; the sum must come back n(n+1)/2
        dist.barrier()
        _, elapsed = timing.time_step(lambda: dist.all_reduce(tensor, op=dist.ReduceOp.SUM), sync)
        if iteration >= warmup:
            times.append(elapsed)
    wrong = int((tensor != allreduce.expected_sum(world.size)).sum().item())
    return times, wrong


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, run the sweep, emit the result (rank 0)."""
    args = build_parser().parse_args(argv)
    sizes = (allreduce.parse_sizes(args.sizes) if args.sizes
             else allreduce.default_sizes(args.min_exp, args.max_exp, args.num))
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    import torch

    backend = resolve_backend(args.dist_backend, torch.cuda.is_available())
    where = tensor_device(args.device, backend)
    world, device = _torch.start(backend, args.intra_threads, args.inter_threads, gpu=where == "cuda")
    import torch.distributed as dist

    per_rank: dict[tuple[str, int], dict[str, Any]] = {}
    plan = [(dtype, elements) for dtype in dtypes for elements in sizes]
    for index, (dtype, elements) in enumerate(plan):
        nbytes = elements * allreduce.DTYPES[dtype][1]
        counts = allreduce.iteration_counts(nbytes, args.iterations, args.warmup_iterations, args.large_iterations,
                                            args.large_bytes)
        times, wrong = time_allreduce(dist, torch, device, world, dtype, elements, *counts)
        per_rank[(dtype, elements)] = {"horovod": times, "wrong": wrong}  # the main path, as `allreduce` names it
        if world.rank == 0:
            row = allreduce.progress_row(dtype, elements, per_rank[(dtype, elements)], world.size)
            common.progress(f"[{index + 1}/{len(plan)}] {row.replace('hvd', backend, 1)}")

    gathered = _torch.gather([[d, e, t] for (d, e), t in per_rank.items()])
    rows = []
    for index, (dtype, elements, _) in enumerate(gathered[0]):
        ranks = [rank_rows[index][2] for rank_rows in gathered]
        row = allreduce.summarize(dtype, elements, allreduce.mean_over_ranks([r["horovod"] for r in ranks]),
                                  world.size)
        row["wrong"] = sum(r["wrong"] for r in ranks)
        row["raw"] = None
        row["raw_wrong"] = None
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
        "warmup_iterations": args.warmup_iterations,
        "dist_backend": backend,
        "device": where,
        "op": "sum",
        "seed": args.seed,
        "timing": timing.METHOD,
        **common.runtime_settings(world),
    }
    metrics = {
        "backend": backend,
        "path": f"torch.distributed.all_reduce ({backend}, {where} tensors)",
        "raw_backend": None,
        "raw_missing": "torch_allreduce times torch.distributed only",
        "latency_aggregation": "mean over ranks per iteration",
        "bus_factor": allreduce.bus_factor(world.size),
        "results": rows,
    }
    record = common.rank_record(world, [], [], 0)
    return _torch.finish("torch_allreduce", world, settings, record, metrics, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    _torch.exit_process(main())
