"""Issue 40, item 1: the defects found on real logs (sources in tests/data/logs/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.compare.kinds import KINDS
from repro.compare.kinds.tta.sweep import tta_document
from repro.formats import render
from repro.results.importers import import_file, import_stack, parse_overrides
from tests.unit.test_results_cli import run  # the same CLI runner

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "logs" / "real"
STACK = import_stack("issue40")
HABANA = "mlperf-v1.0-habana-gaudi-8-resnet-result0.log"  # submission_platform 'gaudi-0' on an 8-Gaudi system
TPU_V4 = "mlperf-v1.0-google-tpu-v4-4096-tf-bert-result0.log"
GPT3 = "mlperf-v3.0-habana-gaudi2-n32-gpt3-result0.log"
LLAMA = "mlperf-v4.0-nvidia-eos-n8-llama2-70b-lora-result0.log"
DDP = "github-pytorch-ddp-benchmark-readme-8x8gpu.log"


def imported(path: Path, *sets: str):
    return import_file(str(path), STACK, parse_overrides(list(sets)), {})


def test_a_habana_platform_name_is_not_a_worker_count_and_set_workers_is_accepted():
    refused = imported(REAL / HABANA)
    assert refused.status == "failed" and "workers" in refused.error.render()  # asks, never stores 0
    (record,) = imported(REAL / HABANA, f"{HABANA}:workers=8").records
    assert record.settings.workers == 8 and record.settings.global_batch == 2048


def test_a_tpu_v4_platform_name_counts_tensorcores_so_the_chips_are_half_with_the_rule_source():
    (record,) = imported(REAL / TPU_V4).records
    assert record.settings.workers == 2048  # Google/systems/tpu-v4-4096-TF.json: 512 nodes x 4
    assert "tpu-v4-4096-TF.json" in record.metrics["workers_from"]


def test_gpt3_epoch_num_is_samples_and_its_log_perplexity_is_not_captioned_top1():
    (record,) = imported(REAL / GPT3, f"{GPT3}:workers=256").records
    m = record.metrics
    assert m.get("epochs") is None and m["epoch_num"] == 1157627904 and m["samples"] == 1157627904
    assert m["accuracy_metric"] == "log_perplexity" and m["lower_is_better"] is True
    text = render(tta_document([record]), "table")
    assert "top-1" not in text and "log_perplexity" in text and "2.689" in text
    assert "top-1" not in KINDS.get("tta").summary(record.model_copy(update={"metrics": {**m, "reached": False}}))


def test_sysjson_gives_nodes_accelerators_and_software():
    (record,) = imported(REAL / LLAMA).records
    assert (record.settings.workers, record.settings.hosts) == (64, 8)
    assert record.metrics["workers_from"].startswith(":::SYSJSON")
    assert record.hardware.gpu == "NVIDIA H100-SXM5-80GB"
    assert record.software["nccl"] == "2.21.5" and "NeMo" in record.software["framework"]
    assert record.metrics["accuracy_metric"] == "eval_loss"
    assert "top-1" not in render(tta_document([record]), "table")


def _rows_only(tmp_path: Path) -> Path:
    """The real README's result rows without the header and Benchmark: lines (as people paste a table)."""
    rows = [line for line in (REAL / DDP).read_text().splitlines() if " GPUs -- " in line]
    path = tmp_path / "rows.log"
    path.write_text("\n".join(rows[:6]) + "\n")
    return path


def test_ddp_benchmark_rows_without_their_header_are_read_with_and_without_format(tmp_path):
    path = _rows_only(tmp_path)
    for fmt in ("auto", "torch_ddp_benchmark"):
        result = import_file(str(path), STACK, parse_overrides(["rows.log:model=resnet50,batch=32"]), {}, fmt)
        assert result.status == "imported", result.error.render() if result.error else ""
        assert [r.settings.workers for r in result.records] == [1, 1, 2, 4, 8, 16]
        assert result.records[-1].reported_images_per_sec == 16 * 306


def test_a_multi_run_file_where_one_run_needs_set_exits_non_zero_and_keeps_the_other(capsys, tmp_path):
    # two real MLPerf result files one after the other, as a submission's logs are often concatenated
    path = tmp_path / "two.log"
    path.write_text((REAL / TPU_V4).read_text() + (REAL / HABANA).read_text())
    code, out, err = run(capsys, "import", str(path), "--stack", "a", "--store", str(tmp_path / "r"))
    assert code == 2, out + err
    assert "NOT IMPORTED" in out and "workers" in out + err
    code, out, _ = run(capsys, "results", "--store", str(tmp_path / "r"))
    assert code == 0 and out.count("tta") == 1  # the TPU run is stored


def test_the_replace_hint_names_repro_results_rm(capsys, tmp_path):
    path, store = str(REAL / TPU_V4), str(tmp_path / "r")
    assert run(capsys, "import", path, "--stack", "a", "--store", store)[0] == 0
    code, out, _ = run(capsys, "import", path, "--stack", "a", "--store", store, "--set", "hosts=512")
    assert code == 0 and "repro results rm " in out


# item 2: nccl-tests tables are all-reduce records, read by repro's own all-reduce table -----------------------

