"""Is repro's raw all-reduce path the fabric, and what does Horovod get out of it? Two ratios, same run.

    python bench/allreduce_paths.py [--sizes 262144,1048576,4194304,10485760] [--iterations 100]
        [--large-iterations 100] [--warmup 5] [--repeats 5] [--cluster]

Side by side on this machine's 2 local ranks, or with --cluster one rank on each host of a two-host test
cluster (tests/cluster/cluster.sh: network namespaces joined by a veth bridge, torn down afterwards; name from
REPRO_CLUSTER_NAME, default `bench`), the host runtime, the same Open MPI for all:
  raw      `repro bench --workload allreduce`'s raw path: MPI_Allreduce through mpi4py, barrier per iteration
  plain    a plain mpi4py program doing exactly that, under mpirun directly (the peer: no repro around it),
           with the same timed and untimed iterations per size (repro.workloads.allreduce.iteration_counts)
  horovod  the same `repro bench` run's Horovod path (hvd.allreduce with its background cycle and fusion)
Repeats alternate which side runs first. Prints per size (in bytes, fp32) each side's latency, then raw/plain
of bus bandwidth (target >= 0.95 at >= 1 MB: the raw path measures the fabric, not repro) and horovod/raw
(what Horovod gets out of it), then each repeat's raw/plain of median latencies to show the spread.
Figures only; nothing is asserted.

A side's latency is the trimmed mean over every timed iteration of every repeat, not a median of medians:
on the test cluster (network namespaces joined by veth on one machine) an all-reduce of 1 MiB runs in phases
of about 0.3 ms and about 0.9 ms that switch within a run, for a plain mpirun as much as for repro, so one
run's median lands on either mode and a median over a few runs flips with them. A mean over all iterations
moves smoothly with the share of each phase, which is what enough repeats make equal on both sides. The
slow phase is most common in a run's first iterations (TCP's window still growing), hence 100 timed
iterations per size by default rather than the workload's 10 from 1 MiB on: with 30, a plain mpirun alone
spent 34% of its iterations at 1 MiB in the slow phase over 12 runs, with 300, 12%.

At 1 MiB on the test cluster the default 5 repeats of 100 iterations do not resolve 5%: single repeats range
from 0.5 to 2.0 there. Use `--cluster --sizes 262144,1048576 --iterations 1000 --large-iterations 1000
--repeats 20` (about 9 minutes). With that run, the watch on a point's hosts showed up. It had probed each
remote host with a new TCP connection every 2 s, and sshd forked for each one. raw/plain at 1 MiB was 0.89
then. It was 1.06 with the probes switched off, and 1.16 with the probes sent as keepalives over one held SSH
connection (repro.launch.runtimes.watch.HeldLine).
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
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRIM = 0.1  # each side: preemptions on a shared 2-core machine cost milliseconds, far beyond any real effect
PLAIN = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    plan = json.loads(sys.argv[1])  # [[elements, timed, untimed], ...]
    out = {}
    for n, iterations, warmup in plan:
        send = np.full(n, comm.Get_rank() + 1, dtype=np.float32)
        recv = np.empty_like(send)
        times = []
        for i in range(warmup + iterations):
            comm.Barrier()
            t = time.perf_counter()
            comm.Allreduce(send, recv, op=MPI.SUM)
            if i >= warmup:
                times.append(time.perf_counter() - t)
        out[n] = times
    gathered = comm.gather(out, root=0)
    if comm.Get_rank() == 0:
        mean = {n: [sum(r[n][i] for r in gathered) / len(gathered) for i in range(len(out[n]))] for n in out}
        print("PLAIN " + json.dumps(mean))
""")


def repro_run(sizes: list[int], iterations: int, large_iterations: int, warmup: int, store: Path,
              inventory: Path = REPO / "inventories" / "localhost") -> dict[int, tuple[list[float], list[float]]]:
    """Latency of each timed iteration per size along the raw and the Horovod path, from one `repro bench` run."""
    argv = [sys.executable, "-m", "repro", "bench", "--stack", str(REPO / "stacks" / "cpu-tf215.yaml"),
            "--hosts", str(inventory), "--runtime", "host", "--workload", "allreduce",
            "--workers", "2", "--repeats", "1", "--sizes", ",".join(map(str, sizes)), "--dtypes", "fp32",
            "--iterations", str(iterations), "--large-iterations", str(large_iterations),
            "--warmup-iterations", str(warmup), "--store", str(store), "-q"]
    subprocess.run(argv, cwd=REPO, check=True, capture_output=True, text=True)
    from repro.results.store import Store

    rec = max(Store(store).records(), key=lambda r: r.created)
    return {row["elements"]: (row["raw"]["latencies"], row["latencies"]) for row in rec.metrics["results"]}


