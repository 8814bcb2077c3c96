"""repro.results.steady: the detected warm-up (MSER, then the last slow step), warnings, --warmup auto."""

from __future__ import annotations

import numpy as np
import pytest

from repro.results import metrics, steady
from repro.results.record import RankResult
from tests.unit import real_steps

RUNS = real_steps.runs(workers=1)
QUIET = RUNS[3]  # a run of the fixture whose series settles right after the compile step


def slow_start(run: dict, steps: int = 8, factor: float = 3.0) -> dict:
    """The run with its first `steps` measured steps `factor` times slower."""
    rank = dict(run["ranks"][0])
    rank["step_times"] = [t * factor if i < steps else t for i, t in enumerate(rank["step_times"])]
    return {**run, "ranks": [rank]}


def test_a_quiet_real_run_is_steady_right_after_its_first_steps():
    found = steady.detect([*QUIET["ranks"][0]["warmup_times"], *QUIET["ranks"][0]["step_times"]])
    assert found.reached and 1 <= found.warmup <= 3  # the first step (graph build, seconds) is always out


def test_an_injected_slow_start_is_detected_warned_about_and_excluded_under_auto():
    rec = real_steps.record(slow_start(QUIET), "a")
    fixed = len(QUIET["ranks"][0]["warmup_times"])
    (rank,) = rec.ranks
    found = steady.rank_steady(rank)
    assert found.reached and found.warmup == fixed + 8
    (warning,) = steady.warnings(rec)
    assert "warm-up too short: steady from step 11, 3 warm-up steps excluded" in warning
    assert steady.warnings(rec, steady.AUTO) == ()
    clean = QUIET["ranks"][0]["step_times"][8:]
    assert metrics.global_step_times(rec, steady.AUTO) == pytest.approx(clean)
    assert metrics.throughput(rec, steady.AUTO) == pytest.approx(8 / np.mean(clean))
    assert metrics.throughput(rec) < 0.75 * metrics.throughput(rec, steady.AUTO)  # fixed keeps the slow start


def test_auto_excludes_the_slow_start_from_points_and_notes_it_under_fixed():
    records = [real_steps.record(slow_start(RUNS[i]), "a", n=i) for i in (3, 4)]
    fixed_point, = metrics.points(records)
    auto_point, = metrics.points(records, warmup=steady.AUTO)
    assert auto_point.images_per_sec > 1.3 * fixed_point.images_per_sec
    assert any(n.startswith("warm-up too short in 2 of 2 runs") for n in fixed_point.notes)
    assert not any("warm-up too short" in n for n in auto_point.notes)


def test_a_series_that_keeps_drifting_never_reaches_a_steady_state():
    base = np.asarray(QUIET["ranks"][0]["step_times"])
    drifting = list(base * np.linspace(1.0, 2.0, base.size))
    found = steady.detect(drifting)
    assert not found.reached
    rec = real_steps.record({**QUIET, "ranks": [{"warmup_times": [], "step_times": drifting}]}, "a")
    assert "never became steady" in steady.warnings(rec)[0]


def test_too_short_a_series_is_said_to_be_too_short():
    found = steady.detect([0.1, 0.05, 0.05])
    assert not found.known and not found.reached
    rank = RankResult(rank=0, step_times=[0.05] * 4, items_per_step=8)
    assert steady.window(rank, steady.AUTO) == [0.05] * 4  # nothing detected: nothing excluded


def test_mser_truncates_a_step_transient_and_keeps_a_stationary_series_nearly_whole():
    rng = np.random.default_rng(0)
    noise = 0.01 * rng.standard_normal(60)
    assert steady.mser(1.0 + noise)[0] <= 5
    series = np.concatenate([np.full(10, 2.0), np.ones(50)]) + noise
    d, inside = steady.mser(series)
    assert inside and 10 <= d <= 15  # MSER alone also drops a few noisy steady steps...
    assert steady.detect(series).warmup == 10  # ...which are not slow: the warm-up ends at the last slow step


def test_long_series_use_mser5_batches():
    series = np.concatenate([np.full(40, 3.0), np.ones(160)])
    found = steady.detect(series)
    assert found.reached and found.warmup == 40


def test_annotate_records_the_detected_warm_up_per_rank():
    rec = real_steps.record(slow_start(QUIET), "a")
    (rank,) = steady.annotate(rec.ranks)
    assert rank.detected_warmup == 11
    short = steady.annotate([RankResult(rank=0, step_times=[0.1] * 3)])
    assert short[0].detected_warmup is None


def test_the_warmup_flag_reaches_the_figures_of_results_scaling_and_compare(tmp_path, capsys):
    """--warmup auto through the command line, not only the library: `results scaling` and `compare`."""
    import json

    from repro.cli import main
    from repro.results.store import Store

    slow = [real_steps.record(slow_start(RUNS[i]), "a", n=i) for i in (3, 4)]
    clean = [real_steps.record(RUNS[i], "b", n=i) for i in (3, 4)]
    store = Store(tmp_path)
    for rec in (*slow, *clean):
        store.put(rec)

    def run(*argv: str) -> dict | list:
        assert main([*argv, "--store", str(tmp_path), "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)

    for warmup in (steady.FIXED, steady.AUTO):
        (point,) = metrics.points(slow, warmup=warmup)
        flags = ("--warmup", warmup) if warmup == steady.AUTO else ()
        rows = [r for r in run("results", "scaling", *flags) if r["stack"] == "a"]
        assert [r["images_per_sec"] for r in rows] == [pytest.approx(point.images_per_sec)], (warmup, rows)
        compared = run("compare", "a", "b", *flags)
        assert compared["options"]["warmup"] == warmup
        (row,) = compared["throughput"]
        assert row["images_per_sec_old"] == pytest.approx(point.images_per_sec)
    fixed, auto = (metrics.points(slow, warmup=w)[0].images_per_sec for w in (steady.FIXED, steady.AUTO))
    assert auto > 1.3 * fixed  # the flag changed the figure: the default keeps the slow start
