"""A comparison kind added from outside: one module (this one) plus one registration (`KINDS.add`).

The toy kind counts "ticks" a run reports in its metrics. Its rows must reach every rendering of
`repro compare` (table, markdown, csv, json), its regression rule must drive `--fail-on-regression`, and
its end-of-sweep document must be what `repro results table` prints for its runs; the built-in kinds'
outputs stay as they were (the other tests of compare, summary and formats).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from repro.cli import main
from repro.compare import Options, compare
from repro.compare.core import Comparison
from repro.compare.kind import KINDS, Kind, KindRows, headline, sweep_document
from repro.compare.render import render
from repro.compare.view import View
from repro.formats import Column, Document, Table
from repro.results.record import RunRecord, Settings, StackRef, new_id
from repro.results.store import Store
from repro.workloads import catalog
from repro.workloads.spec import WorkloadSpec


@dataclass(frozen=True)
class TickRow:
    key: tuple[tuple[str, Any], ...]
    old: float
    new: float

    @property
    def ratio(self) -> float:
        return self.new / self.old


def ticks(records: Sequence[RunRecord]) -> float:
    values = [float(r.metrics["ticks"]) for r in records if r.status == "ok"]
    return sum(values) / len(values)


class Ticks(Kind):
    """ticks per run (a toy: more is better)"""

    name = "ticks"

    def summary(self, record: RunRecord) -> str:
        return f"{record.metrics['ticks']} ticks"

    def headline(self, record: RunRecord) -> tuple[float | None, str]:
        return float(record.metrics["ticks"]), "ticks"

    def compare(self, pairs, old, new, options) -> KindRows:
        return KindRows(tuple(TickRow(p.key, ticks(p.old.records), ticks(p.new.records)) for p in pairs),
                        notes=("ticks: a toy kind",))

    def tables(self, view, part: KindRows) -> tuple[Table, ...]:
        SEEN.append(view)
        return (Table((Column("workers", True), Column("ticks OLD", True), Column("ticks NEW", True),
                       Column("NEW/OLD", True)),
                      tuple((str(dict(r.key)["workers"]), f"{r.old:g}", f"{r.new:g}", f"{r.ratio:.2f}x")
                            for r in part.rows),
                      tuple({"kind": "ticks", "workers": dict(r.key)["workers"], "old": r.old, "new": r.new}
                            for r in part.rows),
                      title="Ticks: NEW/OLD", name="ticks"),)

    def data(self, c, part: KindRows) -> dict[str, Any]:
        return {"ticks": [{"point": dict(r.key), "old": r.old, "new": r.new, "ratio": r.ratio} for r in part.rows]}

    def regressions(self, part: KindRows) -> tuple[Any, ...]:
        return tuple(r for r in part.rows if r.ratio < 0.5)  # its own rule: half the ticks

    def sweep_document(self, records, *, warmup="fixed", baseline_workers=None, link=None) -> Document:
        rows = sorted(records, key=lambda r: r.settings.workers)
        return Document((Table((Column("workers", True), Column("ticks", True)),
                               tuple((str(r.settings.workers), str(r.metrics["ticks"])) for r in rows),
                               tuple({"workers": r.settings.workers, "ticks": r.metrics["ticks"]} for r in rows),
                               title="Ticks per run", name="ticks"),))


SEEN: list[Any] = []  # what the kind was handed to draw its tables from

TICKER = WorkloadSpec(name="ticker", summary="reports ticks", kind="ticks")


@pytest.fixture()
def ticks_kind():
    """The one registration of the kind (and the toy workload that names it in its spec)."""
    KINDS.add("ticks", Ticks())
    catalog.register(TICKER)
    yield
    KINDS.remove("ticks")
    catalog.SPECS.pop("ticker", None)


def run(stack: str, count: int, *, workers: int = 1) -> RunRecord:
    ref = StackRef(name=stack, hash=f"{stack:0<12}"[:12], manifest={})
    return RunRecord(id=new_id(), created="2024-05-01T00:00:00+00:00", status="ok", failure=None, stack=ref,
                     settings=Settings(workload="ticker", workers=workers, hosts=1), ranks=[],
                     metrics={"ticks": count})


def sides() -> tuple[list[RunRecord], list[RunRecord]]:
    return ([run("base", 10, workers=w) for w in (1, 2) for _ in range(2)],
            [run("more", 30, workers=w) for w in (1, 2) for _ in range(2)])


def test_the_rows_of_a_registered_kind_reach_every_format_of_compare(ticks_kind):
    c = compare(*sides(), Options())
    assert [r.ratio for r in c.sections["ticks"].rows] == [3.0, 3.0]
    table = render(c, "table")
    assert "Ticks: NEW/OLD" in table and "3.00x" in table and "No point was measured" not in table
    assert "ticks: a toy kind" in table  # the kind's notes
    assert "Ticks: NEW/OLD" in render(c, "markdown")
    data = json.loads(render(c, "json"))
    assert [(p["point"]["workers"], p["old"], p["new"]) for p in data["ticks"]] == [(1, 10.0, 30.0), (2, 10.0, 30.0)]
    assert data["throughput"] == [] and data["regressions"] == 0  # the built-in kinds' keys stay
    rows = list(csv.DictReader(io.StringIO(render(c, "csv"))))
    assert [(r["kind"], r["workers"]) for r in rows] == [("ticks", "1"), ("ticks", "2")]


def test_the_kind_s_regression_rule_drives_fail_on_regression(ticks_kind, tmp_path, capsys):
    store = Store(tmp_path)
    old, _ = sides()
    for rec in [*old, run("fewer", 4), run("fewer", 4), run("fewer", 4, workers=2), run("fewer", 4, workers=2)]:
        store.put(rec)
    assert main(["compare", "base", "fewer", "--store", str(tmp_path), "--fail-on-regression"]) == 4
    out, err = capsys.readouterr()
    assert "Ticks: NEW/OLD" in out and "0.40x" in out and "2 point(s)" in err
    assert main(["compare", "fewer", "base", "--store", str(tmp_path), "--fail-on-regression"]) == 0


def test_the_kind_owns_the_end_of_sweep_report_and_the_listing_figure(ticks_kind, tmp_path, capsys):
    old, new = sides()
    assert sweep_document(old).tables[0].title == "Ticks per run"
    assert headline(new[0]) == (30.0, "ticks")
    store = Store(tmp_path)
    for rec in old:
        store.put(rec)
    assert main(["results", "table", "--store", str(tmp_path), "--kind", "ticks"]) == 0
    out = capsys.readouterr().out
    assert "Ticks per run" in out and "10" in out
    assert main(["results", "--store", str(tmp_path)]) == 0
    assert "10.00 ticks" in capsys.readouterr().out


def test_a_kind_must_be_a_kind_with_its_required_methods():
    class Partial(Kind):
        name = "partial"

        def compare(self, pairs, old, new, options) -> KindRows:
            return KindRows(())

    with pytest.raises(TypeError):
        Partial()  # no tables, no sweep_document
    with pytest.raises(TypeError):
        KINDS.add("plain", object())  # type: ignore[arg-type]
    assert "plain" not in KINDS


def test_a_kind_draws_from_a_frozen_view_of_the_comparison_not_the_comparison(ticks_kind):
    SEEN.clear()
    c = compare(*sides(), Options(threshold=0.07))
    render(c, "table")
    (view,) = SEEN
    assert isinstance(view, View) and not isinstance(view, Comparison)
    assert view.options.threshold == 0.07 and view.keys == c.keys
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.keys = ()  # type: ignore[misc]
    assert c.ticks == c.sections["ticks"].rows  # a kind's rows by its name, the core naming none


def test_a_built_in_kind_reads_its_runs_through_its_typed_metrics():
    tta = KINDS.get("tta")
    m = tta.read(run("base", 0).model_copy(update={"metrics": {"reached": 1, "time_to_accuracy_s": 12,
                                                               "epochs": "three", "target": 0.9}}))
    assert (m.reached, m.time_to_accuracy_s, m.epochs, m.target) == (True, 12, None, 0.9)
    assert m.accuracy_metric == "top1" and m.reached_in == 12
    allreduce = KINDS.get("allreduce").read(run("base", 0).model_copy(update={"metrics": {
        "results": [{"bytes": 8, "latencies": [1e-6, "x"], "raw": {"bytes": 8}}, {"no": "bytes"}, "junk"]}}))
    (row,) = allreduce.results
    assert row.bytes == 8 and row.latencies == (1e-6,) and row.raw is not None and row.dtype == "?"
