"""A TensorFlow stack against its PyTorch counterpart, for real on this machine (issue 41, item 3): a tiny
interleaved sweep of cpu-tf215 and cpu-torch213 (runtime `host`, 1 worker, ResNet-20, batch 8, 1+4 steps, 3 pairs)
runs each stack's program of the cnn family, and `repro compare` gives the pairs a verdict with the note that the
two implementations differ. About two minutes on 2 cores; speed is not asserted, only that a verdict is given."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from repro.results.store import Store
from tests.integration.cli import run_repro

ROOT = Path(__file__).resolve().parents[2]
TF, TORCH = ROOT / "stacks" / "cpu-tf215.yaml", ROOT / "stacks" / "cpu-torch213.yaml"
LOCAL = ROOT / "inventories" / "localhost"
TINY = ["--workers", "1", "--model", "resnet20", "--batch-size", "8", "--warmup-steps", "1", "--steps", "4"]
VERDICTS = ("faster", "slower", "no significant difference", "equivalent", "inconclusive")

pytestmark = [pytest.mark.tf, pytest.mark.torch, pytest.mark.slow,
              pytest.mark.skipif(None in (importlib.util.find_spec("torch"), importlib.util.find_spec("horovod")),
                                 reason="needs TensorFlow with Horovod and PyTorch in this environment")]


def test_an_interleaved_tensorflow_and_pytorch_sweep_compares_with_a_verdict(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = run_repro("bench", "--stack", str(TF), "--stack", str(TORCH), "--hosts", str(LOCAL), "--runtime", "host",
                     *TINY, "--repeats", "3", "--store", str(store), timeout=1200)
    assert "interleaved runs are paired" in proc.stdout + proc.stderr, proc.stdout
    records = sorted(Store(store).records(), key=lambda r: (r.created, r.id))
    assert len(records) == 6 and all(r.status == "ok" for r in records), [r.failure for r in records]
    programs = {r.stack.name: " ".join(r.command) for r in records}
    assert "repro.workloads.cnn" in programs["cpu-tf215"] and "repro.workloads.torch_cnn" in programs["cpu-torch213"]
    assert len({r.sweep.pair for r in records}) == 3 and None not in {r.sweep.pair for r in records}

    compared = run_repro("compare", "cpu-tf215", "cpu-torch213", "--store", str(store)).stdout
    text = compared.replace("\n  ", " ")
    assert "3 interleaved pairs: paired comparison" in text, compared
    assert "the two implementations differ" in text and "repro.workloads.torch_cnn" in text, compared
    assert "conditions differed" not in text, compared
    assert re.search("|".join(VERDICTS), text), compared
