"""Figures (matplotlib Figure objects inspected, never pixels): legend names the stacks, error bars from the
intervals, value labels that do not collide, a speedup panel with the ideal line, no empty panel; --plot is
checked before any work."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from matplotlib.container import BarContainer

from repro.cli import main
from repro.compare import Options, compare
from repro.compare.kinds.allreduce.figure import allreduce_figure
from repro.compare.kinds.allreduce.sweep import allreduce_sweeps
from repro.compare.kinds.throughput.figure import scaling_figure
from repro.compare.kinds.tta.figure import tta_figure
from repro.compare.plot import comparison_figure
from repro.errors import InputError
from repro.results import metrics
from repro.results.plots import IDEAL_COLOR, check_target, overlapping, save, value_labels, value_text
from repro.results.record import StackRef, parse_record
from tests.unit import real_steps
from tests.unit.test_reports import ALLREDUCE, sides, tta_record


def legend_names(fig) -> list[str]:
    (legend,) = fig.legends
    return [t.get_text() for t in legend.get_texts()]


def bar_containers(ax) -> list[BarContainer]:
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def errorbar_segments(ax) -> int:
    return sum(len(c.errorbar.lines[2][0].get_segments()) for c in bar_containers(ax) if c.errorbar)


def ideal_line(ax):
    return next(line for line in ax.get_lines() if line.get_label() == "ideal (linear)")


def test_the_compare_figure_names_the_stacks_draws_intervals_labels_and_the_speedup_against_ideal():
    old, new = sides()
    c = compare(old, new, Options())
    fig = comparison_figure(c)
    assert legend_names(fig) == ["tf215-old", "tf215-new", "ideal (linear)"]  # stacks, never OLD/NEW
    bars, speedup = fig.axes  # one series: its bars and its speedup panel, nothing else (no blank panel)
    assert [c.get_label() for c in bar_containers(bars)] == ["tf215-old", "tf215-new"]
    assert errorbar_segments(bars) == 4  # a 95% interval on each of 2 sides x 2 worker counts
    for container, side in zip(bar_containers(bars), ("old", "new"), strict=True):
        low, high = container.errorbar.lines[2][0].get_segments()[0][:, 1]  # the 1-worker bar's interval
        assert low == pytest.approx(getattr(c.throughput[0], side).low)
        assert high == pytest.approx(getattr(c.throughput[0], side).high)
    labels = [t.get_text() for t in value_labels(fig) if t.axes is bars]
    assert len(labels) == 4 and value_text(c.throughput[0].old.images_per_sec) in labels
    ideal = ideal_line(speedup)
    assert list(ideal.get_xdata()) == list(ideal.get_ydata()) == [1, 2] and ideal.get_color() == IDEAL_COLOR
    assert {line.get_label() for line in speedup.get_lines()} >= {"tf215-old", "tf215-new"}
    assert not overlapping(fig)  # no two value labels collide
    ticks = [t.get_text() for t in bars.get_xticklabels()]
    assert ticks[0].startswith("1\n") and "x" in ticks[0]  # NEW/OLD under each worker count


def test_the_scaling_figure_puts_stacks_side_by_side_per_worker_count_as_seed_003():
    old, new = sides()
    fig = scaling_figure(metrics.scaling(metrics.points(old + new)))
    assert legend_names(fig) == ["tf215-new", "tf215-old", "ideal (linear)"]  # stacks in name order
    bars, speedup = fig.axes
    containers = bar_containers(bars)
    assert [len(c.patches) for c in containers] == [2, 2]  # 1 and 2 workers, one bar per stack each
    assert [t.get_text() for t in bars.get_xticklabels()] == ["1", "2"]
    assert errorbar_segments(bars) == 4 and len(value_labels(fig)) >= 4
    assert ideal_line(speedup) is not None and not overlapping(fig)


def test_a_series_without_a_speedup_gets_no_empty_speedup_panel():
    one_worker = [r for r in sides()[0] if r.settings.workers == 1]
    fig = scaling_figure(metrics.scaling(metrics.points(one_worker)))
    assert len(fig.axes) == 1 and legend_names(fig) == ["tf215-old"]


def test_crowded_bar_labels_are_turned_and_never_collide():
    many = []  # sixteen stacks side by side at about 20,000 images/sec: narrow bars, labels wider than them
    for i in range(16):
        stack = StackRef(name=f"stack-{i:02d}", hash=f"{i:012d}")
        many += [real_steps.record(r, "x", n=k, scale=0.01 * (1 + i / 100)).model_copy(update={"stack": stack})
                 for k, r in enumerate(real_steps.runs(1)[:2] + real_steps.runs(2)[:2])]
    fig = scaling_figure(metrics.scaling(metrics.points(many)))
    shown = [t for t in value_labels(fig) if t.get_visible() and t.axes is fig.axes[0]]
    assert len(shown) == 32 and all(t.get_rotation() == 90 for t in shown)  # turned upright: they collided
    assert not overlapping(fig)


def test_the_allreduce_figure_shows_latency_and_bus_bandwidth_of_both_paths_with_the_link():
    rec = parse_record(json.loads(ALLREDUCE.read_text()), str(ALLREDUCE))
    fig = allreduce_figure(allreduce_sweeps([rec], 10.0))
    assert legend_names(fig) == ["Horovod (mpi)", "raw MPI_Allreduce", "link 1.25 GB/s (10 Gbit/s)"]
    latency, bandwidth = fig.axes
    assert latency.get_yscale() == "log" and "GB/s" in bandwidth.get_ylabel()
    (sweep,) = allreduce_sweeps([rec], 10.0)
    raw = next(line for line in bandwidth.get_lines() if line.get_label() == "raw MPI_Allreduce")
    assert list(raw.get_ydata()) == pytest.approx([s.raw.busbw / 1e9 for s in sweep.sizes])


def test_the_tta_figure_draws_every_run_the_target_and_the_time_to_accuracy():
    rec = tta_record("t1", 2)
    curve = [{"epoch": e, "elapsed_s": 2.0 * e, "val_top1": min(0.99, 0.5 + 0.1 * e)} for e in range(1, 7)]
    rec = rec.model_copy(update={"metrics": {**rec.metrics, "curve": curve, "time_to_accuracy_s": 10.0}})
    fig = tta_figure([rec])
    assert legend_names(fig) == ["2 workers (t1)", "target 95.0%"]
    (ax,) = fig.axes
    assert any(line.get_xdata()[0] == 10.0 for line in ax.get_lines() if len(line.get_xdata()) == 2)
    assert math.isclose(ax.get_ylim()[1], 100)


@pytest.mark.parametrize("name", ["plot.gif", "plot", "dir/"])
def test_a_bad_plot_file_is_refused_before_any_work(tmp_path, name):
    with pytest.raises(InputError, match="--plot"):
        check_target(str(tmp_path / name) + ("/" if name.endswith("/") else ""))
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match="is not a directory"):
        check_target(blocker / "x.png")
    assert check_target(tmp_path / "new" / "deeper" / "x.svg") == tmp_path / "new" / "deeper" / "x.svg"


def test_bench_refuses_a_bad_plot_before_the_sweep(capsys, tmp_path):
    root = Path(__file__).resolve().parents[2]
    code = main(["bench", "--stack", str(root / "stacks" / "cpu-tf215.yaml"), "--hosts", str(root / "inventories"
                 / "localhost"), "--workload", "allreduce", "--plot", str(tmp_path / "x.jpg"), "--store",
                 str(tmp_path / "store")])
    assert code == 2 and "--plot" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()  # nothing ran, nothing was stored


def test_png_and_svg_are_written_at_a_readable_size(tmp_path):
    old, new = sides()
    rows = metrics.scaling(metrics.points(old + new))
    png = save(scaling_figure(rows), tmp_path / "s.png")
    import matplotlib.image

    pixels = matplotlib.image.imread(png)
    assert pixels.shape[1] >= 1500 and pixels.shape[0] >= 600  # 11 in wide at 150 dpi
    svg = save(scaling_figure(rows), tmp_path / "s.svg")
    assert "<svg" in svg.read_text()[:500]
