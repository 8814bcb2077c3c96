"""`repro bench` on the two-host test cluster with the docker runtime: containers from the CPU stack's
image on each host's own engine, mpirun across the hosts' addresses, faults, and the all-reduce sweep.
TensorFlow and Horovod run where they are the subject (a CNN sweep, the all-reduce sweep); the plumbing
tests (a lost host, resume, the host runtime's placement, interleaving) run the probe workload.

Timings are not asserted here: bench/allreduce_paths.py --cluster prints the all-reduce paths against a
plain MPI all-reduce, bench/failure_latency.py how fast a lost host ends a point.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.results.store import Store
from tests.cluster.fixtures import host_runtime_inventory
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
def store(cluster, cpu_image, tmp_path_factory) -> Path:
    """A store in which the CPU stack's image (built once per session by `cpu_image`, on the local engine)
    is verified, locked and shipped to both hosts."""
    root = tmp_path_factory.mktemp("cluster-store")
    repro("up", STACK, "--hosts", str(cluster.inventory), "--store", str(root), "--quiet")
    return root


def test_docker_sweep_runs_one_worker_per_host_and_leaves_no_container(store, cluster):
    before = {r.id for r in Store(store).records()}
    repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workers", "1,2", "--warmup-steps", "1",
          "--steps", "4", "--batch-size", "8", "--repeats", "1", "--store", str(store))
    records = [r for r in Store(store).records() if r.id not in before]
    one, two = sorted(records, key=lambda r: r.settings.workers)
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


def _refused_before_start(store: Path, inventory: Path, cluster, host: str, *causes: str) -> str:
    """`repro bench` over both hosts must stop before any worker starts: exit 1, the host and the cause
    named, no record, no repro container on any host. Returns its stderr."""
    records = len(Store(store).records())
    began = time.monotonic()
    proc = repro("bench", "--stack", STACK, "--hosts", str(inventory), "--workers", "2", "--warmup-steps", "1",
                 "--steps", "3", "--batch-size", "8", "--repeats", "1", "--store", str(store), check=False, timeout=300)
    elapsed = time.monotonic() - began  # reported, not asserted (the probes' bound is PREFLIGHT_TIMEOUT)
    print(f"refused in {elapsed:.1f} s: {proc.stderr.strip().splitlines()[-3:]}")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "nothing was started" in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if host in line and any(c in line for c in causes)]
    assert lines, f"no line names {host} and one of {causes}:\n{proc.stderr}"
    assert len(Store(store).records()) == records, "no point may run"
    for h in cluster.hosts:
        assert repro_containers(h.docker_host) == [], f"a container was started on {h.name}"
    return proc.stderr


def test_an_unreachable_host_stops_the_sweep_before_anything_starts(store, cluster):
    with cluster.faulted("link-down", "h2"):
        _refused_before_start(store, cluster.inventory, cluster, "h2", "does not answer", "unreachable")


def test_a_host_that_refuses_ssh_stops_the_sweep_before_anything_starts(store, cluster):
    with cluster.faulted("sshd-stop", "h2"):
        _refused_before_start(store, cluster.inventory, cluster, "h2", "connection refused")


def test_a_wrong_host_key_stops_the_sweep_before_anything_starts(store, cluster, tmp_path):
    """h2's entry in known_hosts holds h1's key (as after a host was reinstalled, or a man in the middle)."""
    import yaml

    h1, h2 = cluster.host("h1"), cluster.host("h2")
    entries = cluster.known_hosts.read_text().splitlines()
    h1_keys = [line.split(None, 1)[1] for line in entries if line.split(None, 1)[0].split(",")[0] in (h1.address,
                                                                                                       "h1")]
    assert h1_keys, cluster.known_hosts.read_text()
    wrong = [line for line in entries if h2.address not in line.split(None, 1)[0].split(",")]
    wrong += [f"{h2.address} {key}" for key in h1_keys]
    known = tmp_path / "known_hosts"
    known.write_text("\n".join(wrong) + "\n")
    inventory = yaml.safe_load(cluster.inventory.read_text())
    for host in inventory["all"]["children"]["workers"]["hosts"].values():
        host["repro_known_hosts"] = str(known)
        host["ansible_ssh_common_args"] = f"-o UserKnownHostsFile={known} -o StrictHostKeyChecking=yes"
    path = tmp_path / "wrong-key.yml"
    path.write_text(yaml.safe_dump(inventory))
    _refused_before_start(store, path, cluster, "h2", "does not match")


def test_a_host_without_the_image_stops_the_sweep_before_anything_starts(store, cluster):
    """The image's tag is taken off h2's engine (its layers stay: the tag is put back afterwards)."""
    lock = Store(store).lock(_stack_hash())
    tag, aside = lock.image.tag, f"repro-test-aside:{lock.image.id.split(':')[-1][:12]}"
    h2 = cluster.host("h2")

    def docker(*args: str) -> None:
        subprocess.run(["docker", "-H", h2.docker_host, *args], capture_output=True, text=True, timeout=120,
                       check=True)

    docker("tag", tag, aside)
    docker("rmi", tag)
    try:
        _refused_before_start(store, cluster.inventory, cluster, "h2", "is not there")
    finally:
        docker("tag", aside, tag)
        docker("rmi", aside)


def _stack_hash() -> str:
    from repro.manifest import load_stack

    return load_stack(ROOT / STACK).hash


def test_lost_host_fails_the_point_in_bounded_time_and_resume_completes(store, cluster):
    # 150 steps of 0.1 s: the 2-worker point is still stepping when h2's link is cut 6 s after its container
    # started (at least 9 s of steps left), and each point (the 1-worker one, the resumed one) costs 15 s, not 30
    args = ["bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workload", "probe", "--workers", "1,2",
            "--warmup-steps", "1", "--steps", "150", "--step-time", "0.1", "--batch-size", "8", "--repeats", "1",
            "--store", str(store)]
    before = {r.id for r in Store(store).records()}
    # a time limit below the guard on communicate() below: a lost host that went unnoticed shows as the
    # point's time limit in its failure, not as a hung test
    proc = subprocess.Popen([sys.executable, "-m", "repro", *args, "--timeout", "500"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
        out, err = proc.communicate(timeout=600)  # a guard against a hang, not a speed check
    finally:
        if proc.poll() is None:
            proc.kill()
        cluster.link_up("h2")
    assert proc.returncode == 1, f"{out}\n{err}"
    new = [r for r in Store(store).records() if r.id not in before]
    one = [r for r in new if r.settings.workers == 1]
    two = [r for r in new if r.settings.workers == 2]
    assert [r.status for r in one] == ["ok"], "the earlier point must be kept"
    assert [r.status for r in two] == ["failed"] and "h2" in two[0].failure, two[0].failure
    assert "time limit" not in two[0].failure, "the lost host must end the point, not its time limit"
    assert repro_containers(cluster.host("h1").docker_host) == [], "h1 must be clean"

    # the host is back: --resume runs only the failed point (and sweeps what was left on h2), with the
    # default time limit
    resumed = repro(*args, "--resume")
    assert "skipped (--resume)" in resumed.stderr
    after = [r for r in Store(store).records() if r.id not in before]
    assert sorted((r.settings.workers, r.status) for r in after) == [(1, "ok"), (2, "failed"), (2, "ok")]
    for host in cluster.hosts:
        assert repro_containers(host.docker_host) == []


def _start_long_docker_point(store: Path, cluster) -> tuple[subprocess.Popen, set[str]]:
    """`repro bench` of a 2-worker probe point that steps for minutes, returned once its container runs on h2."""
    before = {r.id for r in Store(store).records()}
    argv = [sys.executable, "-m", "repro", "bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workload",
            "probe", "--workers", "2", "--warmup-steps", "1", "--steps", "3000", "--step-time", "0.1", "--batch-size",
            "8", "--repeats", "1", "--timeout", "500", "--store", str(store)]
    # SIGINT at its default, as in a terminal (a background job of a script inherits it ignored)
    proc = subprocess.Popen(["env", "--default-signal=INT", *argv], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None and not repro_containers(cluster.host("h2").docker_host):
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    assert repro_containers(cluster.host("h2").docker_host), "the point never started its container on h2"
    time.sleep(5)  # the ranks are stepping
    return proc, before


def test_ctrl_c_on_the_docker_runtime_records_the_point_and_removes_every_container(store, cluster):
    proc, before = _start_long_docker_point(store, cluster)
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)  # a guard against a hang, not a speed check
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, f"{out}\n{err}"
    (rec,) = [r for r in Store(store).records() if r.id not in before]
    assert rec.status == "failed" and rec.failure.startswith("interrupted"), rec.failure
    for host in cluster.hosts:
        assert repro_containers(host.docker_host) == [], f"repro containers left on {host.name}"


def test_an_engine_that_dies_mid_run_fails_the_point_naming_its_host(store, cluster):
    proc, before = _start_long_docker_point(store, cluster)
    try:
        with cluster.faulted("engine-kill", "h2"):
            out, err = proc.communicate(timeout=600)  # a guard against a hang, not a speed check
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, f"{out}\n{err}"
    (rec,) = [r for r in Store(store).records() if r.id not in before]
    assert rec.status == "failed" and "h2" in rec.failure, rec.failure
    assert "time limit" not in rec.failure, "the dead engine must end the point, not its time limit"
    assert repro_containers(cluster.host("h1").docker_host) == [], "h1 must be clean"
    # h2's container could not be removed while its engine was dead: take it away for the next tests
    h2 = cluster.host("h2").docker_host
    for container in repro_containers(h2):
        subprocess.run(["docker", "-H", h2, "rm", "--force", container], capture_output=True, timeout=120, check=False)
    assert repro_containers(h2) == []


def test_host_runtime_across_hosts_refuses_mismatched_software_then_runs(cluster, tmp_path):
    """The bare-metal path: the hosts' own TensorFlow, Horovod and MPI, checked against the stack first (the
    check is the subject: the run after it is the probe's)."""
    store = tmp_path / "store"
    args = ["bench", "--stack", STACK, "--runtime", "host", "--workload", "probe", "--workers", "2",
            "--warmup-steps", "1", "--steps", "3", "--batch-size", "8", "--repeats", "1", "--store", str(store)]
    # as generated, the hosts' python3 is Debian's own, without TensorFlow: refused, host by host
    refused = repro(*args, "--hosts", str(cluster.inventory), check=False)
    assert refused.returncode != 0
    assert "refusing the host runtime" in refused.stderr, refused.stderr
    assert "h1: tensorflow: pinned 2.15.1, found none" in refused.stderr and "h2: horovod" in refused.stderr
    assert not (store / "runs").exists()

    # point the hosts at repro's own environment (the test hosts share the filesystem) and give mpirun
    # on h1 the cluster key and known_hosts to reach h2 with
    bare_metal = host_runtime_inventory(cluster, tmp_path / "bare-metal.yml")
    repro(*args, "--hosts", str(bare_metal))
    (rec,) = Store(store).records()
    assert rec.status == "ok" and rec.runtime == "host"
    assert sorted(r.host for r in rec.ranks) == ["h1", "h2"]
    assert set(rec.host_software) == {"h1", "h2"}
    assert rec.host_software["h2"].framework("tensorflow").version == "2.15.1"


