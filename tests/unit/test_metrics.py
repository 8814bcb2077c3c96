"""One definition of images/sec shown everywhere; speedup and efficiency only where measured; wording."""

from __future__ import annotations

import csv
import io
import json

import pytest

from repro.cli import main
from repro.compare import Options, compare
from repro.compare.cells import factor_text, verdict_text
from repro.compare.kinds.throughput.sweep import scaling_table
from repro.compare.render import render
from repro.results import metrics, stats
from repro.results.record import Published, RankResult, RunRecord, Settings, StackRef
from repro.results.store import Store

STACK = StackRef(name="cpu", hash="abcdef012345")


def two_rank_record(rid: str = "r1", *, scale: float = 1.0) -> RunRecord:
    """Two ranks: rank 1 a little slower in total; the workload's own figure (median based) differs."""
    fast = [0.10, 0.10, 0.10, 0.30, 0.10, 0.10]
    slow = [0.11, 0.10, 0.11, 0.30, 0.10, 0.11]
    ranks = [RankResult(rank=r, step_times=[t * scale for t in times], warmup_times=[1.0], items_per_step=8)
             for r, times in enumerate((fast, slow))]
    return RunRecord(id=rid, created="2026-11-22T00:00:00+00:00", status="ok", stack=STACK,
                     settings=Settings(workload="cnn", model="resnet20", batch_per_worker=8, workers=2,
                                       global_batch=16),
                     ranks=ranks, metrics={"images_per_sec": 155.0})


def test_a_run_is_global_batch_over_the_slowest_ranks_mean_step_time():
    rec = two_rank_record()
    assert metrics.global_step_times(rec) == [0.11, 0.10, 0.11, 0.30, 0.10, 0.11]
    assert metrics.throughput(rec) == pytest.approx(16 / (0.83 / 6))


def test_the_stored_figure_is_the_one_definition_and_the_workloads_own_is_kept_aside():
    rec = metrics.with_figure(two_rank_record())
    assert rec.metrics["images_per_sec"] == metrics.throughput(rec)
    assert rec.metrics["images_per_sec_workload"] == 155.0


def test_a_record_for_storage_carries_the_figure_and_each_ranks_detected_warm_up():
    rec = two_rank_record()
    long = [RankResult(rank=r.rank, warmup_times=[1.0], step_times=[0.3] * 4 + [0.1] * 20, items_per_step=8)
            for r in rec.ranks]
    stored = metrics.for_storage(rec.model_copy(update={"ranks": long}))
    assert [r.detected_warmup for r in stored.ranks] == [5, 5]
    assert stored.metrics["images_per_sec"] == metrics.throughput(stored)


def test_the_bench_summary_table_takes_the_warm_up_mode_and_a_named_baseline():
    from repro.compare.kinds.throughput.sweep import scaling_report

    slow_start = two_rank_record().model_copy(update={"ranks": [
        RankResult(rank=0, warmup_times=[1.0], step_times=[0.3] * 4 + [0.1] * 20, items_per_step=8)]})
    fixed = json.loads(scaling_report([slow_start], "json"))[0]
    auto = json.loads(scaling_report([slow_start], "json", warmup="auto"))[0]
    assert auto["images_per_sec"] == pytest.approx(8 / 0.1) and fixed["images_per_sec"] < auto["images_per_sec"]
    assert any("warm-up too short" in n for n in fixed["notes"])
    named = json.loads(scaling_report([published(2, 400.0), published(4, 700.0)], "json", baseline_workers=2))
    assert named[1]["speedup"] == pytest.approx(3.5)


def test_tables_json_csv_and_compare_show_the_same_images_per_sec_for_the_same_run(capsys, tmp_path):
    store = Store(tmp_path / "results")
    rec = metrics.with_figure(two_rank_record())
    store.put(rec)
    other = two_rank_record("r2").model_copy(update={"stack": StackRef(name="new", hash="fedcba987654")})
    store.put(other)
    expected = metrics.throughput(rec)

    def cli(*argv: str) -> str:
        assert main(list(argv)) == 0
        return capsys.readouterr().out

    listed = json.loads(cli("results", "--store", str(store.root), "--json"))
    assert next(r for r in listed if r["id"] == "r1")["images_per_sec"] == expected
    shown = json.loads(cli("results", "show", "r1", "--store", str(store.root), "--json"))
    assert shown["metrics"]["images_per_sec"] == expected
    table = json.loads(cli("results", "scaling", "cpu", "--store", str(store.root), "--format", "json"))
    assert table[0]["images_per_sec"] == expected
    (row,) = csv.DictReader(io.StringIO(cli("results", "scaling", "cpu", "--store", str(store.root),
                                            "--format", "csv")))
    assert float(row["images_per_sec"]) == pytest.approx(expected, rel=1e-12)
    compared = json.loads(cli("compare", "cpu", "new", "--store", str(store.root), "--format", "json"))
    assert compared["throughput"][0]["images_per_sec_old"] == expected
    assert f"{expected:,.1f}" in cli("results", "scaling", "cpu", "--store", str(store.root))


