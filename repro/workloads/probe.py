"""A plumbing probe: steps that sleep, spin or multiply small matrices; no framework, no communication.

    mpirun -np 2 python -m repro.workloads.probe [--step-time 0.01] [--step-kind sleep|busy|matmul]
        [--batch-size 32] [--warmup-steps 2] [--steps 20] [--start-delay S] [--fail-at-step N | --hang-at-step N]
        [--fault-rank R]

It tests what carries a benchmark (placement, launch across hosts and runtimes, records, resume, Ctrl-C,
time limits, lost hosts) without the cost of starting TensorFlow and Horovod in every rank. It needs only
the standard library (numpy for `--step-kind matmul`), takes its rank and world size from the launcher's
environment (mpirun, srun with or without PMIx, torchrun's RANK/WORLD_SIZE) and times every step as the
other workloads do. `--batch-size` is the number of items a step counts as, so throughput is
items / step time: a figure of the plumbing, not of any hardware.

Ranks do not talk to each other. Rank 0 prints the REPRO_RESULT line with its own samples; every other
rank prints its samples on one `REPRO_RANK <json>` line, and `merge()` (called by repro's launcher on the
whole job's output, which mpirun and srun collect from every rank) puts them into the result. A run whose
output lacks a rank's line has no result: a rank that failed or was lost fails the point.

Faults, for tests and drills: `--fail-at-step N` makes rank `--fault-rank` (default: the last) exit 2 at
step N with a `repro-workload error:` line, `--hang-at-step N` makes it stop there and sleep until killed,
`--start-delay S` makes every rank wait S seconds before its first step (a slow start).
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import _common as common
from . import framing
from ._common import WorkloadError, run_main
from ._net import launcher_rank, local_ipv4_addresses
from .spec import ArgumentParser, Option, WorkloadSpec

RANK_PREFIX = "REPRO_RANK "
STEP_KINDS = ("sleep", "busy", "matmul")
HANG_S = 24 * 3600.0

# Each launcher's name for a process's rank on its host and the number of its processes there.
_LOCAL = (
    ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"),
    ("LOCAL_RANK", "LOCAL_WORLD_SIZE"),
    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
)

SPEC = WorkloadSpec(
    name="probe",
    summary=__doc__.split("\n\n")[0],
    kind="throughput",
    module="repro.workloads.probe",
    options=(
        Option("batch_size", int, 32, "items one step counts as (per worker)", minimum=1, setting="batch_per_worker",
               sweep=True),
        Option("warmup_steps", int, 2, "steps before the measured ones", minimum=0, setting="warmup_steps"),
        Option("steps", int, 20, "measured steps after warm-up", minimum=1, setting="steps"),
        Option("step_time", float, 0.01, "seconds one step takes (sleep, busy) or at least takes (matmul)",
               minimum=0),
        Option("step_kind", str, "sleep", "sleep: idle; busy: spin on a core; matmul: numpy products",
               choices=STEP_KINDS),
        Option("matrix_size", int, 64, "side of the square matrices of --step-kind matmul", minimum=1),
        Option("start_delay", float, 0.0, "seconds every rank waits before its first step (a slow start)",
               minimum=0),
        Option("fail_at_step", int, None, "rank --fault-rank exits with an error at this step (1 is the first)",
               minimum=1),
        Option("hang_at_step", int, None, "rank --fault-rank stops at this step until it is killed", minimum=1),
        Option("fault_rank", int, None, "the rank that fails or hangs (default: the last)", minimum=0),
        Option("intra_threads", int, 0, "threads of --step-kind matmul per worker (0: usable cores / workers "
               "on the host)", minimum=0, setting="threads", sweep=True),
        Option("seed", int, 1234, "random seed of the matrices (rank r uses seed + r)", bench=False),
    ),
)


def build_parser() -> ArgumentParser:
    """The workload's flags, from its SPEC."""
    return SPEC.parser(common.add_output_argument)