def test_interleaved_a_b_runs_alternate_across_both_hosts_and_compare_pairs_them(cluster, tmp_path):
    twin = tmp_path / "cpu-tf215-twin.yaml"  # the same software; one extra variable, so another stack hash
    twin.write_text(f"extends: {ROOT / STACK}\ndescription: cpu-tf215 twin\nenv: {{REPRO_TWIN: '1'}}\n")
    store = tmp_path / "store"
    bare_metal = host_runtime_inventory(cluster, tmp_path / "bare-metal.yml")
    repro("bench", "--stack", STACK, "--stack", str(twin), "--runtime", "host", "--hosts", str(bare_metal),
          "--workload", "probe", "--workers", "2", "--warmup-steps", "1", "--steps", "4", "--step-time", "0.3",
          "--batch-size", "8", "--repeats", "2", "--store", str(store))  # runs over a second: created orders them
    records = sorted(Store(store).records(), key=lambda r: (r.created, r.id))
    assert len(records) == 4 and all(r.status == "ok" for r in records), [r.failure for r in records]
    hashes = [r.stack.hash for r in records]
    assert hashes[0] == hashes[2] != hashes[1] == hashes[3], "A B A B"
    pairs = [r.sweep.pair for r in records]
    assert pairs[0] == pairs[1] != pairs[2] == pairs[3] and None not in pairs
    for rec in records:
        assert sorted(r.host for r in rec.ranks) == ["h1", "h2"]
    compared = repro("compare", STACK, str(twin), "--store", str(store)).stdout
    assert "2 interleaved pairs: paired comparison" in compared, compared