def test_an_imported_run_shows_the_figure_its_log_reported():
    rec = two_rank_record().model_copy(update={"origin": "import", "metrics": {"total_images_per_sec": 123.4}})
    assert metrics.throughput(rec) == 123.4 and metrics.source(rec) == metrics.REPORTED
    named = rec.model_copy(update={"metrics": {"reported_images_per_sec": 120.0, "total_images_per_sec": 123.4}})
    assert metrics.throughput(named) == 120.0
    measured = two_rank_record().model_copy(update={"metrics": {"total_images_per_sec": 123.4}})
    assert metrics.source(measured) == metrics.MEASURED  # only imports carry a reported figure


def test_a_point_is_the_geometric_mean_of_its_runs_with_an_interval_over_runs():
    records = [two_rank_record(f"r{i}", scale=s) for i, s in enumerate((1.0, 1.1, 0.9))]
    (point,) = metrics.points(records)
    values = [metrics.throughput(r) for r in records]
    assert point.images_per_sec == pytest.approx(stats.geometric_mean(values))
    assert point.estimate.scope == stats.RUNS_SCOPE and point.estimate.repeats == 3
    assert point.estimate.low < point.images_per_sec < point.estimate.high


def test_one_run_shows_its_own_figure_with_a_step_noise_interval_marked_as_such():
    (point,) = metrics.points([two_rank_record()])
    assert point.images_per_sec == metrics.throughput(two_rank_record())
    assert point.estimate.scope == stats.STEPS_SCOPE
    text = scaling_table(metrics.scaling([point]))
    assert "%*" in text and "step noise only" in text


def published(workers: int, ips: float) -> RunRecord:
    return RunRecord(id=f"p{workers}", created="2026-11-22T00:00:00+00:00", status="ok", origin="published",
                     stack=STACK, settings=Settings(workload="cnn", model="resnet50", workers=workers),
                     published=Published(images_per_sec=ips))


def test_a_series_without_its_one_worker_point_has_no_speedup_or_efficiency():
    rows = metrics.scaling(metrics.points([published(2, 400.0), published(4, 700.0)]))
    assert [(r.speedup, r.efficiency) for r in rows] == [(None, None), (None, None)]
    assert all("speedup and efficiency not measured" in " ".join(r.notes) for r in rows)
    data = json.loads(scaling_table(rows, "json"))
    assert [(d["speedup"], d["efficiency"]) for d in data] == [(None, None), (None, None)]
    text = scaling_table(rows)
    assert "100.00%" not in text and "2.00x" not in text


def test_a_named_baseline_gives_speedup_with_the_assumption_said():
    rows = metrics.scaling(metrics.points([published(2, 400.0), published(4, 700.0)]), baseline_workers=2)
    four = next(r for r in rows if r.point.workers == 4)
    assert four.speedup == pytest.approx(3.5) and four.efficiency == pytest.approx(0.875)
    assert four.baseline_workers == 2 and "assumed 2x one worker" in " ".join(four.notes)


def test_compare_keeps_the_assumed_caveat_and_null_efficiency_without_a_baseline():
    old = [published(2, 400.0), published(4, 700.0)]
    new = [p.model_copy(update={"stack": StackRef(name="new", hash="fedcba987654"),
                                "published": Published(images_per_sec=p.published.images_per_sec * 1.1)})
           for p in old]
    plain = compare(old, new, Options())
    assert all(r.old.efficiency is None and r.new.efficiency is None for r in plain.throughput)
    data = json.loads(render(plain, "json"))
    assert all(r["efficiency_old"] is None and r["efficiency_change"] is None for r in data["throughput"])
    named = compare(old, new, Options(baseline_workers=2))
    four = next(r for r in named.throughput if r.settings.workers == 4)
    assert four.old.efficiency == pytest.approx(0.875)
    assert "assumed 2x one worker" in render(named)


@pytest.mark.parametrize(("ratio", "text"), [(1.27, "1.27x faster"), (0.4425, "2.26x slower"),
                                             (1 / 1.08, "1.08x slower"), (1.0, "1.00x faster")])
def test_factors_are_worded_as_people_read_them(ratio, text):
    assert factor_text(ratio) == text


def test_a_slower_verdict_never_prints_a_factor_below_one():
    result = stats.RatioResult(0.4425, 0.40, 0.48, stats.SLOWER, 0.95, 0.02)
    assert verdict_text(result) == "2.26x slower"
    assert verdict_text(result, better="more bandwidth", worse="less bandwidth") == "2.26x less bandwidth"
    same = stats.RatioResult(0.99, 0.95, 1.03, stats.SAME, 0.95, 0.02)
    assert verdict_text(same) == "no significant difference"