def world_of(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """This process's rank, world size, local rank and local size as its launcher set them (rank 0 of 1
    without a launcher)."""
    env = os.environ if environ is None else environ
    found = launcher_rank(env)
    if found is None:
        rank, size, launcher = int(env.get("RANK", "0") or 0), None, "none"
        if env.get("WORLD_SIZE", "").isdigit():
            size, launcher = int(env["WORLD_SIZE"]), "torchrun"
    else:
        rank, size, launcher = found
    size = size or 1
    if rank >= size:
        raise WorkloadError(f"rank {rank} is not a rank of a world of {size} processes")
    local_rank, local_size = 0, 1
    for rank_name, size_name in _LOCAL:
        if env.get(rank_name, "").isdigit():
            local_rank = int(env[rank_name])
            text = env.get(size_name, "").split("(")[0].split(",")[0]
            local_size = int(text) if text.isdigit() else local_rank + 1
            break
    return {"rank": rank, "size": size, "local_rank": local_rank, "local_size": max(local_size, local_rank + 1),
            "launcher": launcher}


def faulty(args: Any, world: dict[str, Any]) -> bool:
    """Whether this rank is the one --fail-at-step / --hang-at-step act on."""
    target = world["size"] - 1 if args.fault_rank is None else args.fault_rank
    if target >= world["size"]:
        raise WorkloadError(f"--fault-rank {target}: the world has ranks 0 to {world['size'] - 1}")
    return world["rank"] == target


def stepper(kind: str, step_time: float, matrix_size: int, seed: int) -> Any:
    """A function running one step of `kind`."""
    if kind == "sleep":
        return lambda: time.sleep(step_time)
    if kind == "busy":
        def spin() -> None:
            until = time.perf_counter() + step_time
            while time.perf_counter() < until:
                pass
        return spin
    try:
        import numpy
    except ImportError:
        raise WorkloadError("--step-kind matmul needs numpy; use sleep or busy") from None
    matrix = numpy.random.default_rng(seed).random((matrix_size, matrix_size))

    def multiply() -> None:
        until = time.perf_counter() + step_time
        product = matrix @ matrix
        while time.perf_counter() < until:
            product = matrix @ product
            product /= float(abs(product).max()) or 1.0

    return multiply


def metrics(ranks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """items/sec as repro defines it: items of a global step x steps / the largest per-rank total step time."""
    steps = min((len(r["step_times"]) for r in ranks), default=0)
    longest = max((sum(r["step_times"][:steps]) for r in ranks), default=0.0)
    slowest = [max(t) for t in zip(*[r["step_times"][:steps] for r in ranks])]  # noqa: B905 (cut to steps)
    items = sum(r["items_per_step"] for r in ranks)
    return {
        "unit": "items/sec",
        "images_per_sec": items * steps / longest if longest else None,
        "step_time_median": common.median(slowest),
        "step_time_mean": common.mean(slowest),
        "warmup_time_total": max((sum(r["warmup_times"]) for r in ranks), default=0.0),
    }


def software() -> dict[str, str]:
    """Versions of what the probe ran on."""
    found = {"python": platform.python_version()}
    try:
        import numpy
    except ImportError:
        return found
    return {**found, "numpy": numpy.__version__}


def merge(result: dict[str, Any] | None, output: str) -> dict[str, Any] | None:
    """Rank 0's result completed with the other ranks' REPRO_RANK lines of the job's `output`; None unless
    every rank of the world reported (a rank that failed or was lost printed none)."""
    if result is None or result.get("workload") != SPEC.name:
        return result
    size = int(result.get("world", {}).get("size", 1))
    ranks = {int(r["rank"]): r for r in result.get("ranks", [])}
    for line in output.splitlines():
        at = line.find(RANK_PREFIX)
        if at < 0:
            continue
        try:
            record = json.loads(line[at + len(RANK_PREFIX):])
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("rank"), int):
            ranks.setdefault(record["rank"], record)
    if sorted(ranks) != list(range(size)):
        return None
    ordered = [ranks[r] for r in range(size)]
    return {**result, "ranks": ordered, "metrics": metrics(ordered)}


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, run warm-up + measured steps, print this rank's samples (rank 0: the result)."""
    args = build_parser().parse_args(argv)
    if args.fail_at_step is not None and args.hang_at_step is not None:
        raise WorkloadError("--fail-at-step and --hang-at-step exclude each other")
    world = world_of()
    cpus = common.usable_cpus()
    threads, _ = common.resolve_threads(args.intra_threads, 1, world["local_size"], cpus)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)  # before numpy starts its thread pool
    step = stepper(args.step_kind, args.step_time, args.matrix_size, args.seed + world["rank"])
    fault = faulty(args, world)
    if args.start_delay:
        time.sleep(args.start_delay)

    warmup_times: list[float] = []
    step_times: list[float] = []
    total = args.warmup_steps + args.steps
    clock = time.perf_counter
    for number in range(1, total + 1):
        if fault and number == args.fail_at_step:
            raise WorkloadError(f"probe: rank {world['rank']} fails at step {number} (--fail-at-step)")
        if fault and number == args.hang_at_step:
            common.log(f"probe: rank {world['rank']} hangs at step {number} (--hang-at-step)")
            time.sleep(HANG_S)
        began = clock()
        step()
        (warmup_times if number <= args.warmup_steps else step_times).append(clock() - began)
        if world["rank"] == 0 and number % 10 == 0:
            common.log(f"probe: step {number}/{total}")

    record = {
        "rank": world["rank"], "local_rank": world["local_rank"], "hostname": socket.gethostname(),
        "addresses": local_ipv4_addresses(), "device": "CPU", "warmup_times": warmup_times,
        "step_times": step_times, "items_per_step": args.batch_size,
    }
    if world["rank"] != 0:
        sys.stdout.write(framing.printed(RANK_PREFIX + json.dumps(common.json_safe(record), separators=(",", ":"))))
        sys.stdout.flush()
        return None
    settings = {
        "batch_per_worker": args.batch_size, "global_batch": args.batch_size * world["size"],
        "warmup_steps": args.warmup_steps, "steps": args.steps, "step_time": args.step_time,
        "step_kind": args.step_kind, "matrix_size": args.matrix_size, "start_delay": args.start_delay,
        "fail_at_step": args.fail_at_step, "hang_at_step": args.hang_at_step, "fault_rank": args.fault_rank,
        # sleep and busy steps run on one thread whatever the pool: no intra-op threads to judge against the cores
        "intra_threads": threads if args.step_kind == "matmul" else None, "usable_cpus": cpus, "seed": args.seed,
        "env": common.recorded_env(),
    }
    result = {
        "format": common.FORMAT,
        "workload": SPEC.name,
        "settings": settings,
        "world": {"size": world["size"], "controller": "none", "launcher": world["launcher"], "gpu": False},
        "software": software(),
        "ranks": [record],
        "metrics": metrics([record]),
    }
    line = common.result_line(result)
    if args.output:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, "w") as handle:
            handle.write(line[len(common.RESULT_PREFIX):] + "\n")
    sys.stdout.write(framing.printed(line))
    sys.stdout.flush()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
