"""Every kind of stored result can be printed and plotted again from the store: `repro results table` (alias of
`results scaling`) prints the scaling, all-reduce (nccl-tests style) and time-to-accuracy tables; `repro results`
lists every run with its figure."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from repro.cli import main
from repro.formats import FORMATS
from repro.results.record import RunRecord, Settings, StackRef
from repro.results.store import Store
from tests.unit import real_steps
from tests.unit.test_reports import ALLREDUCE, load


def tta_run(rid: str, workers: int, seconds: float | None, *, status: str = "ok") -> RunRecord:
    """A time-to-accuracy run as the tta workload stores it (curve of validation top-1 per epoch)."""
    curve = [{"epoch": e, "elapsed_s": 4.0 * e, "val_top1": min(0.99, 0.5 + 0.1 * e), "val_top5": 1.0}
             for e in range(1, 6)]
    reached = seconds is not None
    metrics = {"target": 0.8, "reached": reached, "time_to_accuracy_s": seconds, "epochs": 5 if reached else 8,
               "final_top1": 0.9 if reached else 0.7, "final_top5": 1.0, "compute_s": 10.0, "communication_s": 2.0,
               "curve": curve}
    return RunRecord(id=rid, created="2026-11-22T00:00:00+00:00", status=status,
                     failure=None if status == "ok" else "mpirun exited with status 1",
                     stack=StackRef(name="cpu-tta", hash="7777aaaa7777"), settings=Settings(workload="tta",
                                                                                            workers=workers),
                     metrics=metrics if status == "ok" else {"target": 0.8})


@pytest.fixture()
def store(tmp_path: Path) -> str:
    s = Store(tmp_path / "results")
    s.put(load(ALLREDUCE))
    for rec in (tta_run("tta-1", 2, 12.0), tta_run("tta-2", 2, 14.0), tta_run("tta-3", 2, None),
                tta_run("tta-4", 1, 20.0)):
        s.put(rec)
    for i, run in enumerate(real_steps.runs(1)[:2]):
        s.put(real_steps.record(run, "cpu-cnn", n=i))
    return str(s.root)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_stored_allreduce_runs_print_again_as_the_nccl_tests_table(capsys, store):
    code, out, err = run(capsys, "results", "scaling", "--kind", "allreduce", "--store", store)
    assert code == 0, err
    assert "All-reduce" in out and "hvd busbw" in out and "raw #wrong" in out
    assert "average bus bandwidth: Horovod" in out
    sizes = len(load(ALLREDUCE).metrics["results"])
    assert sum(1 for line in out.splitlines() if line[:1] == " " or line[:1].isdigit()) >= sizes


def test_stored_tta_runs_print_again_with_an_aggregate_row(capsys, store):
    code, out, err = run(capsys, "results", "table", "--kind", "tta", "--store", store)
    assert code == 0, err
    assert "Time to accuracy" in out
    mean = [line for line in out.splitlines() if " mean " in f" {line} "]
    assert len(mean) == 1 and "13.0 (2/3 reached)" in mean[0]  # mean of 12 and 14 over the runs that reached
    code, out, _ = run(capsys, "results", "table", "--kind", "tta", "--store", store, "--format", "json")
    rows = json.loads(out)
    (agg,) = [r for r in rows if r["aggregate"]]
    assert agg["runs"] == 3 and agg["reached_runs"] == 2 and agg["time_to_accuracy_s"] == pytest.approx(13.0)


@pytest.mark.parametrize("fmt", FORMATS.names())
def test_every_kind_prints_in_every_format(capsys, store, fmt):
    code, out, err = run(capsys, "results", "table", "--store", store, "--format", fmt)
    assert code == 0, err
    if fmt == "json":
        assert set(json.loads(out)) == {"throughput", "allreduce", "tta"}
    elif fmt == "csv":
        header = next(csv.reader(io.StringIO(out)))
        assert "images_per_sec" in header and "horovod_busbw_GBps" in header and "time_to_accuracy_s" in header
    else:
        assert "images/sec" in out and "busbw" in out and "Time to accuracy" in out


def test_the_listing_shows_every_runs_figure(capsys, store):
    code, out, _ = run(capsys, "results", "--store", store)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[-1] == "figure"
    allreduce = next(line for line in lines if " allreduce " in line)
    assert allreduce.endswith("GB/s busbw") and not allreduce.rstrip().endswith(" -")
    assert next(line for line in lines if "tta-1" in line).endswith("12.00 s to accuracy")
    assert next(line for line in lines if " cnn " in line).endswith("images/sec")
    code, out, _ = run(capsys, "results", "--store", store, "--format", "json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert rows["tta-1"]["figure"] == 12.0 and rows["tta-1"]["unit"] == "s to accuracy"


@pytest.mark.parametrize("kind", ["throughput", "allreduce", "tta"])
def test_every_kind_plots_again(capsys, store, tmp_path, kind):
    pytest.importorskip("matplotlib")
    target = tmp_path / f"{kind}.png"
    code, _, err = run(capsys, "results", "table", "--kind", kind, "--store", store, "--plot", str(target))
    assert code == 0, err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_plot_of_several_kinds_asks_for_one(capsys, store, tmp_path):
    code, _, err = run(capsys, "results", "table", "--store", store, "--plot", str(tmp_path / "x.png"))
    assert code == 2 and "--kind" in err


def test_scaling_keeps_to_throughput_runs_but_no_longer_refuses_the_others(capsys, tmp_path):
    only = Store(tmp_path / "allreduce-only")
    only.put(load(ALLREDUCE))
    code, out, err = run(capsys, "results", "scaling", "--store", str(only.root))
    assert code == 0 and "All-reduce" in out, err  # it used to say: no throughput runs to tabulate


def test_scaling_of_a_mixed_store_is_the_scaling_table(capsys, store):
    code, out, _ = run(capsys, "results", "scaling", "--store", store, "--format", "json")
    rows = json.loads(out)
    assert code == 0 and isinstance(rows, list) and {r["workload"] for r in rows} == {"cnn"}
