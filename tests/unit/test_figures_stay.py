"""Figures that stay put (issue 29): a resumed sweep's table covers the whole sweep, and --warmup auto is stored
with the record's figure, so re-printing gives the same numbers and says which window it used."""

from __future__ import annotations

import pytest

from repro.compare.kinds.throughput.sweep import scaling_document
from repro.formats import render
from repro.pipeline.running import sweep_records
from repro.results import metrics, steady
from repro.results.store import Store
from tests.unit import real_steps
from tests.unit.test_steady import QUIET, slow_start


def test_a_resumed_sweeps_records_are_every_run_of_the_sweep_the_latest_success_first(tmp_path):
    store = Store(tmp_path)
    runs = real_steps.runs()
    first = [real_steps.record(runs[i], "a", n=i) for i in range(3)]
    failed = first[2].model_copy(update={"id": "a-2-failed", "status": "failed", "failure": "killed",
                                         "created": "2026-11-21T00:00:00+00:00"})
    other = real_steps.record(runs[5], "a", n=0).model_copy(update={"id": "a-other", "sweep": first[0].sweep.model_copy(
        update={"id": "another-sweep"})})
    for rec in (*first[:2], failed, other):
        store.put(rec)
    assert [r.id for r in sweep_records(store, first[0].stack.hash, first[0].sweep.id)] == ["a-2-failed", "a-0", "a-1"]
    store.put(first[2])  # --resume re-ran the failed repeat
    assert sorted(r.id for r in sweep_records(store, first[0].stack.hash, first[0].sweep.id)) == ["a-0", "a-1", "a-2"]


def test_warmup_auto_is_stored_with_the_figure_and_re_printing_gives_the_same_numbers():
    rec = metrics.for_storage(real_steps.record(slow_start(QUIET), "a"))
    fixed = rec.metrics["images_per_sec"]
    auto = metrics.for_storage(rec, steady.AUTO)
    assert auto.metrics["warmup"] == "auto" and auto.metrics["images_per_sec"] == pytest.approx(
        metrics.throughput(rec, steady.AUTO)) and auto.metrics["images_per_sec"] > fixed * 1.05
    # re-deriving (results show does) keeps the stored window; asking for fixed gives fixed again
    assert metrics.with_figure(auto).metrics["images_per_sec"] == auto.metrics["images_per_sec"]
    assert "warmup" not in metrics.with_figure(auto, steady.FIXED).metrics
    assert metrics.common_warmup([auto, auto]) == "auto" and metrics.common_warmup([auto, rec]) == "fixed"


def test_the_scaling_caption_says_when_figures_come_from_the_detected_steady_state():
    rec = metrics.for_storage(real_steps.record(slow_start(QUIET), "a"), steady.AUTO)
    shown = render(scaling_document(metrics.scaling(metrics.points([rec], warmup=metrics.common_warmup([rec])))),
                   "table")
    assert "warm-up: --warmup auto" in shown
    fixed = render(scaling_document(metrics.scaling(metrics.points([rec]))), "table")
    assert "warm-up: --warmup auto" not in fixed
