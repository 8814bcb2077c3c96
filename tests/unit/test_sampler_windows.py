"""The conditions sampler's windows (repro.launch.conditions.Sampler) on this machine's own /proc: the windows
between runs are shared, the after-window lasts while the run's results are collected (no sleep of its own), and
the sweep's own work between runs is not counted as other work."""

from __future__ import annotations

import time

from repro.hosts.inventory import Host
from repro.launch import conditions as sampling

LOCAL = Host(name="localhost", address="127.0.0.1", local=True)


def _spin(seconds: float) -> None:
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_the_next_runs_before_window_is_the_idle_gap_since_the_last_runs_after_window():
    with sampling.Sampler([LOCAL]) as sampler:
        with sampler.run(["localhost"]) as first:
            time.sleep(0.2)
        one = first.conditions  # waits for the after-window
        time.sleep(0.4)  # what the sweep does between runs: collect, store, plan
        with sampler.run(["localhost"]) as second:
            time.sleep(0.2)
        two = second.conditions
    before1 = [s for s in one.hosts["localhost"].samples if s.phase == "before"]
    after1 = [s for s in one.hosts["localhost"].samples if s.phase == "after"]
    before2 = [s for s in two.hosts["localhost"].samples if s.phase == "before"]
    assert len(before1) == len(after1) == len(before2) == 1
    assert before1[0].seconds >= sampling.BEFORE_S * 0.9  # the sweep's first run: a window of its own
    assert after1[0].seconds >= sampling.MIN_GAP_S * 0.9  # from the run's end until its conditions were asked for
    assert before2[0].seconds >= 0.35  # the gap since the first run's after-window closed, however long it was


def test_the_sweeps_own_cpu_between_runs_is_not_other_work():
    with sampling.Sampler([LOCAL]) as sampler:
        with sampler.run(["localhost"]) as first:
            pass
        assert first.conditions is not None
        _spin(0.3)  # the sweep itself busy between runs (parsing, storing)
        with sampler.run(["localhost"]) as second:
            pass
        before = next(s for s in second.conditions.hosts["localhost"].samples if s.phase == "before")
    assert before.busy is not None and before.others is not None
    assert before.busy - before.others > 0.05  # this process' CPU counted as the sweep's own, not other work


def test_the_after_window_lasts_until_the_conditions_are_asked_for():
    with sampling.Sampler([LOCAL]) as sampler:
        with sampler.run(["localhost"]) as taken:
            pass
        assert taken._close is not None  # the after-window is still open: collecting the run's results
        time.sleep(0.3)
        conditions = taken.conditions
    after = next(s for s in conditions.hosts["localhost"].samples if s.phase == "after")
    assert after.seconds >= 0.25  # it spanned the 0.3 s the "collecting" took, without a sleep of its own
