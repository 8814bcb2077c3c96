"""The `lm` workload's numbers (shapes, FLOPs, sourced peaks, metrics), its network's shape and causality, the lm
comparison kind in every output, and the stack defaults that reach it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from repro.cli import main
from repro.compare import Options, compare
from repro.compare.kind import KINDS, headline, kind_name, sweep_document
from repro.compare.render import render
from repro.launch.points import SweepSpec, expand
from repro.manifest import load_stack
from repro.results import stats
from repro.results.record import RankResult, RunRecord, Settings, StackRef, SweepRef, new_id
from repro.results.store import Store
from repro.workloads import lm, lm_model

STACKS = Path(__file__).resolve().parents[2] / "stacks"
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")


# -- numbers --------------------------------------------------------------------------------------------------

def test_presets_have_the_parameter_counts_meta_publishes():
    # Llama 3.2 1B and 3B (tied embeddings) and Llama 3.1 8B, from their shapes alone
    counts = {name: shape.params() for name, shape in lm_model.PRESETS.items() if name != "tiny"}
    assert counts == {"llama3-1b": 1_235_814_400, "llama3-3b": 3_212_749_824, "llama3-8b": 8_030_261_248}


def test_flops_per_token_is_6n_plus_the_attention_term_without_the_embedding():
    shape = lm_model.PRESETS["llama3-8b"]
    n = 8_030_261_248 - 128256 * 4096  # every weight but the embedding table (8B's output head is its own)
    assert shape.flops_per_token(2048) == 6 * n + 12 * 32 * 32 * 128 * 2048
    tied = lm_model.PRESETS["llama3-1b"]  # a tied output projection is still a matmul of every token
    assert tied.matmul_params() == tied.params()


@pytest.mark.parametrize(("device", "precision", "peak"), [
    ("GPU:0 NVIDIA H100 80GB HBM3", "bf16", 989e12), ("GPU:0 NVIDIA H100 PCIe", "bf16", 756e12),
    ("GPU:1 NVIDIA H100 NVL", "bf16", 835e12), ("GPU:0 NVIDIA H200", "bf16", 989e12),
    ("GPU:0 NVIDIA A100-SXM4-80GB", "bf16", 312e12), ("CPU", "bf16", None), ("CPU", "fp32", None),
    ("GPU:0 NVIDIA H100 80GB HBM3", "fp32", None), ("GPU:0 Tesla V100-SXM2-16GB", "bf16", None)])
def test_a_peak_is_known_only_where_a_source_gives_one_for_the_precision(device, precision, peak):
    found = lm_model.peak_flops(device, precision)
    assert (found[0] if found else None) == peak
    assert found is None or "datasheet" in found[1] or "specification" in found[1]


def _rank(rank: int, times: list[float], tokens: int = 1024, memory: int = 2 * 1024**3) -> dict:
    return {"rank": rank, "step_times": times, "warmup_times": [1.0], "items_per_step": tokens,
            "peak_memory_bytes": memory + rank, "memory_source": "test"}


def test_metrics_give_tokens_per_sec_of_the_slowest_rank_and_mfu_only_with_a_peak():
    settings = {"flops_per_token": 1e9, "precision": "bf16", "flops_convention": "6N", "params": 1}
    ranks = [_rank(0, [0.5, 0.5]), _rank(1, [0.5, 1.0])]
    m = lm.lm_metrics(ranks, settings, "GPU:0 NVIDIA H100 80GB HBM3", [10.0, 9.0, 8.5])
    assert m["tokens_per_sec"] == pytest.approx(2048 * 2 / 1.5)
    assert m["tokens_per_sec_per_device"] == pytest.approx(2048 * 2 / 1.5 / 2)
    assert m["mfu"] == pytest.approx(2048 * 2 / 1.5 / 2 * 1e9 / 989e12)
    assert (m["loss_first"], m["loss_last"]) == (10.0, 8.5)
    assert m["peak_memory_bytes"] == 2 * 1024**3 + 1 and len(m["peak_memory_bytes_per_rank"]) == 2
    on_cpu = lm.lm_metrics(ranks, {**settings, "precision": "fp32"}, "CPU", [1.0])
    assert on_cpu["mfu"] is None and on_cpu["peak_flops"] is None and "none known" in on_cpu["peak_flops_source"]


# -- the network ----------------------------------------------------------------------------------------------

@needs_torch
def test_the_network_has_the_shape_s_parameters_and_is_causal():
    import torch

    from repro.workloads import lm_net

    shape = lm_model.Shape("t", dim=32, layers=2, heads=4, kv_heads=2, ffn_hidden=64, vocab=50, tied=True)
    torch.manual_seed(0)
    net = lm_net.build(shape, 16).eval()
    assert sum(p.numel() for p in net.parameters()) == shape.params()
    tokens = torch.randint(0, 50, (2, 16))
    changed = tokens.clone()
    changed[:, 10:] = (changed[:, 10:] + 1) % 50
    with torch.no_grad():
        a, b = net(tokens), net(changed)
    assert a.shape == (2, 16, 50)
    assert torch.allclose(a[:, :10], b[:, :10], atol=1e-5)  # a position sees no later token
    assert not torch.allclose(a[:, 10:], b[:, 10:])
    untied = lm_model.Shape("u", dim=32, layers=1, heads=4, kv_heads=4, ffn_hidden=64, vocab=50)
    assert sum(p.numel() for p in lm_net.build(untied, 8).parameters()) == untied.params()


@needs_torch
def test_checkpointed_blocks_give_the_same_gradients():
    import torch

    from repro.workloads import lm_net

    shape = lm_model.PRESETS["tiny"]
    tokens = torch.randint(0, shape.vocab, (2, 9))
    grads = []
    for checkpointing in (False, True):
        torch.manual_seed(1)
        net = lm_net.build(shape, 8, checkpointing=checkpointing)
        torch.nn.functional.cross_entropy(net(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten()).backward()
        grads.append(net.layers[0].feed_forward.w1.weight.grad.clone())
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


# -- the comparison kind --------------------------------------------------------------------------------------

def run(stack: str, step: float, *, workers: int = 1, memory: float = 2 * 1024**3, pair: str | None = None,
        device: str = "GPU:0 NVIDIA H100 80GB HBM3", spread: float = 0.01) -> RunRecord:
    ranks = [RankResult(rank=r, device=device, warmup_times=[1.0],
                        step_times=[step * (1 + spread * ((i * 7 + r) % 5 - 2)) for i in range(10)],
                        items_per_step=4096) for r in range(workers)]
    peak = lm_model.peak_flops(device, "bf16")
    return RunRecord(
        id=new_id(), created="2026-11-27T00:00:00+00:00", status="ok", stack=StackRef(name=stack, hash=stack * 4),
        settings=Settings(workload="lm", model="llama3-1b", batch_per_worker=2, precision="bf16", workers=workers,
                          hosts=1, extra={"seq_len": 2048, "parallelism": "fsdp"}),
        ranks=ranks, sweep=SweepRef(id="sw", point="p", pair=pair) if pair else None,
        metrics={"flops_per_token": 8.22e9, "peak_flops": peak[0] if peak else None, "peak_memory_bytes": memory,
                 "loss_first": 11.9, "loss_last": 7.5, "unit": "tokens/sec"})


def test_lm_runs_belong_to_the_lm_kind_and_list_tokens_per_sec():
    record = run("old", 0.5)
    assert kind_name(record) == "lm"
    value, unit = headline(record)
    assert unit == "tokens/sec" and value == pytest.approx(4096 / 0.5, rel=0.01)
    summary = KINDS.get("lm").summary(record)
    assert "tokens/sec" in summary and "MFU 6.8%" in summary and "2.00 GiB/rank" in summary


def test_compare_gives_tokens_per_sec_verdict_with_mfu_and_memory_in_every_format():
    old = [run("old", 0.5, pair=f"p{i}") for i in range(3)]
    new = [run("new", 0.4, pair=f"p{i}") for i in range(3)]
    c = compare(old, new, Options())
    (row,) = c.sections["lm"].rows
    assert row.ratio.verdict == stats.FASTER and row.ratio.ratio == pytest.approx(1.25, rel=0.01)
    assert row.ratio.method == stats.PAIRED and not row.regression
    assert row.new.mfu == pytest.approx(4096 / 0.4 * 8.22e9 / 989e12, rel=0.01)
    table = render(c, "table")
    assert "Transformer training (tokens/sec): NEW/OLD" in table and "1.25x faster" in table
    assert "MFU NEW" in table and "2.00 GiB" in table and "3 interleaved pairs: paired comparison" in table
    data = json.loads(render(c, "json"))
    (point,) = data["lm"]
    assert point["verdict"] == stats.FASTER
    assert point["mfu_old"] == pytest.approx(4096 / 0.5 * 8.22e9 / 989e12, rel=0.01)
    assert "Transformer training" in render(c, "markdown") and "lm" in render(c, "csv")


def test_more_peak_memory_is_a_regression_even_at_the_same_speed():
    old = [run("old", 0.5) for _ in range(3)]
    same = [run("fat", 0.5, memory=3 * 1024**3) for _ in range(3)]
    (row,) = compare(old, same, Options()).sections["lm"].rows
    assert row.regression and row.why == "peak memory +50%"
    slower = [run("slow", 0.7) for _ in range(3)]
    (row,) = compare(old, slower, Options()).sections["lm"].rows
    assert row.regression and row.why == "tokens/sec slower"
    (row,) = compare(slower, old, Options()).sections["lm"].rows
    assert not row.regression


def test_fail_on_regression_and_results_table_show_lm_runs(tmp_path, capsys):
    store = Store(tmp_path)
    for rec in [*(run("old", 0.5, workers=w) for w in (1, 2) for _ in range(2)),
                *(run("slow", 0.8, workers=w) for w in (1, 2) for _ in range(2))]:
        store.put(rec)
    assert main(["compare", "old", "slow", "--store", str(tmp_path), "--fail-on-regression"]) == 4
    out = capsys.readouterr().out
    assert "Transformer training (tokens/sec)" in out and "tokens/sec slower" in out
    assert main(["results", "table", "--store", str(tmp_path), "--kind", "lm"]) == 0
    out = capsys.readouterr().out
    assert "Transformer training (lm): tokens/sec" in out and "MFU" in out and "11.900 → 7.500" in out
    assert main(["results", "--store", str(tmp_path)]) == 0
    assert "tokens/sec" in capsys.readouterr().out


def test_the_sweep_document_gives_mfu_none_on_cpu_and_speedup_across_workers():
    records = [run("cpu", 0.5, workers=w, device="CPU") for w in (1, 2) for _ in range(2)]
    for r in records:
        r.metrics["peak_flops"] = None
    doc = sweep_document(records)
    (table,) = doc.tables
    by_workers = {d["workers"]: d for d in table.data}
    assert by_workers[1]["mfu"] is None and by_workers[1]["tflops_per_device"] == pytest.approx(4096 / 0.5 * 8.22e-3,
                                                                                                rel=0.01)
    assert by_workers[2]["speedup"] == pytest.approx(2.0, rel=0.01)


# -- stack defaults -------------------------------------------------------------------------------------------

def test_the_lm_stack_gives_its_defaults_and_a_cnn_stack_gives_none_to_lm():
    (point,) = expand(SweepSpec(), load_stack(STACKS / "cpu-torch213-lm.yaml").stack)
    assert (point.workload, point.model, point.batch_per_worker, point.precision) == ("lm", "tiny", 4, "fp32")
    (gpu,) = expand(SweepSpec(), load_stack(STACKS / "torch211-cuda130-lm.yaml").stack)
    assert (gpu.model, gpu.precision) == ("llama3-1b", "bf16")
    (other,) = expand(SweepSpec(workload="lm"), load_stack(STACKS / "torch211-cuda130.yaml").stack)
    assert (other.model, other.precision) == (None, None)  # lm's own: tiny; bf16 on a GPU, fp32 on a CPU


def test_an_lm_stack_s_defaults_do_not_reach_a_cnn_workload():
    (point,) = expand(SweepSpec(workload="torch_cnn"), load_stack(STACKS / "cpu-torch213-lm.yaml").stack)
    assert (point.model, point.batch_per_worker) == ("resnet50", 64)  # benchmark's field defaults, not tiny's
    (cnn,) = expand(SweepSpec(workload="torch_cnn"), load_stack(STACKS / "cpu-torch213.yaml").stack)
    assert (cnn.model, cnn.batch_per_worker) == ("resnet20", 32)  # a CNN stack's still do
