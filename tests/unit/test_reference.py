"""`repro compare NEW --reference REF --within X` (repro.compare.reference, repro.results.stats): one-sided verdicts
against a reference with runs (real step series of tests/data/steps) and against a single published number."""

from __future__ import annotations

import json

import numpy as np
import pytest

from repro.compare import Options, compare
from repro.compare.render import render
from repro.formats import FORMATS
from repro.results import metrics, stats
from repro.results.record import Published
from tests.unit import real_steps

REF = Options(within=0.05, allow_different_hardware=True)  # a published row names no device
CALM = [r for r in real_steps.runs(workers=1) if r["invocation"] <= 4]


def _side(name: str, picks, scale: float = 1.0):
    return [real_steps.record(CALM[i], name, n=k, scale=scale) for k, i in enumerate(picks)]


def _published(figure: float):
    base = real_steps.record(CALM[0], "table")
    return [base.model_copy(update={"published": Published(images_per_sec=figure), "origin": "published",
                                    "ranks": []})]


def test_the_verdict_is_one_sided_against_the_margin():
    def r(low, high):
        return stats.RatioResult(1.0, low, high, stats.SAME, 0.95, 0.02)

    assert stats.reference_verdict(r(0.96, 1.30), 0.05) == stats.WITHIN  # faster than the reference is within
    assert stats.reference_verdict(r(0.80, 0.94), 0.05) == stats.BELOW
    assert stats.reference_verdict(r(0.90, 1.10), 0.05) == stats.UNDECIDED
    assert stats.reference_verdict(stats.RatioResult(1.0, None, None, stats.NOT_ENOUGH, 0.95, 0.02),
                                   0.05) == stats.UNDECIDED
    assert stats.one_sided(0.95) == pytest.approx(0.90)
    steps_only = stats.RatioResult(1.0, 0.99, 1.01, stats.NOT_ENOUGH, 0.95, 0.02, method=stats.STEPS_ONLY)
    assert stats.reference_verdict(steps_only, 0.05) == stats.UNDECIDED  # one run a side: no verdict


def test_a_reference_with_runs_judges_both_sides_spread():
    ref = _side("ref", [0, 1, 2, 3, 4, 5])
    same = compare(ref, _side("new", [6, 7, 8, 9, 10, 11], scale=0.8), REF).reference
    (row,) = same.rows
    assert row.kind == "throughput" and row.figure == "images/sec"
    assert row.ratio.method == stats.WELCH and row.ratio.runs_old == 6 and row.ratio.runs_new == 6
    assert row.ratio.confidence == pytest.approx(0.90)  # a two-sided 90% interval: one-sided 95% bounds
    assert row.verdict == stats.WITHIN and row.ratio.low >= 0.95  # 25% faster steps: well above the margin
    slow = compare(ref, _side("new", [6, 7, 8, 9, 10, 11], scale=1.5), REF).reference
    assert slow.rows[0].verdict == stats.BELOW and slow.rows[0].ratio.high < 0.95
    close = compare(ref, _side("new", [6, 7, 8], scale=1.03), REF).reference
    assert close.rows[0].verdict == stats.UNDECIDED  # 3% slower with 11% run noise: either way possible


def test_a_single_published_number_is_said_plainly_and_the_interval_covers_the_candidates_runs():
    new = _side("new", [0, 1, 2, 3, 4, 5])
    figure = stats.geometric_mean([metrics.throughput(r) for r in new])
    c = compare(_published(figure * 1.2), new, REF)
    (row,) = c.reference.rows
    assert row.ratio.note == stats.SINGLE_NUMBER_NOTE and row.ratio.runs_old == 0
    assert row.ratio.ratio == pytest.approx(1 / 1.2, rel=1e-6) and row.verdict == stats.BELOW
    ok = compare(_published(figure * 0.9), new, REF).reference
    assert ok.rows[0].verdict == stats.WITHIN
    # the ordinary comparison of a published figure is unchanged: no interval, not enough runs
    plain = compare(_published(figure), new, Options(allow_different_hardware=True))
    assert plain.reference is None and plain.throughput[0].ratio.verdict == stats.NOT_ENOUGH


