"""`repro bench --scheduler kubernetes` run through the operators' contract on the two-host test cluster: a stand-in
kubectl (tests/cluster/kube_emulator.py) runs the pods of the TrainJob repro renders as containers of the CPU
stack's image on the hosts' own engines, with the environment, mounts (the SSH key Secret, the hostfile, /dev/shm),
commands and start order Trainer's MPI plugin gives them. No Kubernetes is involved: this shows that what repro
renders runs (sshd on the job's own host key, mpirun from the operator's hostfile), and that the records read like
any other; the API server's side is checked offline (tests/unit/test_kubernetes.py) and only a real cluster shows
the rest (docs/kubernetes.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repro.results.store import Store
from tests.integration.cli import run_repro

pytestmark = [pytest.mark.cluster, pytest.mark.docker, pytest.mark.tf]

ROOT = Path(__file__).resolve().parents[2]
STACK = "stacks/cpu-tf215.yaml"
TINY = ("--workload", "allreduce", "--sizes", "1000,100000", "--iterations", "3", "--warmup-iterations", "1",
        "--raw", "false")


@pytest.fixture(scope="module")
def store(cluster, cpu_image, tmp_path_factory) -> Path:
    """A store in which the CPU stack's image is verified, locked and shipped to both hosts' engines."""
    root = tmp_path_factory.mktemp("kube-store")
    run_repro("up", STACK, "--hosts", str(cluster.inventory), "--store", str(root), "--quiet", timeout=1800)
    return root


@pytest.fixture()
def emulated_kubectl(cluster, tmp_path, monkeypatch) -> Path:
    """`kubectl` first on PATH: the emulator of the operators' contract, on this cluster's engines."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kubectl"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'cluster' / 'kube_emulator.py'} \"$@\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("REPRO_KUBE_EMULATOR", str(tmp_path / "operator"))
    monkeypatch.setenv("REPRO_KUBE_CLUSTER", str(cluster.state_dir / "cluster.json"))
    return tmp_path / "operator"


def emulated_pods(cluster) -> list[str]:
    out = []
    for host in cluster.hosts:
        found = subprocess.run(["docker", "-H", host.docker_host, "ps", "-aq", "--filter", "label=repro.kube.pod"],
                               capture_output=True, text=True, timeout=60, check=True).stdout
        out += found.split()
    return out


def test_a_trainjob_sweep_runs_through_the_mpi_contract_and_compares_like_any_other(store, cluster,
                                                                                 emulated_kubectl, tmp_path):
    kube_store = tmp_path / "kube-results"
    shutil_copy_lock(store, kube_store)
    run_repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--scheduler", "kubernetes",
              "--workers", "1,2", *TINY, "--store", str(kube_store), timeout=1200)
    records = sorted(Store(kube_store).records(), key=lambda r: r.settings.workers)
    assert [r.status for r in records] == ["ok", "ok"], [r.failure for r in records]
    two = records[1]
    assert two.batch["scheduler"] == "kubernetes" and two.batch["cluster_version"].startswith("v0.0.0-repro")
    assert sorted(two.batch["nodes"]) == ["h1", "h2"]  # the launcher's node (h1) and the two rank pods' nodes
    assert [h.name for h in two.hosts] == ["h1", "h2"]  # the record's hosts: where the rank pods ran
    addresses = {h.name: h.address for h in cluster.hosts}
    assert sorted(r.host for r in two.ranks) == ["h1", "h2"]
    for rank in two.ranks:
        assert addresses[rank.host] in rank.addresses  # each rank ran in the pod on its node
    assert "kind: TrainJob" in two.batch["manifest"]
    assert emulated_pods(cluster) == []  # every job deleted, its pods with it
    assert not [p for p in emulated_kubectl.iterdir() if p.is_dir()]

    direct_store = tmp_path / "direct-results"
    shutil_copy_lock(store, direct_store)
    run_repro("bench", "--stack", STACK, "--hosts", str(cluster.inventory), "--workers", "2", *TINY,
              "--store", str(direct_store), timeout=1200)
    compared = run_repro("compare", str(direct_store), str(kube_store), "--format", "json")
    table = json.loads(compared.stdout)
    assert table, compared.stdout  # the Kubernetes records line up with the direct run's like any other


def shutil_copy_lock(source: Path, target: Path) -> None:
    """A new store holding the image locks of `source` (and no records)."""
    shutil.copytree(source / "locks", target / "locks")
