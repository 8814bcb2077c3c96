"""Issue 40, the remainder: imported transformer-training records (megatron, torchtitan, hf_trainer, deepspeed) are
of the `lm` comparison kind: `repro compare` shows tokens/sec (or samples/sec as the log gives it), TFLOP/s per GPU
and MFU where the log states them, and listings name the unit (real logs: tests/data/logs/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

from repro.compare.kind import kind_name
from repro.results.importers import import_file, import_stack, parse_overrides
from repro.results.importers.records import READERS
from repro.workloads.catalog import IMPORTED_KINDS, kind_of
from tests.unit.test_results_cli import run  # the same CLI runner

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs" / "real"
MEGATRON_8 = REAL / "docs-megatron-lm-tutorial-gpt3-7b-1node-8gpu.log"  # TFLOP/s/GPU stated, samples/sec derived
TITAN = REAL / "docs-pytorch-tutorial-torchtitan-llama3-8b.log"  # tps, tflops and mfu stated


def test_every_transformer_training_reader_gives_records_of_the_lm_kind():
    training = {name for name, reader in READERS.items() if "training_run" in vars(reader)}
    assert training == {"megatron", "torchtitan", "hf_trainer", "deepspeed", "dllogger"}
    # DLLogger's runs are of the lm kind only where they count sequences (workload dllogger_lm); images: throughput
    workloads = training - {"dllogger"} | {"dllogger_lm"}
    assert set(IMPORTED_KINDS) == workloads and all(kind_of(name) == "lm" for name in workloads)
    assert kind_of("dllogger") == "throughput"
    assert kind_of("horovod_synthetic") == "throughput" and kind_of("allreduce") == "allreduce"
    (record,) = import_file(str(MEGATRON_8), import_stack("k"), parse_overrides(["workers=8"]), {}).records
    assert kind_name(record) == "lm"


def _import(capsys, store: str, stack: str, log: Path, *sets: str) -> None:
    code, out, err = run(capsys, "import", str(log), "--stack", stack, "--store", store,
                         *(a for s in sets for a in ("--set", s)))
    assert code == 0, out + err


def test_compare_of_two_imported_megatron_logs_shows_samples_per_sec_and_the_stated_tflops(capsys, tmp_path):
    store = str(tmp_path / "r")
    _import(capsys, store, "old", MEGATRON_8, "workers=8")
    _import(capsys, store, "new", MEGATRON_8, "workers=8")
    code, out, err = run(capsys, "compare", "old", "new", "--store", store)
    assert code == 1 and "no device named in the records" in out + err  # no device lines: not known the same
    code, out, err = run(capsys, "compare", "old", "new", "--store", store, "--allow-different-hardware")
    assert code == 0, out + err
    assert "Transformer training (samples/sec): NEW/OLD" in out and "OLD samples/s" in out
    assert "images/sec" not in out.split("Transformer training")[1].split("\n")[0]
    row = next(line for line in out.splitlines() if line.lstrip().startswith("8 "))
    assert "84.7" in row and "876.4" in row  # 1024 samples / mean 12.0849 s; the mean stated TFLOP/s/GPU
    code, out, _ = run(capsys, "compare", "old", "new", "--store", store, "--format", "json",
                       "--allow-different-hardware")
    (lm,) = json.loads(out)["lm"]
    assert lm["samples_per_sec_old"] == lm["samples_per_sec_new"] and "tokens_per_sec_old" not in lm
    assert lm["tflops_per_device_old"] == 876.3667 and lm["mfu_old"] is None  # the log states no MFU: none derived


def test_compare_of_imported_torchtitan_logs_shows_tokens_per_sec_tflops_and_the_stated_mfu(capsys, tmp_path):
    store = str(tmp_path / "r")
    _import(capsys, store, "old", TITAN)
    _import(capsys, store, "new", TITAN)
    code, out, err = run(capsys, "compare", "old", "new", "--store", store, "--format", "json",
                         "--allow-different-hardware")
    assert code == 0, out + err
    rows = json.loads(out)["lm"]
    assert len(rows) == 2  # float8 rowwise and bf16: two points
    by_tps = {round(r["tokens_per_sec_old"], 2): r for r in rows}
    assert by_tps[56186.67]["tflops_per_device_old"] == 406.7433 and by_tps[56186.67]["mfu_new"] == 0.4113
    code, out, _ = run(capsys, "compare", "old", "new", "--store", store, "--allow-different-hardware")
    assert "OLD tok/s" in out and "MFU OLD" in out and "41.1%" in out and "TFLOP/s OLD" in out


def test_listings_name_tokens_and_samples_not_images_per_sec(capsys, tmp_path):
    store = str(tmp_path / "r")
    _import(capsys, store, "m", MEGATRON_8, "workers=8")
    _import(capsys, store, "t", TITAN)
    code, out, _ = run(capsys, "results", "--store", store)
    assert code == 0 and "images/sec" not in out
    lines = out.splitlines()
    assert any("megatron" in line and line.endswith("84.73 samples/sec") for line in lines)
    assert sum("torchtitan" in line and line.endswith("tokens/sec") for line in lines) == 2


def test_results_table_of_imported_megatron_runs_is_the_lm_table_in_samples_per_sec(capsys, tmp_path):
    store = str(tmp_path / "r")
    _import(capsys, store, "m", MEGATRON_8, "workers=8")
    code, out, _ = run(capsys, "results", "--store", store, "table")
    assert code == 0 and "Transformer training (lm): samples/sec" in out and "images/sec:" not in out
    assert "TFLOP/s/dev and MFU as the log states them" in out
    row = next(line for line in out.splitlines() if "84.7" in line)  # one stack: no stack column
    assert row.split()[0] == "8" and "876" in row.split()
