"""All-reduce comparisons say one thing: the time and bus-bandwidth ratios come from the same figures, an interval is
over runs or absent, and a difference in what was measured is one line, not one per size."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from repro.compare import Options, compare
from repro.compare.render import render
from repro.results import stats
from repro.results.record import RunRecord, Settings, StackRef, new_id

SIZES = [4 * 2**k for k in range(20)]


def run(stack: str, latency: float, seed: int, *, dtypes: tuple[str, ...] = ("float32",), stall: bool = False,
        workers: int = 2) -> RunRecord:
    """An all-reduce run: per size 50 latencies with 3% noise; `stall`: a few iterations 50x longer (a busy host)."""
    rng = np.random.default_rng(seed)
    rows = []
    for dtype in dtypes:
        for nbytes in SIZES:
            base = latency * (1 + nbytes / 1e6)
            lats = base * (1 + 0.03 * rng.standard_normal(50))
            if stall:
                lats[rng.integers(0, 50, 3)] *= 50
            lats = [float(x) for x in np.abs(lats)]
            med = float(np.median(lats))
            rows.append({"dtype": dtype, "elements": nbytes // 4, "bytes": nbytes, "latencies": lats,
                         "latency_median": med, "algbw_median": nbytes / med, "busbw_median": nbytes / med})
    return RunRecord(id=new_id(), created="2026-11-01T00:00:00+00:00", status="ok",
                     stack=StackRef(name=stack, hash=(stack * 12)[:12]),
                     settings=Settings(workload="allreduce", workers=workers, backend="mpi"),
                     metrics={"backend": "mpi", "results": rows, "bus_factor": 2 * (workers - 1) / workers})


def test_time_and_bus_bandwidth_ratios_are_one_figure_seen_two_ways():
    old = [run("a", 1e-4, i, stall=i == 0) for i in range(3)]
    new = [run("b", 0.93e-4, 10 + i, stall=i == 1) for i in range(3)]
    for r in compare(old, new, Options()).allreduce:
        assert r.time_ratio * r.bandwidth.ratio == pytest.approx(1.0)
        assert r.new.busbw / r.old.busbw == pytest.approx(r.bandwidth.ratio)
        assert r.old.time_s / r.new.time_s == pytest.approx(r.bandwidth.ratio)
        # the side's busbw is the size over the side's time, with nccl-tests' factor 2(n-1)/n
        assert r.old.busbw == pytest.approx(r.bytes / r.old.time_s * 1.0)
        if r.bandwidth.verdict == stats.FASTER:
            assert r.time_ratio < 1  # never "faster" with a longer time


def test_one_run_a_side_has_no_interval_and_no_verdict():
    c = compare([run("a", 1e-4, 1, stall=True)], [run("b", 1e-4, 2)], Options())
    assert c.allreduce and all(r.bandwidth.low is None and r.bandwidth.high is None for r in c.allreduce)
    assert {r.bandwidth.verdict for r in c.allreduce} == {stats.NOT_ENOUGH}
    text = render(c, "table")
    assert "[0.000" not in text


def test_intervals_over_runs_contain_the_ratio():
    c = compare([run("a", 1e-4, i) for i in range(3)], [run("b", 1e-4, 10 + i) for i in range(3)], Options())
    for r in c.allreduce:
        assert r.bandwidth.method == stats.WELCH
        assert r.bandwidth.low <= r.bandwidth.ratio <= r.bandwidth.high
        assert r.bandwidth.high / r.bandwidth.low < 1.5  # 3% noise over 3 runs: a narrow interval


def test_sizes_measured_on_one_side_only_are_one_line_per_difference():
    old = [run("a", 1e-4, i, dtypes=("float32", "float16")) for i in range(2)]
    new = [run("b", 1e-4, 10 + i) for i in range(2)]
    c = compare(old, new, Options())
    only = [n for n in c.notes if "only in OLD" in n]
    assert len(only) == 1, c.notes
    assert "20 sizes of float16" in only[0] and "4 to 2,097,152 bytes" in only[0]
    assert len(c.allreduce) == len(SIZES)  # the float32 sizes of Horovod's path (no raw path in these runs)
    text = render(c, "table")
    assert sum("only in OLD" in line for line in text.splitlines()) == 1


def test_csv_has_one_bandwidth_ratio_and_its_inverse():
    c = compare([run("a", 1e-4, i) for i in range(2)], [run("b", 0.9e-4, 10 + i) for i in range(2)], Options())
    rows = [r for r in csv.DictReader(io.StringIO(render(c, "csv"))) if r["kind"] == "allreduce"]
    assert rows and "bandwidth_ratio" not in rows[0] and "latency_ratio" not in rows[0]
    for r in rows:
        assert float(r["time_ratio"]) * float(r["busbw_ratio"]) == pytest.approx(1.0)


def test_the_compare_plot_shows_the_ratios_interval_under_each_pair():
    pytest.importorskip("matplotlib")
    from repro.compare.plot import comparison_figure
    from tests.unit.test_reports import sides

    old, new = sides()
    c = compare(old, new, Options())
    bars = comparison_figure(c).axes[0]
    ticks = [t.get_text() for t in bars.get_xticklabels()]
    row = c.throughput[0]
    assert row.ratio.low is not None
    assert f"[{row.ratio.low:.2f}, {row.ratio.high:.2f}]" in ticks[0]
