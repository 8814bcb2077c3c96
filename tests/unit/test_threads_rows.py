"""A --threads sweep: its rows say their thread count (table, CSV, JSON, plot series), so two 'workers 1' rows
are never alike."""

from __future__ import annotations

import csv
import io
import json

from repro.compare.kinds.throughput.sweep import scaling_document
from repro.formats import render
from repro.results import metrics
from repro.results.record import RunRecord
from tests.unit import real_steps


def _threads(record: RunRecord, threads: int) -> RunRecord:
    return record.model_copy(update={"id": f"{record.id}-t{threads}",
                                     "settings": record.settings.model_copy(update={"threads": threads})})


def _records() -> list[RunRecord]:
    runs = real_steps.runs(1)
    return [_threads(real_steps.record(r, "cpu", n=i), t) for t in (1, 2) for i, r in enumerate(runs[:2])]


def test_a_threads_sweep_has_a_threads_column_in_every_format():
    doc = scaling_document(metrics.scaling(metrics.points(_records())))
    (table,) = doc.tables
    assert "threads" in table.headers
    col = table.headers.index("threads")
    assert sorted(row[col] for row in table.cells) == ["1", "2"]
    rows = list(csv.DictReader(io.StringIO(render(doc, "csv"))))
    assert sorted(r["threads"] for r in rows) == ["1", "2"]
    assert sorted(r["threads"] for r in json.loads(render(doc, "json"))) == [1, 2]
    text = render(doc, "table")
    assert text.splitlines()[-1] != text.splitlines()[-2]


def test_a_single_thread_count_goes_to_the_caption():
    records = [r for r in _records() if r.settings.threads == 2]
    doc = scaling_document(metrics.scaling(metrics.points(records)))
    (table,) = doc.tables
    assert "threads" not in table.headers and "2 intra-op threads per worker" in " ".join(table.caption)


def test_the_sweep_labels_its_points_with_their_threads():
    from repro.pipeline.running import _describe

    point = _records()[0].settings
    assert "threads=1" in _describe(point, 0, 1)
