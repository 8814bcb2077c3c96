"""Progress of long commands: the sweep's bar has an ETA, and a point whose workload prints `[k/N]` lines (the
all-reduce sweep, one line per size as nccl-tests prints its rows) gets a bar of its own."""

from __future__ import annotations

import pytest

from repro.cli.progress import LiveProgress, point_step
from repro.workloads.allreduce import progress_row


def test_a_progress_line_says_how_far_the_point_is():
    assert point_step("    [3/26]        4,000 B  hvd ...") == (3, 26)
    assert point_step("allreduce fp32 1 elements") is None
    assert point_step("    [7/3] nonsense") is None
    assert point_step("[1/2] allreduce workers=2: ok") is None  # the sweep's own lines are not the point's


def test_the_point_gets_its_own_bar_with_an_eta_and_loses_it_when_it_ends(capsys):
    live = LiveProgress()
    columns = [type(c).__name__ for c in live.bar.columns]
    assert "EtaColumn" in columns and "TimeElapsedColumn" in columns  # the ETA from measured times
    live.running(1, 2, "[1/2] allreduce workers=2", "localhostx2")
    live.message("    [5/26] ...")
    point = next(t for t in live.bar.tasks if t.id == live.point)
    assert (point.completed, point.total) == (5, 26)
    live.finished(1, 2, "[1/2] allreduce workers=2", "ok (60.0 s)")
    assert live.point is None and [t.completed for t in live.bar.tasks] == [1]
    assert "[5/26] ..." in capsys.readouterr().err  # every line is printed above the bars too


def test_the_allreduce_workload_prints_a_row_per_size_as_nccl_tests_does():
    entry = {"horovod": [0.002, 0.001, 0.003], "wrong": 0, "raw": [0.0005] * 3, "raw_wrong": 2}
    row = progress_row("fp32", 1_000_000, entry, 2)
    assert row.split()[:4] == ["4,000,000", "B", "1,000,000", "fp32"]
    assert "hvd median     2000.0 us    2.000 GB/s #wrong 0" in row
    assert "raw median      500.0 us    8.000 GB/s #wrong 2" in row


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_eta_comes_from_measured_step_times_before_any_point_finished():
    from repro.cli.progress import Eta

    clock = Clock()
    eta = Eta(clock)
    eta.point_started(1, 3)
    assert eta.left() is None  # nothing measured yet: no guess
    clock.now = 5.0  # 5 s of start-up before the first step line
    eta.step(1, 11)
    clock.now = 7.0
    eta.step(3, 11)  # 1 s per step
    # this point: 8 steps left = 8 s; each of the 2 points after it: 4 s start-up + 11 steps = 15 s
    assert eta.left() == pytest.approx(8 + 2 * 15)
    clock.now = 9.0  # no new line for 2 s: the estimate counts down
    assert eta.left() == pytest.approx(6 + 2 * 15)


def test_points_skipped_by_resume_count_as_done_not_as_instant():
    from repro.cli.progress import Eta

    clock = Clock()
    eta = Eta(clock)
    for n in (1, 2):  # done earlier: skipped in no time
        eta.point_finished(n, 4, skipped=True)
    eta.point_started(3, 4)
    clock.now = 20.0
    eta.point_finished(3, 4)
    assert eta.durations == [20.0]  # the skipped points taught it nothing
    eta.point_started(4, 4)
    clock.now = 25.0
    assert eta.left() == pytest.approx(15.0)  # the last point: the measured 20 s, 5 of them gone


def test_the_live_bar_shows_a_numeric_eta_and_the_steps_of_a_point(capsys):
    from repro.cli.progress import LiveProgress, clock_text

    live = LiveProgress()
    live.status("checking the hosts' software")
    live.running(1, 2, "[1/2] cnn resnet20 workers=1", "localhostx1")
    live.message("    [1/30] step (warm-up) loss 2.3 100.0 ms")
    live.message("    [11/30] step (measured) loss 2.2 100.0 ms")
    point = next(t for t in live.bar.tasks if t.id == live.point)
    assert (point.completed, point.total) == (11, 30) and "step (measured)" in point.description
    assert clock_text(live.eta.left()) != "-:--:--"
    err = capsys.readouterr().err
    assert "checking the hosts' software" in err and "[11/30] step" not in err  # steps move the bar only


def test_lines_of_training_steps_are_thinned_in_logs():
    from repro.pipeline.progress import STEP_LINE_EVERY_S, LineProgress

    clock, lines = Clock(), []
    progress = LineProgress(lines.append, clock)
    for k in range(1, 101):
        clock.now = k * 0.5
        progress.message(f"    [{k}/100] step (measured) loss 1.0 500.0 ms")
    progress.message("    [3/26] 4,000 B ...")  # an all-reduce row: every one is kept
    assert len([x for x in lines if " step " in x]) <= 50 * 0.5 * 2 / STEP_LINE_EVERY_S + 2
    assert lines[-2].startswith("    [100/100]") and lines[-1].startswith("    [3/26]")
