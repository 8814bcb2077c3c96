"""PyTorch on the two-host test cluster: the lm workload with the docker and host runtimes across h1 and h2, and a
PyTorch point through Trainer's torch contract: the stand-in kubectl
(tests/cluster/kube_emulator.py) runs the TrainJob repro renders for a torch workload as one container per node pod
of the CPU PyTorch stack's image, each running torchrun with the PET_* variables exactly as Trainer's torch plugin
injects them (the master: the first node pod's service name). No Kubernetes is involved (docs/kubernetes.md).

It ships the torch image to both hosts (minutes on a 2-core machine), so it is marked slow."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.results.store import Store
from tests.cluster.fixtures import skip_or_fail
from tests.integration.cli import run_repro

pytestmark = [pytest.mark.cluster, pytest.mark.docker, pytest.mark.torch, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TORCH_STACK = "stacks/cpu-torch213.yaml"


@pytest.fixture(scope="module")
def torch_store(cluster, base_image, tmp_path_factory) -> Path:
    """A store in which the CPU PyTorch stack's image is built (unless the engine has its tag), locked and shipped
    to both hosts."""
    from repro.image.build import torch_wheels, wheelhouse_dir
    from repro.manifest import load_stack

    loaded = load_stack(ROOT / TORCH_STACK)
    if not torch_wheels(loaded.stack, wheelhouse_dir(loaded.stack)):
        skip_or_fail("no torch 2.13.0 CPU wheel in the wheelhouse or pip's find-links (CI machines keep it in "
                     "/opt/wheels)")
    root = tmp_path_factory.mktemp("kube-torch-store")
    run_repro("up", TORCH_STACK, "--hosts", str(cluster.inventory), "--store", str(root), "--quiet", timeout=1800)
    return root


def test_a_torch_trainjob_runs_through_trainers_torch_contract(torch_store, cluster, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\nexec {sys.executable} "
                                     f"{ROOT / 'tests' / 'cluster' / 'kube_emulator.py'} \"$@\"\n")
    (bin_dir / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("REPRO_KUBE_EMULATOR", str(tmp_path / "operator"))
    monkeypatch.setenv("REPRO_KUBE_CLUSTER", str(cluster.state_dir / "cluster.json"))

    run_repro("bench", "--stack", TORCH_STACK, "--hosts", str(cluster.inventory), "--scheduler", "kubernetes",
              "--workload", "torch_allreduce", "--dist-backend", "gloo", "--sizes", "1000,100000", "--iterations",
              "3", "--warmup-iterations", "1", "--repeats", "1", "--workers", "2", "--store", str(torch_store),
              timeout=900)
    (rec,) = Store(torch_store).records()
    assert rec.status == "ok", rec.failure
    assert rec.batch.scheduler == "kubernetes" and rec.batch.state == "ok"
    assert "torch: {}" in rec.batch.script and rec.command[0] == "torchrun"
    name = rec.batch.id
    assert sorted(rec.batch.detail["pods"]) == [f"{name}-node-0-0", f"{name}-node-1-0"]  # no launcher: torchrun in each
    assert [h.name for h in rec.hosts] == ["h1", "h2"]
    addresses = {h.name: h.address for h in cluster.hosts}
    assert sorted(r.host for r in rec.ranks) == ["h1", "h2"]
    for rank in rec.ranks:
        assert addresses[rank.host] in rank.addresses  # rank 1 reached the master at node 0's name from h2
    assert rec.metrics, "the all-reduce's sizes were parsed"
    for host in cluster.hosts:
        assert subprocess.run(["docker", "-H", host.docker_host, "ps", "-aq", "--filter", "label=repro.kube.pod"],
                              capture_output=True, text=True, timeout=60, check=True).stdout.split() == []


LM_SMALL = ["--seq-len", "32", "--batch-size", "2", "--warmup-steps", "1", "--steps", "3", "--repeats", "1"]


@pytest.mark.parametrize("parallelism", ["ddp", "fsdp"])
def test_lm_runs_across_both_hosts_in_the_torch_image(torch_store, cluster, parallelism):
    """The transformer workload in worker containers on h1 and h2, gloo between them (FSDP2's collectives too)."""
    before = {r.id for r in Store(torch_store).records()}
    # the torch stack the module's image was built and locked for (the lm stack pins the same software but has a
    # stack hash, and so a lock, of its own)
    run_repro("bench", "--stack", "stacks/cpu-torch213.yaml", "--workload", "lm", "--model", "tiny",
              "--hosts", str(cluster.inventory), "--runtime",
              "docker", "--workers", "2", "--parallelism", parallelism, *LM_SMALL, "--store", str(torch_store),
              timeout=900)
    (rec,) = [r for r in Store(torch_store).records() if r.id not in before]
    assert rec.status == "ok", rec.failure
    assert rec.runtime == "docker" and sorted(r.host for r in rec.ranks) == ["h1", "h2"]
    assert rec.settings.extra["parallelism"] == parallelism and rec.metrics["tokens_per_sec"] > 0
    assert rec.metrics["flops_per_token"] > 0 and rec.metrics["peak_memory_bytes"] > 0 and rec.metrics["mfu"] is None


def test_lm_runs_across_both_hosts_with_the_host_runtime_and_compares(cluster, tmp_path):
    """The bare-metal path: the hosts' own torch (repro's environment, which the test hosts share), FSDP2 under
    torchrun across h1 and h2, two interleaved stacks, and compare's verdict on them."""
    from tests.cluster.fixtures import host_runtime_inventory

    twin = tmp_path / "lm-twin.yaml"
    twin.write_text(f"extends: {ROOT / 'stacks' / 'cpu-torch213-lm.yaml'}\ndescription: twin\n"
                    "env: {REPRO_TWIN: '1'}\n")
    store = tmp_path / "store"
    bare_metal = host_runtime_inventory(cluster, tmp_path / "bare-metal.yml")
    run_repro("bench", "--stack", "stacks/cpu-torch213-lm.yaml", "--stack", str(twin), "--hosts", str(bare_metal),
              "--runtime", "host", "--launcher", "torchrun", "--workers", "2", "--parallelism", "fsdp",
              *LM_SMALL[:-2], "--repeats", "2", "--store", str(store), timeout=900)
    records = Store(store).records()
    assert len(records) == 4 and all(r.status == "ok" for r in records), [r.failure for r in records]
    assert all(sorted(r.host for r in rec.ranks) == ["h1", "h2"] for rec in records)
    compared = run_repro("compare", "stacks/cpu-torch213-lm.yaml", str(twin), "--store", str(store)).stdout
    assert "Transformer training (tokens/sec): NEW/OLD" in compared and "paired comparison" in compared
