"""Progress of long commands: the sweep's bar has an ETA, and a point whose workload prints `[k/N]` lines (the
all-reduce sweep, one line per size as nccl-tests prints its rows) gets a bar of its own."""

from __future__ import annotations

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
    assert "TimeRemainingColumn" in columns and "TimeElapsedColumn" in columns
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
    assert "hvd     2000.0 us    2.000 GB/s #wrong 0" in row and "raw      500.0 us    8.000 GB/s #wrong 2" in row