def plain_run(sizes: list[int], iterations: int, large_iterations: int, warmup: int,
              cluster=None) -> dict[int, list[float]]:
    """Latency of each timed iteration per size of the plain program under mpirun (from h1 across the cluster
    with --cluster), with the iteration counts repro's workload uses for the same sizes and flags."""
    from repro.workloads.allreduce import iteration_counts

    plan = [[n, *iteration_counts(n * 4, iterations, warmup, large_iterations)] for n in sizes]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(PLAIN)
    program = [sys.executable, fh.name, json.dumps(plan)]
    env = None
    if cluster is None:
        argv = ["mpirun", "--allow-run-as-root", "-np", "2", "-H", "localhost:2", "--bind-to", "none",
                "--mca", "pml", "ob1", "--mca", "btl", "^openib", *program]
    else:
        from tests.cluster.fixtures import cluster_env, mpirun_across

        argv = mpirun_across(cluster, program)
        env = cluster_env(cluster.name, cluster.state_dir)
    out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout
    os.unlink(fh.name)
    line = next(ln for ln in out.splitlines() if ln.startswith("PLAIN "))
    return {int(k): v for k, v in json.loads(line[6:]).items()}


def trimmed_mean(values: list[float], cut: float = TRIM) -> float:
    """Mean of the values without the lowest and highest `cut` fraction (each side)."""
    ordered = sorted(values)
    k = int(len(ordered) * cut)
    kept = ordered[k:len(ordered) - k] or ordered
    return sum(kept) / len(kept)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="262144,1048576,4194304,10485760", help="element counts (fp32)")
    ap.add_argument("--iterations", type=int, default=100, help="timed all-reduces per size below 1 MiB")
    ap.add_argument("--large-iterations", type=int, default=100, help="timed all-reduces per size from 1 MiB on "
                    "(the workload's default is 10; more here for steadier figures, see above)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cluster", action="store_true", help="one rank on each host of a two-host test cluster")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    sizes = [int(x) for x in args.sizes.split(",")]
    # per size, one list of per-iteration latencies per repeat
    raw: dict[int, list[list[float]]] = {n: [] for n in sizes}
    hvd: dict[int, list[list[float]]] = {n: [] for n in sizes}
    plain: dict[int, list[list[float]]] = {n: [] for n in sizes}
    from tests.cluster.fixtures import host_runtime_inventory, running_cluster

    name = os.environ.get("REPRO_CLUSTER_NAME") or "bench"
    with tempfile.TemporaryDirectory() as tmp, \
            (running_cluster(name, 2, docker=False) if args.cluster else contextlib.nullcontext()) as cluster:
        inventory = REPO / "inventories" / "localhost"
        if cluster is not None:
            inventory = host_runtime_inventory(cluster, Path(tmp) / "inventory.yml")
        for repeat in range(args.repeats):
            order = ("repro", "plain") if repeat % 2 == 0 else ("plain", "repro")
            for side in order:
                if side == "repro":
                    for n, (r, h) in repro_run(sizes, args.iterations, args.large_iterations, args.warmup,
                                               Path(tmp), inventory).items():
                        raw[n].append(r)
                        hvd[n].append(h)
                else:
                    for n, p in plain_run(sizes, args.iterations, args.large_iterations, args.warmup,
                                          cluster).items():
                        plain[n].append(p)
            print(f"repeat {repeat + 1}/{args.repeats} done", file=sys.stderr)
    print(f"{'bytes':>12} {'plain us':>10} {'raw us':>10} {'horovod us':>11} {'raw/plain busbw':>16} "
          f"{'horovod/raw busbw':>18}  raw/plain per repeat (medians)")
    for n in sizes:
        # every timed iteration of every repeat, pooled per side
        p, r, h = (trimmed_mean([t for run in v[n] for t in run]) for v in (plain, raw, hvd))
        each = " ".join(f"{statistics.median(pi) / statistics.median(ri):.2f}"
                        for pi, ri in zip(plain[n], raw[n], strict=True))
        # busbw is bytes/latency times a constant: the bandwidth ratio is the inverse latency ratio
        print(f"{n * 4:>12} {p * 1e6:>10.1f} {r * 1e6:>10.1f} {h * 1e6:>11.1f} {p / r:>16.3f} {r / h:>18.3f}  {each}")
    print(f"latency: {TRIM:.0%}-trimmed mean over every timed iteration of {args.repeats} repeats per side")
    print(f"ranks: {'one on each of two test-cluster hosts (veth bridge)' if args.cluster else '2 on this machine'}")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
