"""Is repro's raw all-reduce path the fabric, and what does Horovod get out of it? Two ratios, same run.

    python bench/allreduce_paths.py [--sizes 262144,1048576,4194304,10485760] [--iterations 30] [--repeats 3]

Side by side on this machine's 2 local ranks, or with --cluster one rank on each host of a two-host test
cluster (tests/cluster/cluster.sh: network namespaces joined by a veth bridge, torn down afterwards; name from
REPRO_CLUSTER_NAME, default `bench`), the host runtime, the same Open MPI for all:
  raw      `repro bench --workload allreduce`'s raw path: MPI_Allreduce through mpi4py, barrier per iteration
  plain    a plain mpi4py program doing exactly that, under mpirun directly (the peer: no repro around it)
  horovod  the same `repro bench` run's Horovod path (hvd.allreduce with its background cycle and fusion)
Repeats alternate which side runs first. Prints per size (in bytes, fp32) the median latencies, then
raw/plain of bus bandwidth (target >= 0.95 at >= 1 MB: the raw path measures the fabric, not repro) and
horovod/raw (what Horovod gets out of it). Figures only; nothing is asserted.
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
PLAIN = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    sizes, iterations, warmup = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    out = {}
    for n in sizes:
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
        mean = {n: [sum(r[n][i] for r in gathered) / len(gathered) for i in range(iterations)] for n in sizes}
        print("PLAIN " + json.dumps({n: sorted(v)[len(v) // 2] for n, v in mean.items()}))
""")


def repro_run(sizes: list[int], iterations: int, warmup: int, store: Path,
              inventory: Path = REPO / "inventories" / "localhost") -> dict[int, tuple[float, float]]:
    """Median latency per size of the raw and the Horovod path, from one `repro bench` run."""
    argv = [sys.executable, "-m", "repro", "bench", "--stack", str(REPO / "stacks" / "cpu-tf215.yaml"),
            "--hosts", str(inventory), "--runtime", "host", "--workload", "allreduce",
            "--workers", "2", "--repeats", "1", "--sizes", ",".join(map(str, sizes)), "--dtypes", "fp32",
            "--iterations", str(iterations), "--warmup-iterations", str(warmup), "--store", str(store), "-q"]
    subprocess.run(argv, cwd=REPO, check=True, capture_output=True, text=True)
    from repro.results.store import Store

    rec = max(Store(store).records(), key=lambda r: r.created)
    return {row["elements"]: (row["raw"]["latency_median"], row["latency_median"]) for row in rec.metrics["results"]}


def plain_run(sizes: list[int], iterations: int, warmup: int, cluster=None) -> dict[int, float]:
    """Median latency per size of the plain program under mpirun (from h1 across the cluster with --cluster)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(PLAIN)
    program = [sys.executable, fh.name, json.dumps(sizes), str(iterations), str(warmup)]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="262144,1048576,4194304,10485760", help="element counts (fp32)")
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cluster", action="store_true", help="one rank on each host of a two-host test cluster")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    sizes = [int(x) for x in args.sizes.split(",")]
    raw: dict[int, list[float]] = {n: [] for n in sizes}
    hvd: dict[int, list[float]] = {n: [] for n in sizes}
    plain: dict[int, list[float]] = {n: [] for n in sizes}
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
                    for n, (r, h) in repro_run(sizes, args.iterations, args.warmup, Path(tmp), inventory).items():
                        raw[n].append(r)
                        hvd[n].append(h)
                else:
                    for n, p in plain_run(sizes, args.iterations, args.warmup, cluster).items():
                        plain[n].append(p)
            print(f"repeat {repeat + 1}/{args.repeats} done", file=sys.stderr)
    print(f"{'bytes':>12} {'plain us':>10} {'raw us':>10} {'horovod us':>11} {'raw/plain busbw':>16} "
          f"{'horovod/raw busbw':>18}")
    for n in sizes:
        p, r, h = (statistics.median(v[n]) for v in (plain, raw, hvd))
        # busbw is bytes/latency times a constant: the bandwidth ratio is the inverse latency ratio
        print(f"{n * 4:>12} {p * 1e6:>10.1f} {r * 1e6:>10.1f} {h * 1e6:>11.1f} {p / r:>16.3f} {r / h:>18.3f}")
    print(f"ranks: {'one on each of two test-cluster hosts (veth bridge)' if args.cluster else '2 on this machine'}")
    print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
