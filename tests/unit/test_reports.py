"""Report-ready tables (pure, from records): golden scaling and compare tables, the all-reduce table of both paths
with its correctness column, the time-to-accuracy table.

The golden files in tests/data/golden/reports/ are compared whole; after an intended change of a table:

    REPRO_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_reports.py
"""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest

from repro.compare import Options, compare
from repro.compare.kinds.allreduce.sweep import allreduce_document, allreduce_report, allreduce_sweeps
from repro.compare.kinds.throughput.sweep import scaling_table
from repro.compare.kinds.tta.sweep import tta_document, tta_report
from repro.compare.render import render as render_comparison
from repro.formats import render
from repro.results import metrics
from repro.results.record import RunRecord, Settings, StackRef
from tests import golden
from tests.unit import real_steps

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "reports"
ALLREDUCE = GOLDEN / "allreduce-2workers.record.json"  # a real run: repro bench --workload allreduce, 2 local ranks


assert_golden = partial(golden.assert_golden, GOLDEN)


def sides() -> tuple[list[RunRecord], list[RunRecord]]:
    """Real runs (tests/data/steps): 3 runs of 1 and of 2 workers per stack; NEW's steps 10% shorter."""
    one, two = real_steps.runs(1), real_steps.runs(2)
    old = [real_steps.record(r, "tf215-old", n=i) for i, r in enumerate([*one[:3], *two])]
    new = [real_steps.record(r, "tf215-new", n=i, scale=0.9) for i, r in enumerate([*one[3:6], *two])]
    return old, new


def scaling_rows(records: list[RunRecord]) -> list[metrics.ScalingRow]:
    return metrics.scaling(metrics.points(records))


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def test_scaling_table_golden_markdown_and_text():
    old, _ = sides()
    assert_golden("scaling.md", scaling_table(scaling_rows(old), "markdown"))
    assert_golden("scaling.txt", scaling_table(scaling_rows(old), "table"))


def test_compare_table_golden_markdown():
    old, new = sides()
    assert_golden("compare.md", render_comparison(compare(old, new, Options()), "markdown"))


def test_scaling_table_says_constant_settings_once_and_explains_the_interval():
    old, new = sides()
    text = scaling_table(scaling_rows(old + new), "table")
    caption, *_ = text.splitlines()
    assert "model resnet20" in caption and "batch 8 per worker" in caption  # once, not on every row
    assert "±: half-width of its 95% Student t interval over runs" in text
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("stack"))
    assert max(len(line) for line in lines[header:header + 6]) < 100  # the table itself is narrow
    header = lines[header]
    assert "model" not in header and "batch" not in header and "workers" in header
    assert all(not re.search(r"\d\.\d\d%", line) for line in text.splitlines())  # one decimal for percentages
    md = scaling_table(scaling_rows(old + new), "markdown")
    assert "---:|" in md  # numbers right-aligned in markdown too


def test_compare_caption_names_the_interval_and_the_verdict_rule():
    old, new = sides()
    text = render_comparison(compare(old, new, Options()), "table")
    assert "95% interval" in text and "Welch's t on log figures of runs" in text
    assert "changes under 2% are no significant difference" in text


def load(path: Path) -> RunRecord:
    from repro.results.record import parse_record

    return parse_record(json.loads(path.read_text()), str(path))


def test_the_allreduce_table_shows_both_paths_in_gb_per_s_with_the_correctness_column():
    rec = load(ALLREDUCE)
    text = allreduce_report([rec], link_gbps=10, fmt="table")
    header = next(line for line in text.splitlines() if "size (B)" in line).split("  ")
    header = [h.strip() for h in header if h.strip()]
    assert header == ["size (B)", "count", "hvd time (us)", "hvd algbw", "hvd busbw", "hvd #wrong", "raw time (us)",
                      "raw algbw", "raw busbw", "raw #wrong", "hvd/raw", "hvd/link", "raw/link"]
    assert "GB/s" in text and "Gbit/s" not in text.replace("10 Gbit/s = 1.25 GB/s", "")
    assert "average bus bandwidth: Horovod" in text and "raw" in text.split("average bus bandwidth")[1]
    sizes = len(rec.metrics["results"])
    rows = [line for line in text.splitlines() if re.match(r"\s*[\d,]+\s+[\d,]+\s", line)]
    assert len(rows) == sizes and all(line.split()[5] == "0" and line.split()[9] == "0" for line in rows)


