"""`--format json` (and the other formats) of `repro import` and `repro capture`, the shapes docs/baselines/README.md
and docs/design.md document; `import --format NAME` still takes a log format's name (its old meaning)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from repro.cli import main

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs"
TABLE = ROOT / "docs" / "baselines" / "seed001-tf_cnn_benchmarks.csv"
PROBE = ROOT / "tests" / "data" / "probes" / "gpu-torch211-cu130.json"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_import_json_lists_the_runs_stored_and_each_files_fate(capsys, tmp_path):
    store = str(tmp_path / "results")
    logs = [str(LOGS / "tf_cnn_benchmarks_1gpu.log"), str(LOGS / "tf_cnn_benchmarks_horovod_2gpu.log")]
    code, out, err = run(capsys, "import", *logs, "--stack", "tf114", "--store", store, "--format", "json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert (data["stack"], data["source"], data["store"]) == ("tf114", "logs", store)
    assert [(f["file"], f["status"]) for f in data["files"]] == [(logs[0], "imported"), (logs[1], "imported")]
    assert [(r["file"], r["run"], r["workers"], r["figure"], r["unit"]) for r in data["runs"]] == [
        (logs[0], 1, 1, 363.51, "images/sec"), (logs[1], 1, 2, 701.28, "images/sec")]
    code, out, _ = run(capsys, "results", "--store", store, "--json")
    assert sorted(r["id"] for r in json.loads(out)) == sorted(r["id"] for r in data["runs"])
    # the same files again: skipped, no run stored, and json says why
    code, out, _ = run(capsys, "import", logs[0], "--stack", "tf114", "--store", store, "--format", "json")
    (again,) = json.loads(out)["files"]
    assert code == 0 and again["status"] == "skipped" and "already imported" in again["message"]


def test_import_json_of_a_bad_file_is_printed_and_the_command_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text("Model:       resnet50\n")
    good = str(LOGS / "horovod_tf1_synthetic_1gpu.log")
    code, out, err = run(capsys, "import", good, str(bad), "--stack", "x", "--store", str(tmp_path / "r"),
                         "--format", "json")
    data = json.loads(out)
    assert code == 2 and f"{bad}:1: error" in err
    assert [f["status"] for f in data["files"]] == ["imported", "failed"] and len(data["runs"]) == 1


def test_import_csv_has_a_row_per_run_and_a_table_import_json_says_table(capsys, tmp_path):
    store = str(tmp_path / "results")
    code, out, _ = run(capsys, "import", "--table", str(TABLE), "--stack", "pub", "--store", store, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 12 and {r["file"] for r in rows} == {str(TABLE)}
    assert rows[0].keys() >= {"id", "workers", "figure", "unit", "status"}
    code, out, _ = run(capsys, "import", "--table", str(TABLE), "--stack", "pub", "--store", store, "--format",
                       "json")
    data = json.loads(out)
    assert data["source"] == "table" and data["files"][0]["status"] == "skipped" and data["runs"] == []


def test_import_format_with_a_log_formats_name_is_the_log_format_as_before(capsys, tmp_path):
    log = str(LOGS / "horovod_tf1_synthetic_1gpu.log")
    store = str(tmp_path / "results")
    code, out, _ = run(capsys, "import", log, "--stack", "a", "--store", store, "--format", "horovod_synthetic")
    assert code == 0 and out.startswith("imported 1 run from 1 file") and "images/sec=108.40" in out
    code, _, err = run(capsys, "import", log, "--stack", "b", "--store", store, "--format", "tf_cnn_benchmarks")
    assert code == 2 and "not" in err and log in err  # the log read as the format named, which it is not


@pytest.fixture()
def probe_python(tmp_path: Path) -> str:
    """An interpreter stand-in that prints the recorded probe line of a GPU host (tests/data/probes)."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' '{json.dumps(json.loads(PROBE.read_text()))}'\n")
    script.chmod(0o755)
    return str(script)


def test_capture_json_holds_the_name_hash_manifest_and_findings(capsys, tmp_path, probe_python):
    code, out, err = run(capsys, "capture", "--python", probe_python, "--name", "h100", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["name"] == "h100" and len(data["hash"]) == 12 and data["output"] is None
    assert "pytorch" in data["manifest"] and data["counts"]["error"] == 0
    assert all({"severity", "rule", "message"} <= f.keys() for f in data["findings"])
    assert f"captured stack h100 (hash {data['hash']}) to stdout" in err
    code, table_out, _ = run(capsys, "capture", "--python", probe_python, "--name", "h100")
    assert table_out == data["manifest"]  # on a terminal: the manifest itself, as before
    written = tmp_path / "h100.yaml"
    code, out, _ = run(capsys, "capture", "--python", probe_python, "--name", "h100", "-o", str(written), "--format",
                       "json")
    assert json.loads(out)["output"] == str(written) and written.read_text() == data["manifest"]
    code, out, err = run(capsys, "capture", "--python", probe_python, "-o", str(written))
    assert code == 2 and out == "" and "exists" in err
