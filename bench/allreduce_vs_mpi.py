"""How much does Horovod add on top of the MPI all-reduce it runs on? repro.workloads.allreduce vs mpi4py.

    python bench/allreduce_vs_mpi.py [--sizes 10000,100000,1000000,4000000] [--iterations 20] [--repeats 3]
    python bench/allreduce_vs_mpi.py --cluster     # across two hosts of the test cluster (tests/cluster)

Both sides all-reduce the same fp32 buffers between the same two ranks with the same Open MPI, in the
same run, alternating which side goes first: Horovod through repro's all-reduce workload (MPI controller),
and a plain `MPI_Allreduce` through mpi4py, timed the way the workload times it (mean over ranks of each
iteration, median over iterations). Without --cluster both ranks run on this machine; with it, one rank
on each of two network-namespace hosts that tests/cluster/cluster.sh brings up (named by
REPRO_CLUSTER_NAME, default `bench`) and tears down afterwards.

Prints, per size, both medians and the ratio Horovod / MPI. Below about 1e6 elements Horovod's latency is
its background cycle (HOROVOD_CYCLE_TIME, 1 ms), not the transport; from a few MB on, the ratio says what
Horovod's thread and tensor fusion add (the same order of magnitude is expected). Figures only; nothing
is asserted: on a loaded machine the spread between repeats is large, so read every repeat.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MPI4PY_SWEEP = """
import json, sys, time
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
sizes, iterations, warmup = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
medians = {}
for n in sizes:
    send = np.ones(n, np.float32)
    recv = np.empty_like(send)
    times = []
    for i in range(warmup + iterations):
        comm.Barrier()
        began = time.perf_counter()
        comm.Allreduce(send, recv, op=MPI.SUM)
        if i >= warmup:
            times.append(time.perf_counter() - began)
    assert recv[0] == comm.size
    mean_over_ranks = np.array(comm.allreduce(np.array(times))) / comm.size  # as the workload aggregates
    medians[n] = float(np.median(mean_over_ranks))
if comm.rank == 0:
    print("MPI4PY " + json.dumps(medians))
"""

Runner = Callable[[list[str]], str]  # runs the argv after `mpirun ... -np 2 <placement>`, returns stdout


@contextlib.contextmanager
def mpirun_local() -> Iterator[Runner]:
    """mpirun with both ranks on this machine."""
    head = ["mpirun", "--allow-run-as-root", "-np", "2", "--bind-to", "none", "--mca", "pml", "ob1",
            "--mca", "btl", "^openib", "-x", "PYTHONPATH"]

    def run(argv: list[str]) -> str:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        return subprocess.run([*head, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
                              check=True).stdout

    yield run


@contextlib.contextmanager
def mpirun_cluster() -> Iterator[Runner]:
    """mpirun started on h1 with one rank on h1 and one on h2 of a fresh two-host test cluster."""
    from tests.cluster.fixtures import running_cluster

    name = os.environ.get("REPRO_CLUSTER_NAME") or "bench"
    print(f"bringing up test cluster {name} (2 hosts)", flush=True)
    with running_cluster(name, 2, docker=False) as cluster:
        h1, h2 = cluster.hosts
        rsh = f"-i {cluster.key} -o UserKnownHostsFile={cluster.known_hosts} -o StrictHostKeyChecking=yes"
        head = ["env", f"PYTHONPATH={REPO}", "mpirun", "--allow-run-as-root", "-np", "2",
                "-H", f"{h1.address}:1,{h2.address}:1", "--bind-to", "none", "-wdir", str(REPO),
                "--mca", "plm_rsh_args", rsh, "--mca", "btl_tcp_if_include", "eth0",
                "--mca", "oob_tcp_if_include", "eth0", "--mca", "pml", "ob1", "--mca", "btl", "^openib",
                "-x", "PYTHONPATH", "-x", "PATH"]

        def run(argv: list[str]) -> str:
            proc = cluster.exec("h1", [*head, *argv], timeout=900)
            if proc.returncode != 0:
                raise RuntimeError(f"mpirun on h1 exited {proc.returncode}:\n{proc.stderr[-3000:]}")
            return proc.stdout

        yield run


def horovod_latencies(run: Runner, sizes: list[int], iterations: int, warmup: int, out: Path) -> dict[int, float]:
    argv = [sys.executable, "-m", "repro.workloads.allreduce", "--sizes", ",".join(map(str, sizes)),
            "--iterations", str(iterations), "--warmup", str(warmup), "--dtypes", "fp32",
            "--intra-threads", "1", "--inter-threads", "1", "--output", str(out)]
    run(argv)
    rows = json.loads(out.read_text())["metrics"]["results"]
    return {int(r["elements"]): float(r["latency_median"]) for r in rows}


def mpi_latencies(run: Runner, sizes: list[int], iterations: int, warmup: int, script: Path) -> dict[int, float]:
    stdout = run([sys.executable, str(script), json.dumps(sizes), str(iterations), str(warmup)])
    line = next(x for x in stdout.splitlines() if x.startswith("MPI4PY "))
    return {int(k): float(v) for k, v in json.loads(line[len("MPI4PY "):]).items()}


def main() -> int:
    """Alternating repeats of both sides; print medians and ratios per size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000,4000000", help="element counts (fp32)")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cluster", action="store_true", help="one rank on each of two test-cluster hosts")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    with tempfile.TemporaryDirectory(prefix="repro-bench-") as tmp, \
            (mpirun_cluster() if args.cluster else mpirun_local()) as run:
        script = Path(tmp) / "mpi4py_allreduce.py"
        script.write_text(MPI4PY_SWEEP)
        hvd: dict[int, list[float]] = {n: [] for n in sizes}
        mpi: dict[int, list[float]] = {n: [] for n in sizes}
        where = "two test-cluster hosts" if args.cluster else "this machine"
        print(f"fp32 all-reduce, 2 ranks on {where}, {args.warmup} warm-up + {args.iterations} timed per size, "
              f"{args.repeats} alternating repeats")
        for repeat in range(args.repeats):
            out = Path(tmp) / f"hvd-{repeat}.json"
            sides = [("horovod", lambda out=out: horovod_latencies(run, sizes, args.iterations, args.warmup, out), hvd),
                     ("mpi4py", lambda: mpi_latencies(run, sizes, args.iterations, args.warmup, script), mpi)]
            if repeat % 2:
                sides.reverse()
            for name, measure, sink in sides:
                found = measure()
                for n in sizes:
                    sink[n].append(found[n])
                print(f"  repeat {repeat + 1} {name:7s} " + "  ".join(f"{n}: {found[n] * 1e3:.3f} ms" for n in sizes),
                      flush=True)
    print(f"{'elements':>10s}  {'horovod ms':>11s}  {'mpi4py ms':>10s}  {'ratio':>6s}  per repeat")
    for n in sizes:
        h, m = statistics.median(hvd[n]), statistics.median(mpi[n])
        per = ", ".join(f"{a / b:.2f}" for a, b in zip(hvd[n], mpi[n], strict=True))
        print(f"{n:>10d}  {h * 1e3:>11.3f}  {m * 1e3:>10.3f}  {h / m:>6.2f}  {per}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