def test_wrong_elements_are_counted_per_path_and_called_out():
    rec = load(ALLREDUCE)
    results = [dict(r) for r in rec.metrics["results"]]
    results[2] = {**results[2], "wrong": 3}
    results[4] = {**results[4], "raw_wrong": 7}
    broken = rec.model_copy(update={"metrics": {**rec.metrics, "results": results}})
    (sweep,) = allreduce_sweeps([broken])
    assert [s.horovod.wrong for s in sweep.sizes][2] == 3 and [s.raw.wrong for s in sweep.sizes][4] == 7
    text = allreduce_report([broken])
    assert "WRONG RESULTS" in text and "horovod fp32" in text and "7 elements" in text


def test_both_paths_figures_are_stored_and_reported_from_the_record():
    rec = load(ALLREDUCE)
    rows = rec.metrics["results"]
    assert rec.metrics["raw_backend"].startswith("mpi4py MPI_Allreduce") and rec.metrics["raw_missing"] is None
    assert all(r["raw"] and r["raw"]["latencies"] and r["latencies"] for r in rows)  # both paths' samples kept
    (data,) = json.loads(render(allreduce_document([rec]), "json"))
    for stored, shown in zip(rows, data["sizes"], strict=True):
        for path, figures in (("horovod", stored), ("raw", stored["raw"])):
            assert shown[f"{path}_busbw_GBps"] == pytest.approx(figures["busbw_median"] / 1e9)
            assert shown[f"{path}_latency_s"] == pytest.approx(figures["latency_median"])
        assert shown["horovod_over_raw"] == pytest.approx(stored["busbw_median"] / stored["raw"]["busbw_median"])
    assert data["average_busbw_GBps"]["raw"] == pytest.approx(
        sum(r["raw"]["busbw_median"] for r in rows) / len(rows) / 1e9)


def test_compare_of_allreduce_records_compares_both_paths():
    rec = load(ALLREDUCE)
    other = rec.model_copy(update={"stack": StackRef(name="other", hash="0123456789ab"), "id": "other"})
    c = compare([rec], [other], Options())
    assert {r.path for r in c.allreduce} == {"horovod", "raw"}
    assert len(c.allreduce) == 2 * len(rec.metrics["results"])
    text = render_comparison(c, "table")
    assert ("hvd: the framework's all-reduce (Horovod's allreduce; torch_allreduce: torch.distributed.all_reduce), mpi"
            in text and "raw: MPI_Allreduce without Horovod" in text)
    assert "busbw OLD" in text and "GB/s" in text


def tta_record(rid: str, workers: int, status: str = "ok") -> RunRecord:
    metrics_ = {"target": 0.95, "reached": True, "time_to_accuracy_s": 12.5, "epochs": 7,
                "final_top1": 0.9633333333333334, "final_top5": 1.0, "compute_s": 9.0, "communication_s": 1.5}
    return RunRecord(id=rid, created="2026-11-22T00:00:00+00:00", status=status,
                     failure=None if status == "ok" else "mpirun exited with status 1",
                     stack=StackRef(name="cpu", hash="a"), settings=Settings(workload="tta", workers=workers),
                     metrics=metrics_ if status == "ok" else {"target": 0.95})


def test_tta_table_has_a_cell_per_header_and_rounds_accuracy():
    records = [tta_record("t1", 1), tta_record("t2", 2), tta_record("t3", 2, status="failed")]
    (table,) = tta_document(records).tables
    assert all(len(row) == len(table.columns) for row in table.cells)
    text = tta_report(records)
    assert "96.3%" in text and "0.9633" not in text and "target top-1 95.0%" in text
    assert "FAILED [1]" in text and "[1] mpirun exited with status 1" in text
