"""Issue 40, the remainder: torch.distributed all-reduce benchmark lines (all_reduce_bench.py) import as all-reduce
records of one size, with the stated algbw and busbw (real logs: tests/data/logs/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import InputError
from repro.results.importers import import_file, import_stack, read_log
from tests.unit.test_results_cli import run  # the same CLI runner

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs" / "real"
TODI = REAL / "github-todi-torch-all-reduce-bench-readme-5runs.log"
GKE = REAL / "github-gke-a3-torch-all-reduce-bench-16ranks.log"
STACK = import_stack("torch-ar")


def test_each_block_is_an_allreduce_record_of_one_size_with_the_stated_bandwidths():
    records = import_file(str(TODI), STACK, (), {}).records
    assert [r.settings.workers for r in records] == [4, 8, 8, 16, 16]
    (row,) = records[2].metrics["results"]
    assert row["bytes"] == 4_000_000_000 and row["trials"] == 20
    assert row["algbw_stated"] == pytest.approx(52.186e9) and row["busbw_stated"] == pytest.approx(91.325e9)
    assert row["algbw_std_stated"] == pytest.approx(0.013e9)
    assert row["latency_median"] == pytest.approx(4e9 / 52.186e9)  # derived: the payload over the stated algbw
    assert records[2].metrics["provenance"]["derived"]["latency_median"].startswith("the stated payload")
    assert all(r.settings.workload == "allreduce" and r.settings.extra["collective"] == "all_reduce" for r in records)


def test_the_launchers_prefix_is_no_obstacle_and_the_dtype_and_backend_stay_unknown():
    (record,) = import_file(str(GKE), STACK, (), {}).records
    assert record.settings.workers == 16 and record.metrics["avg_busbw_GBps"] == 84.275
    assert record.metrics["results"][0]["dtype"] is None and record.settings.comm is None


def test_a_block_without_its_busbw_line_is_a_fragment_named_by_its_line():
    text = GKE.read_text().replace("busbw: 84.275", "bus: 84.275")
    with pytest.raises(InputError) as caught:
        read_log(text, "cut.log")
    assert "cut.log:14:" in caught.value.render() and "algbw or busbw" in caught.value.render()


def test_listing_shows_busbw_not_images_per_sec(capsys, tmp_path):
    store = str(tmp_path / "r")
    code, out, err = run(capsys, "import", str(GKE), "--stack", "gke", "--store", store)
    assert code == 0, out + err
    code, out, _ = run(capsys, "results", "--store", store)
    assert "84.28 GB/s busbw" in out and "images/sec" not in out.splitlines()[0]
