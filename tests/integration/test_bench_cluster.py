"""`repro bench` on the two-host test cluster with the docker runtime: containers from the CPU stack's
image on each host's own engine, mpirun across the hosts' addresses, faults, and the all-reduce sweep."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from repro.results.store import Store
from tests.integration.cli import run_repro

pytestmark = [pytest.mark.cluster, pytest.mark.docker, pytest.mark.tf]

ROOT = Path(__file__).resolve().parents[2]
STACK = "stacks/cpu-tf215.yaml"


def repro(*args: str, timeout: float = 1800, check: bool = True) -> subprocess.CompletedProcess:
    return run_repro(*args, timeout=timeout, check=check)


def repro_containers(docker_host: str) -> list[str]:
    out = subprocess.run(["docker", "-H", docker_host, "ps", "-aq", "--filter", "label=repro.managed=1"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return out.split()


@pytest.fixture(scope="module")
def store(cluster, tmp_path_factory) -> Path:
    """A store in which the CPU stack's image is built, verified, locked and shipped to both hosts."""
    root = tmp_path_factory.mktemp("cluster-store")
    repro("up", STACK, "--hosts", str(cluster.inventory), "--store", str(root), "--quiet")
    return root


def test_docker_sweep_runs_one_worker_per_host_and_leaves_no_container(store, cluster):
    repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workers", "1,2", "--warmup-steps", "1",
          "--steps", "4", "--batch-size", "8", "--store", str(store))
    records = [r for r in Store(store).records() if r.settings.workload == "cnn"]
    one, two = sorted(records[-2:], key=lambda r: r.settings.workers)
    assert one.status == two.status == "ok", (one.failure, two.failure)
    assert one.runtime == "docker" and one.image.image.id.startswith("sha256:")
    addresses = {h.name: h.address for h in cluster.hosts}
    assert [r.host for r in one.ranks] == ["h1"]
    assert sorted(r.host for r in two.ranks) == ["h1", "h2"]
    for rank in two.ranks:
        assert addresses[rank.host] in rank.addresses  # each rank really ran at its host's address
    assert two.settings.hosts == 2 and two.command[0] == "mpirun"
    for host in cluster.hosts:
        assert repro_containers(host.docker_host) == [], f"repro containers left on {host.name}"


