"""Issue 40, the remainder: NCCL INFO lines inside an imported log become the record's NCCL facts (`fabric`),
read by the parser of measured runs (repro.results.nccl) and shown by `repro results show` (real logs: SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

from repro.results.importers import import_file, import_stack
from tests.unit.test_results_cli import run  # the same CLI runner

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs" / "real"
A100 = REAL / "notes-nccl-tests-all-reduce-2xa100-nccl-debug-info.log"  # NCCL 2.20.5, P2P between 2 A100s
RTX5090 = REAL / "github-nccl-tests-2x5090-nccl-debug-info-cuda-failure.log"  # SHM, then a CUDA failure
STACK = import_stack("nccl-facts")


def test_an_nccl_tests_log_with_nccl_info_lines_carries_the_path_nccl_took():
    (record,) = import_file(str(A100), STACK, (), {}).records
    fabric = record.fabric
    assert record.settings.workload == "allreduce" and record.metrics["avg_busbw_GBps"] == 179.465
    assert fabric is not None and fabric.versions == ["2.20.5+cuda12.4"] and fabric.network == ["Socket"]
    assert fabric.path("intra") == "p2p" and fabric.path("inter") is None
    (comm,) = fabric.communicators
    assert (comm.id, comm.nranks, comm.coll_channels) == ("0xab55a18c6f2a4343", 2, 24)
    assert sum(link.count for link in fabric.links("intra")) == 48  # 24 channels each way between the two GPUs


def test_a_failed_nccl_tests_run_is_kept_failed_with_the_shm_path_and_nccls_warnings():
    result = import_file(str(RTX5090), STACK, (), {})
    assert result.status == "imported", result.error.render() if result.error else ""
    (record,) = result.records
    assert record.status == "failed" and "Test NCCL failure common.cu:392" in record.failure
    fabric = record.fabric
    assert fabric.versions == ["2.25.1+cuda12.8"] and fabric.network == ["Socket"]  # not "plugin." (NCCL 2.25)
    assert fabric.path("intra") == "shm" and fabric.nccl_warnings == 5
    assert fabric.communicators[0].init_s == 0.29


def test_a_log_without_nccl_lines_has_no_fabric_so_its_record_json_is_unchanged():
    (record,) = import_file(str(REAL / "blog-autodl-nccl-tests-all-reduce-2x2080ti.log"), STACK, (), {}).records
    assert record.fabric is None and "fabric" not in record.model_dump(mode="json")


def test_results_show_prints_an_imported_runs_fabric_like_a_measured_runs(capsys, tmp_path):
    store = str(tmp_path / "r")
    code, out, err = run(capsys, "import", str(A100), str(RTX5090), "--stack", "a100", "--store", store)
    assert code == 0, out + err
    _, out, _ = run(capsys, "results", "--store", store, "--format", "json")
    shown = {}
    for rec in json.loads(out):
        code, text, _ = run(capsys, "results", "show", rec["id"], "--store", store)
        assert code == 0
        shown[rec["status"]] = text
    assert "fabric:         NCCL 2.20.5+cuda12.4 · network Socket · inter-node - · intra-node p2p " \
           "(P2P/direct pointer on 48 of 48)" in shown["ok"]
    assert "intra-node shm (SHM on 4 of 4)" in shown["failed"]
    assert "GPUs of one node talk through host shared memory" in shown["failed"]  # the warning beside it
    _, text, _ = run(capsys, "results", "show", json.loads(out)[0]["id"], "--store", store, "--format", "json")
    assert json.loads(text)["fabric"]["versions"]