def test_an_nccl_tests_table_is_an_allreduce_sweep_with_the_tables_own_bandwidths():
    from repro.compare.kinds.allreduce.sweep import allreduce_sweeps

    (record,) = imported(REAL / "github-a3mega-nccl-tests-all-reduce-16xh100.log").records
    (sweep,) = allreduce_sweeps([record])
    assert (sweep.workers, sweep.hosts, len(sweep.sizes)) == (16, 2, 31)
    largest = sweep.sizes[-1]
    assert largest.bytes == 8589934592
    assert largest.horovod.busbw / 1e9 == pytest.approx(338.82, rel=1e-3)  # the row's busbw, from its time
    assert record.metrics["avg_busbw_GBps"] == 70.742 and record.hardware.gpu == "NVIDIA H100 80GB HBM3"


def test_an_nccl_tests_table_of_another_collective_or_none_named_is_refused_with_the_way_out(tmp_path):
    text = (REAL / "blog-autodl-nccl-tests-all-reduce-2x2080ti.log").read_text().splitlines()
    path = tmp_path / "table.log"
    path.write_text("\n".join(text[1:]) + "\n")  # without its command line: the collective is not named
    refused = imported(path)
    assert refused.status == "failed" and "collective=all_reduce" in refused.error.render()
    (record,) = imported(path, "table.log:collective=all_reduce").records
    assert record.settings.workers == 2


# item 3: what the log stated and what repro derived, in `repro results show` --------------------------------

def test_results_show_says_what_the_log_stated_and_what_repro_derived(capsys, tmp_path):
    store = str(tmp_path / "r")
    path = REAL / "lambda-3960X-GeForce-RTX-3080-XLA-syn-replicated-fp16-2gpus-resnet50-48.log"
    assert run(capsys, "import", str(path), "--stack", "a", "--store", store, "--set", "precision=fp16")[0] == 0
    for log in (REAL / "github-a3mega-nccl-tests-all-reduce-16xh100.log", REAL / TPU_V4):
        assert run(capsys, "import", str(log), "--stack", "b", "--store", store)[0] == 0
    _, out, _ = run(capsys, "results", "--store", store, "--format", "json")
    import json

    for rec in json.loads(out):
        code, shown, _ = run(capsys, "results", "show", rec["id"], "--store", store)
        assert code == 0 and "stated by the log:" in shown and "derived by repro:" in shown, shown
    tf = next(r for r in json.loads(out) if r["workload"] == "tf_cnn_benchmarks")
    shown = run(capsys, "results", "show", tf["id"], "--store", store)[1]
    assert "figure (line" in shown and "given with --set:" in shown and "precision" in shown


# item 4: an unknown format, FIFOs and devices -------------------------------------------------------------

def test_an_unknown_format_is_refused_once_listing_every_format_and_format_flag(capsys, tmp_path):
    from repro.results.importers.records import FORMATS

    path = tmp_path / "notes.log"
    path.write_text("step 1 loss 2.3\nstep 2 loss 2.1\n")
    code, out, err = run(capsys, "import", str(path), "--stack", "a", "--store", str(tmp_path / "r"))
    assert code == 2 and "Traceback" not in out + err
    assert all(name in out + err for name in FORMATS) and "--format" in out + err


def test_every_file_under_tests_data_logs_and_fifos_and_devices_end_without_a_traceback(tmp_path):
    import os

    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    files = [p for p in (ROOT / "tests" / "data" / "logs").rglob("*") if p.is_file()]
    for path in [*files, fifo, Path("/dev/zero"), Path("/dev/null")]:
        result = import_file(str(path), STACK, (), {})
        assert result.status in ("imported", "failed")
        if result.status == "failed":
            assert result.error is not None and result.error.render()


# item 4 of the remainder: compare's time-to-accuracy table names the quality imported runs state ---------------

def test_compare_of_imported_loss_target_runs_names_their_metric_not_top1(capsys, tmp_path):
    store = str(tmp_path / "r")
    for stack in ("old", "new"):
        code, out, err = run(capsys, "import", str(REAL / GPT3), "--stack", stack, "--store", store,
                             "--set", "workers=256")
        assert code == 0, out + err
    code, out, err = run(capsys, "compare", "old", "new", "--store", store)
    assert code == 0, out + err
    assert "top-1" not in out and "target" not in out.split("\n\n")[1].splitlines()[1]  # the log states none
    assert "log_perplexity OLD" in out and "log_perplexity NEW" in out and "2.689" in out


# transformer-training logs: figures stated vs derived, shown by `results show`; the listing names the unit -------

def test_a_torchtitan_run_shows_its_stated_and_derived_figures(capsys, tmp_path):
    store = str(tmp_path / "r")
    log = str(REAL / "docs-pytorch-tutorial-torchtitan-llama3-8b.log")
    code, out, err = run(capsys, "import", log, "--stack", "titan", "--store", store)
    assert code == 0 and "tokens/sec=" in out, out + err
    code, out, _ = run(capsys, "results", "--store", store)
    assert code == 0
    record_id = next(line.split()[0] for line in out.splitlines() if "torchtitan" in line)
    code, out, _ = run(capsys, "results", "show", record_id, "--store", store)
    assert code == 0
    assert "mfu" in out and "tokens_per_sec_per_gpu" in out  # stated by the log's step lines
    assert "the stated tokens/sec per GPU x 8 workers" in out  # derived, and how