def test_every_format_prints_the_reference_verdict():
    c = compare(_side("ref", [0, 1, 2, 3]), _side("new", [4, 5, 6, 7], scale=0.8), REF)
    for fmt in FORMATS.names():
        text = render(c, fmt)
        assert "within" in text, fmt
    table = render(c, "table")
    assert "Against the reference: NEW within 5% of OLD?" in table and "within 5% of the reference" in table
    data = json.loads(render(c, "json"))
    assert data["reference"]["within"] == 0.05 and data["reference"]["rows"][0]["verdict"] == stats.WITHIN
    assert "reference" not in json.loads(render(compare(_side("a", [0, 1]), _side("b", [2, 3]), Options()), "json"))


def test_goal_check_says_unresolved_when_the_interval_reaches_both_sides_of_the_goal():
    # the torch_peer pairs: ratios 0.79-1.60 under a falling load
    pairs = [(1.0, x) for x in (0.79, 1.60, 0.85, 1.20, 0.93)]
    check = stats.goal_check(pairs, 0.98)
    assert check.verdict == stats.UNRESOLVED and check.ratio.low < 0.98 < check.ratio.high
    assert check.ratio.ratio == pytest.approx(float(np.exp(np.mean(np.log([0.79, 1.60, 0.85, 1.20, 0.93])))))
    assert "unresolved" in check.line("repro/plain")
    tight = stats.goal_check([(1.0, x) for x in (0.995, 1.0, 1.003, 0.998)], 0.98)
    assert tight.verdict == stats.MEETS
    assert stats.goal_check([(1.0, x) for x in (0.90, 0.91, 0.905)], 0.98).verdict == stats.MISSES


def _with_others(record, others: float, cpus: int = 2):
    from repro.results import conditions as cond

    samples = [cond.HostSample(phase="during", t=5.0 * (i + 1), seconds=5.0, others=others) for i in range(3)]
    hosts = {"localhost": cond.HostConditions(cpus=cpus, samples=samples)}
    return record.model_copy(update={"conditions": cond.Conditions(hosts=hosts)})


def test_the_bench_table_warns_when_other_work_used_the_cores_during_a_point():
    from repro.compare.kinds.throughput import sweep as report

    calm = [_with_others(r, 0.05) for r in _side("a", [0, 1])]
    busy = [_with_others(r, x) for r, x in zip(_side("a", [2, 3]), (0.6, 2.0), strict=True)]
    assert not any("other work" in n for n in metrics.points(calm)[0].notes)
    (point,) = metrics.points(busy)
    (note,) = [n for n in point.notes if "other work" in n]
    assert note.startswith("other work used 0.6-2.0 cores of 2 on localhost during the runs")
    text = report.scaling_table(metrics.scaling(metrics.points(busy)))
    assert "other work used 0.6-2.0 cores" in text  # under the table bench prints


def test_the_cli_judges_a_stored_stack_against_itself_and_refuses_a_misuse(capsys, tmp_path):
    import shutil
    from pathlib import Path

    from repro.cli import main

    store = tmp_path / "store"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "stores" / "v2", store)
    shutil.rmtree(store / "golden")
    # a selection judged against itself is refused like OLD = NEW (issue 41); the store's runs split in two are not
    runs = next(p for p in (store / "runs").iterdir() if p.is_dir())
    sides = {}
    for name, suffixes in (("reference", ("5f1c2a90", "7a3e9b11")), ("candidate", ("c4d2e8f0",))):
        sides[name] = tmp_path / name
        sides[name].mkdir()
        for suffix in suffixes:
            record = next(runs.glob(f"*-{suffix}.json"))
            shutil.copy(record, sides[name] / record.name)
    assert main(["compare", "cpu-tf215", "--reference", "cpu-tf215", "--within", "5%", "--store", str(store)]) == 2
    capsys.readouterr()
    code = main(["compare", str(sides["candidate"]), "--reference", str(sides["reference"]), "--within", "5%",
                 "--store", str(store), "--model", "resnet20", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)["reference"]["rows"]
    assert code == 0 and rows and {r["verdict"] for r in rows} <= {stats.UNDECIDED, stats.WITHIN, stats.BELOW}, rows
    assert main(["compare", "cpu-tf215", "cpu-tf215", "--within", "5%", "--store", str(store)]) == 2
    assert "--within is the margin of --reference" in capsys.readouterr().err
    assert main(["compare", "cpu-tf215", "cpu-tf215", "--reference", "cpu-tf215", "--store", str(store)]) == 2
    assert "takes one selection" in capsys.readouterr().err
