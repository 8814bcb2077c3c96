"""`repro bench --workload lm` on this machine with the host runtime (inventories/localhost, torch 2.13 CPU): the
shipped lm stack's sweep on 1 and 2 workers, FSDP2 under mpirun, and two stacks interleaved and compared. Tiny
shapes and few steps; speed is not asserted (bench/lm_peer.py prints the ratio to a plain loop)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from repro.results.store import Store
from tests.integration.cli import run_repro

pytestmark = [pytest.mark.torch, pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                                     reason="needs PyTorch in this environment")]

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "stacks" / "cpu-torch213-lm.yaml"
LOCAL = ROOT / "inventories" / "localhost"
SMALL = ["--seq-len", "32", "--batch-size", "2", "--warmup-steps", "1", "--steps", "4", "--threads", "1",
         "--repeats", "1"]


def repro(*args: str, store: Path, check: bool = True) -> subprocess.CompletedProcess:
    return run_repro(*args, "--store", str(store), timeout=600, check=check)


def test_the_lm_stack_sweeps_1_and_2_workers_and_records_tokens_flops_memory_and_losses(tmp_path):
    store = tmp_path / "store"
    proc = repro("bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workers", "1,2", "--launcher",
                 "torchrun", *SMALL, store=store)
    assert "tokens/sec" in proc.stderr + proc.stdout
    assert "Transformer training (lm): tokens/sec" in proc.stdout, proc.stdout
    records = sorted(Store(store).records(), key=lambda r: r.settings.workers)
    assert [r.status for r in records] == ["ok", "ok"], [r.failure for r in records]
    for rec in records:
        assert (rec.settings.workload, rec.settings.model, rec.settings.precision) == ("lm", "tiny", "fp32")
        assert rec.settings.extra == {"seq_len": 32}
        assert rec.metrics["tokens_per_sec"] > 0 and rec.metrics["flops_per_token"] > 0
        assert rec.metrics["mfu"] is None and rec.metrics["peak_memory_bytes"] > 0
        assert rec.metrics["loss_first"] > rec.metrics["loss_last"]
        assert all(r.items_per_step == 64 for r in rec.ranks)
    table = json.loads(repro("results", "table", "--kind", "lm", "--format", "json", store=store).stdout)
    assert [row["workers"] for row in table] == [1, 2] and all(row["tokens_per_sec"] > 0 for row in table)


def test_fsdp_with_checkpointing_runs_under_mpirun_on_two_ranks(tmp_path):
    store = tmp_path / "store"
    repro("bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workers", "2", "--launcher", "mpirun",
          "--parallelism", "fsdp", "--activation-checkpointing", "on", *SMALL, store=store)
    (rec,) = Store(store).records()
    assert rec.status == "ok", rec.failure
    assert rec.settings.extra == {"seq_len": 32, "parallelism": "fsdp", "activation_checkpointing": True}
    assert rec.resolved["parallelism"] == "fsdp" and len(rec.ranks) == 2


def test_two_lm_stacks_interleaved_get_a_paired_verdict_and_a_plot(tmp_path):
    twin = tmp_path / "cpu-torch213-lm-twin.yaml"  # the same software; one extra variable, so another stack hash
    twin.write_text(f"extends: {STACK}\ndescription: lm twin\nenv: {{REPRO_TWIN: '1'}}\n")
    store = tmp_path / "store"
    repro("bench", "--stack", str(STACK), "--stack", str(twin), "--hosts", str(LOCAL), "--workers", "1",
          "--launcher", "torchrun", *SMALL[:-1], "2", store=store)
    compared = repro("compare", str(STACK), str(twin), store=store).stdout
    assert "Transformer training (tokens/sec): NEW/OLD" in compared, compared
    assert "2 interleaved pairs: paired comparison" in compared
    if importlib.util.find_spec("matplotlib") is not None:
        plot = tmp_path / "lm.png"
        repro("results", "table", "--kind", "lm", "--plot", str(plot), store=store)
        assert plot.stat().st_size > 0
