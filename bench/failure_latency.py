"""How fast does a point end when it is interrupted or loses a host? repro vs a plain mpirun of the same job.

    python bench/failure_latency.py [--delay 8] [--repeats 3]     # Ctrl-C, on this machine
    python bench/failure_latency.py --lost-host [--cap 300]       # a host's link cut, on the test cluster

Ctrl-C: `repro bench` (host runtime, inventories/localhost, 2 workers, CNN with endless steps) gets
SIGINT --delay seconds after its workers started; the peer is `mpirun -np 2 python -m
repro.workloads.cnn` with the same arguments and the same SIGINT. Measured: from the signal until the
launcher has exited and none of its workers is left (workers are told apart from other runs' by an
environment marker they inherit).

Lost host: a two-host test cluster (tests/cluster/cluster.sh; name from REPRO_CLUSTER_NAME, default
`bench`; torn down afterwards) runs the same 2-worker job with the host runtime, one worker on each host,
and h2's link is cut --delay seconds after its worker started. repro's own probes should end the point;
the peer is the same job under a plain mpirun from h1, which has only MPI's own error detection (capped
at --cap seconds). Measured: from the cut until the launcher exits.

Prints every measurement, the medians and the ratio repro / mpirun. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.cluster.fixtures import (  # noqa: E402
    cluster_env,
    host_runtime_inventory,
    mpirun_across,
    running_cluster,
)

STACK = REPO / "stacks" / "cpu-tf215.yaml"
CNN = ["--model", "resnet20", "--batch-size", "8", "--warmup-steps", "1", "--steps", "1000000"]


def pids_with(marker: str, pids: Callable[[], list[str]] | None = None) -> list[int]:
    """Workload processes whose environment holds `marker` (of `pids()`, default every process)."""
    candidates = pids() if pids else [p.name for p in Path("/proc").iterdir() if p.name.isdigit()]
    found = []
    for pid in candidates:
        try:
            proc = Path("/proc", pid)
            if b"repro.workloads" in (proc / "cmdline").read_bytes() and marker.encode() in (
                    proc / "environ").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


def workers_in(namespace: str) -> list[int]:
    """Workload processes inside a network namespace (a test-cluster host)."""
    out = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split() if b"repro.workloads" in _cmdline(p)]


def _cmdline(pid: str) -> bytes:
    try:
        return Path("/proc", pid, "cmdline").read_bytes()
    except OSError:
        return b""


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up: {what} within {timeout:.0f} s")
        time.sleep(0.2)


def end_after(proc: subprocess.Popen, started: Callable[[], bool], act: Callable[[], None], gone: Callable[[], bool],
              delay: float, cap: float) -> float | None:
    """Wait for the workers, wait `delay`, act; seconds until proc exited and gone() holds (None past cap)."""
    wait_for(lambda: started() or proc.poll() is not None, 600, "the workers to start")
    if proc.poll() is not None:
        raise SystemExit(f"the launcher ended before the workers started:\n{proc.stderr.read()[-3000:]}")
    time.sleep(delay)
    act()
    began = time.monotonic()
    while time.monotonic() - began < cap:
        if proc.poll() is not None and gone():
            return time.monotonic() - began
        time.sleep(0.05)
    proc.kill()
    return None


def interrupt_once(repro_side: bool, delay: float, cap: float, store: Path) -> float | None:
    marker = f"REPRO_BENCH_MARKER={uuid.uuid4().hex}"
    env = dict(os.environ, REPRO_BENCH_MARKER=marker.split("=", 1)[1])
    if repro_side:
        argv = [sys.executable, "-m", "repro", "bench", "--stack", str(STACK), "--hosts", "inventories/localhost",
                "--workers", "2", *CNN[2:], "--store", str(store)]
    else:
        argv = ["mpirun", "--allow-run-as-root", "-np", "2", "--bind-to", "none", sys.executable, "-m",
                "repro.workloads.cnn", *CNN, "--intra-threads", "1"]
    # SIGINT at its default: when this script runs with it ignored (nohup, a background job), children inherit that
    proc = subprocess.Popen(["env", "--default-signal=INT", *argv], cwd=REPO, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        return end_after(proc, lambda: len(pids_with(marker)) >= 2, lambda: proc.send_signal(signal.SIGINT),
                         lambda: not pids_with(marker), delay, cap)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in pids_with(marker):  # a side that left workers behind: do not let them skew the next run
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def lost_host_once(cluster, repro_side: bool, delay: float, cap: float, tmp: Path) -> float | None:
    h2 = cluster.host("h2")
    if repro_side:
        path = host_runtime_inventory(cluster, tmp / "inventory.yml")
        argv = [sys.executable, "-m", "repro", "bench", "--stack", str(STACK), "--runtime", "host", "--hosts",
                str(path), "--workers", "2", *CNN[2:], "--store", str(tmp / "store")]
        proc = subprocess.Popen(argv, cwd=REPO, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    else:
        argv = mpirun_across(cluster, [sys.executable, "-m", "repro.workloads.cnn", *CNN, "--intra-threads", "1"])
        proc = subprocess.Popen(argv, cwd=REPO, env=cluster_env(cluster.name, cluster.state_dir), text=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        return end_after(proc, lambda: bool(workers_in(h2.namespace)), lambda: cluster.link_down("h2"),
                         lambda: True, delay, cap)
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.link_up("h2")
        for host in cluster.hosts:  # workers the cut orphaned on either host
            for pid in workers_in(host.namespace):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def report(what: str, results: dict[str, list[float | None]], cap: float) -> None:
    print(f"{what}: seconds from the event until the launcher ended")
    medians = {}
    for side, values in results.items():
        shown = ", ".join(f"{v:.2f}" if v is not None else f">{cap:.0f}" for v in values)
        done = [v if v is not None else float("inf") for v in values]
        medians[side] = statistics.median(done)
        print(f"  {side:7s} median {medians[side]:8.2f}   ({shown})")
    if medians["mpirun"] == float("inf"):
        print(f"  ratio repro/mpirun below {medians['repro'] / cap:.3f} (mpirun did not end within {cap:.0f} s)")
    else:
        print(f"  ratio repro/mpirun {medians['repro'] / medians['mpirun']:.2f}")


def main() -> int:
    """Alternate repro and the plain mpirun, --repeats times each; print the times and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lost-host", action="store_true", help="cut a test-cluster host's link instead of Ctrl-C")
    parser.add_argument("--delay", type=float, default=8.0, help="seconds between the workers' start and the event")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cap", type=float, default=300.0, help="give up waiting for a side after this long")
    args = parser.parse_args()
    results: dict[str, list[float | None]] = {"repro": [], "mpirun": []}
    name = os.environ.get("REPRO_CLUSTER_NAME") or "bench"
    with tempfile.TemporaryDirectory(prefix="repro-bench-") as tmp, \
            (running_cluster(name, 2, docker=False) if args.lost_host else contextlib.nullcontext()) as cluster:
        for repeat in range(args.repeats):
            order = ["repro", "mpirun"] if repeat % 2 == 0 else ["mpirun", "repro"]
            for side in order:
                work = Path(tmp) / f"{side}-{repeat}"
                work.mkdir()
                if args.lost_host:
                    took = lost_host_once(cluster, side == "repro", args.delay, args.cap, work)
                else:
                    took = interrupt_once(side == "repro", args.delay, args.cap, work)
                results[side].append(took)
                shown = f"{took:.2f} s" if took is not None else f"more than {args.cap:.0f} s"
                print(f"  repeat {repeat + 1} {side:7s} {shown}", flush=True)
    report("lost host h2 (link cut)" if args.lost_host else "Ctrl-C", results, args.cap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