def test_lost_host_fails_the_point_in_bounded_time_and_resume_completes(store, cluster):
    args = ["bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workers", "1,2", "--warmup-steps", "1",
            "--steps", "150", "--batch-size", "8", "--timeout", "900", "--store", str(store)]
    before = {r.id for r in Store(store).records()}
    proc = subprocess.Popen([sys.executable, "-m", "repro", *args], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    h2 = cluster.host("h2")
    cut_at = None
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            if repro_containers(h2.docker_host):  # the 2-worker point has started its container on h2
                time.sleep(6)
                cluster.link_down("h2")
                cut_at = time.monotonic()
                break
            time.sleep(0.5)
        assert cut_at, "the 2-worker point never started on h2"
        out, err = proc.communicate(timeout=240)
        ended = time.monotonic() - cut_at
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.link_up("h2")
    assert proc.returncode == 1, f"{out}\n{err}"
    assert ended < 120, f"the point took {ended:.0f} s to fail after the link was cut"
    new = [r for r in Store(store).records() if r.id not in before]
    one = [r for r in new if r.settings.workers == 1]
    two = [r for r in new if r.settings.workers == 2]
    assert [r.status for r in one] == ["ok"], "the earlier point must be kept"
    assert [r.status for r in two] == ["failed"] and "h2" in two[0].failure, two[0].failure
    assert repro_containers(cluster.host("h1").docker_host) == [], "h1 must be clean"

    # the host is back: --resume runs only the failed point (and sweeps what was left on h2)
    resumed = repro(*args, "--resume")
    assert "skipped (--resume)" in resumed.stderr
    after = [r for r in Store(store).records() if r.id not in before]
    assert sorted((r.settings.workers, r.status) for r in after) == [(1, "ok"), (2, "failed"), (2, "ok")]
    for host in cluster.hosts:
        assert repro_containers(host.docker_host) == []


def test_host_runtime_across_hosts_refuses_mismatched_software_then_runs(cluster, tmp_path):
    """The bare-metal path: the hosts' own TensorFlow, Horovod and MPI, checked against the stack first."""
    store = tmp_path / "store"
    args = ["bench", "--stack", STACK, "--runtime", "host", "--workers", "2", "--warmup-steps", "1", "--steps", "3",
            "--batch-size", "8", "--store", str(store)]
    # as generated, the hosts' python3 is Debian's own, without TensorFlow: refused, host by host
    refused = repro(*args, "--hosts", str(cluster.inventory), check=False)
    assert refused.returncode != 0
    assert "refusing the host runtime" in refused.stderr and "h1: TensorFlow is not importable" in refused.stderr
    assert not (store / "runs").exists()

    # point the hosts at repro's own environment (the test hosts share the filesystem) and give mpirun
    # on h1 the cluster key and known_hosts to reach h2 with
    inventory = yaml.safe_load(cluster.inventory.read_text())
    for host in inventory["all"]["children"]["workers"]["hosts"].values():
        host.update(repro_python=sys.executable, repro_launch_key=str(cluster.key),
                    repro_launch_known_hosts=str(cluster.known_hosts))
    bare_metal = tmp_path / "bare-metal.yml"
    bare_metal.write_text(yaml.safe_dump(inventory))
    repro(*args, "--hosts", str(bare_metal))
    (rec,) = Store(store).records()
    assert rec.status == "ok" and rec.runtime == "host"
    assert sorted(r.host for r in rec.ranks) == ["h1", "h2"]
    assert set(rec.host_software) == {"h1", "h2"} and rec.host_software["h2"].tensorflow == "2.15.1"


MPI4PY_ALLREDUCE = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    out = {}
    for n in json.loads(sys.argv[1]):
        send = np.ones(n, dtype=np.float32)
        recv = np.empty_like(send)
        for _ in range(3):
            comm.Allreduce(send, recv, op=MPI.SUM)
        times = []
        for _ in range(int(sys.argv[2])):
            comm.Barrier()
            t = time.perf_counter()
            comm.Allreduce(send, recv, op=MPI.SUM)
            times.append(time.perf_counter() - t)
        assert recv[0] == comm.Get_size()
        out[n] = float(np.median(times))
    if comm.Get_rank() == 0:
        print("MPI4PY " + json.dumps(out))
""")


def test_allreduce_sweep_with_mpi_and_gloo_matches_a_plain_mpi_allreduce(store, cluster, tmp_path):
    plot = tmp_path / "allreduce.png"
    proc = repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workload", "allreduce",
                 "--backends", "mpi,gloo", "--workers", "2", "--min-exp", "2", "--max-exp", "6.6", "--num", "10",
                 "--iterations", "20", "--warmup-iterations", "3", "--dtypes", "fp32", "--link-gbps", "10",
                 "--plot", str(plot), "--store", str(store))
    assert "busbw" in proc.stdout and plot.read_bytes()[:4] == b"\x89PNG"
    records = [r for r in Store(store).records() if r.settings.workload == "allreduce" and r.status == "ok"]
    by_backend = {r.world.get("controller"): r for r in records[-2:]}
    assert set(by_backend) == {"mpi", "gloo"}
    for backend, rec in by_backend.items():
        assert sorted(r.host for r in rec.ranks) == ["h1", "h2"]
        rows = sorted(rec.metrics["results"], key=lambda x: x["elements"])
        assert len(rows) >= 5
        assert rows[-1]["busbw_median"] > rows[0]["busbw_median"], f"{backend}: bus bandwidth must rise with size"
        for row in rows:  # busbw = algbw * 2(n-1)/n with n = 2
            assert row["busbw_median"] == pytest.approx(row["algbw_median"], rel=1e-6)

    # the same sizes through a plain MPI all-reduce (mpi4py) between the same two hosts
    sizes = [r["elements"] for r in sorted(by_backend["mpi"].metrics["results"], key=lambda x: x["elements"])]
    script = tmp_path / "mpi4py_allreduce.py"
    script.write_text(MPI4PY_ALLREDUCE)
    h1, h2 = cluster.hosts
    rsh = f"-i {cluster.key} -o UserKnownHostsFile={cluster.known_hosts} -o StrictHostKeyChecking=yes"
    argv = ["mpirun", "--allow-run-as-root", "-np", "2", "-H", f"{h1.address}:1,{h2.address}:1",
            "--mca", "plm_rsh_args", rsh, "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include",
            "eth0", "--mca", "pml", "ob1", "--mca", "btl", "^openib", sys.executable, str(script),
            json.dumps(sizes), "20"]
    res = cluster.exec("h1", argv, timeout=300)
    assert res.returncode == 0, res.stderr
    plain = json.loads(next(line for line in res.stdout.splitlines() if line.startswith("MPI4PY "))[7:])
    hvd = {r["elements"]: r["latency_median"] for r in by_backend["mpi"].metrics["results"] if r["dtype"] == "fp32"}
    # below ~1e6 elements Horovod's latency is its 1 ms background cycle (HOROVOD_CYCLE_TIME), not the network
    large = [n for n in sizes if n >= 10**6]
    assert len(large) >= 2
    for n in large:
        ratio = hvd[n] / plain[str(n)]
        # Horovod adds its background thread and tensor fusion on top of the same MPI_Allreduce:
        # the same order of magnitude, not the same figure
        assert 0.1 < ratio < 10, f"{n} elements: Horovod {hvd[n]:.2e} s vs MPI {plain[str(n)]:.2e} s"