def test_allreduce_sweep_with_mpi_and_gloo_runs_across_both_hosts(store, cluster, tmp_path):
    plot = tmp_path / "allreduce.png"
    proc = repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workload", "allreduce",
                 "--backends", "mpi,gloo", "--workers", "2", "--min-exp", "2", "--max-exp", "6.6", "--num", "10",
                 "--iterations", "20", "--warmup-iterations", "3", "--dtypes", "fp32", "--link-gbps", "10",
                 "--repeats", "1", "--plot", str(plot), "--store", str(store))
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



# ---------------------------------------------------------------- --scheduler kubernetes, through the operators'
# contract: a stand-in kubectl (tests/cluster/kube_emulator.py) runs the pods of the TrainJob repro renders as
# containers of the stack's image on the hosts' engines, with the environment, mounts (SSH key Secret, hostfile,
# /dev/shm), commands and start order of Trainer's MPI plugin. No Kubernetes is involved (docs/kubernetes.md).

KUBE_TINY = ("--workload", "allreduce", "--sizes", "1000,100000", "--iterations", "3", "--warmup-iterations", "1",
             "--raw", "false", "--repeats", "1", "--workers", "2")


@pytest.fixture()
def emulated_kubectl(cluster, tmp_path, monkeypatch) -> Path:
    """`kubectl` first on PATH: the emulator of the operators' contract on this cluster's engines (its state)."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kubectl"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'cluster' / 'kube_emulator.py'} \"$@\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("REPRO_KUBE_EMULATOR", str(tmp_path / "operator"))
    monkeypatch.setenv("REPRO_KUBE_CLUSTER", str(cluster.state_dir / "cluster.json"))
    return tmp_path / "operator"


def _store_with_locks(source: Path, target: Path) -> Path:
    """A new store holding the image locks of `source` (and no records)."""
    import shutil

    shutil.copytree(source / "locks", target / "locks")
    return target


def test_a_trainjob_runs_through_the_operators_mpi_contract_and_compares_like_any_other(store, cluster,
                                                                                    emulated_kubectl, tmp_path):
    kube = _store_with_locks(store, tmp_path / "kube-results")
    repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--scheduler", "kubernetes", *KUBE_TINY,
          "--store", str(kube))
    (rec,) = Store(kube).records()
    assert rec.status == "ok", rec.failure
    assert rec.batch.scheduler == "kubernetes" and rec.batch.state == "ok"
    assert rec.batch.nodes == ["h1", "h2"] and "kind: TrainJob" in rec.batch.script
    assert [h.name for h in rec.hosts] == ["h1", "h2"]  # where the rank pods ran (not the launcher pod)
    addresses = {h.name: h.address for h in cluster.hosts}
    for rank in rec.ranks:
        assert addresses[rank.host] in rank.addresses  # each rank ran in the pod on its node
    assert "StrictHostKeyChecking=yes" in " ".join(rec.command)  # the job's own host key was checked
    for host in cluster.hosts:  # the job was deleted, its pods with it
        assert subprocess.run(["docker", "-H", host.docker_host, "ps", "-aq", "--filter", "label=repro.kube.pod"],
                              capture_output=True, text=True, timeout=60, check=True).stdout.split() == []
    assert not [p for p in emulated_kubectl.iterdir() if p.is_dir()]

    direct = _store_with_locks(store, tmp_path / "direct-results")
    repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), *KUBE_TINY, "--store", str(direct))
    compared = repro("compare", str(direct), str(kube))
    rows = [line.split() for line in compared.stdout.splitlines() if line.split()[:2] == ["2", "hvd"]]
    assert len(rows) == 2, compared.stdout  # both sizes aligned, direct (OLD) against kubernetes (NEW)


def test_an_mpijob_runs_through_the_mpi_operators_contract(store, cluster, emulated_kubectl, tmp_path):
    """The MPI Operator's side (workers, then the launcher once they are Ready, the hostfile at /etc/mpi with
    slots, the SSH key Secret, OMPI_MCA_* as the operator sets them), with the probe: the framework is not the
    subject here."""
    kube = _store_with_locks(store, tmp_path / "mpijob-results")
    repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--scheduler", "kubernetes",
          "--k8s-kind", "mpijob", "--workload", "probe", "--steps", "3", "--warmup-steps", "1", "--repeats", "1",
          "--workers", "2", "--store", str(kube))
    (rec,) = Store(kube).records()
    assert rec.status == "ok", rec.failure
    assert rec.batch.detail["kind"] == "mpijobs.kubeflow.org" and rec.batch.state == "ok"
    assert "kind: MPIJob" in rec.batch.script
    pods = sorted(rec.batch.detail["pods"])
    assert [p for p in pods if "-worker-" in p] == [f"{rec.batch.id}-worker-0", f"{rec.batch.id}-worker-1"]
    assert [h.name for h in rec.hosts] == ["h1", "h2"] and rec.batch.nodes == ["h1", "h2"]
    assert sorted(r.host for r in rec.ranks) == ["h1", "h2"]  # both ranks' lines parsed (the probe merges them)
    assert all(len(r.step_times) == 3 for r in rec.ranks)
    for host in cluster.hosts:
        assert subprocess.run(["docker", "-H", host.docker_host, "ps", "-aq", "--filter", "label=repro.kube.pod"],
                              capture_output=True, text=True, timeout=60, check=True).stdout.split() == []
    assert not [p for p in emulated_kubectl.iterdir() if p.is_dir()]
