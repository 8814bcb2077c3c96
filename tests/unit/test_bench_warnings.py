"""The warm-up warnings printed after a point speak of the steps the figures use: under --warmup auto the detected
transient is excluded, so no warning says it is 'left in'; time-to-accuracy and all-reduce runs have no steady
state of step times to warn about."""

from __future__ import annotations

from types import SimpleNamespace

from repro.pipeline.running import _Run
from repro.pipeline.sweep_plan import BenchOptions
from repro.results import steady
from tests.unit import real_steps


def _short_warmup():
    from tests.unit.test_steady import QUIET, slow_start

    # a material transient (about 7% of the mean step) left in by the fixed warm-up: below 5% nothing is said
    rec = real_steps.record(slow_start(QUIET, 2, 2.0), "cpu", n=5)
    assert any("left in" in w for w in steady.warnings(rec))  # a run whose fixed warm-up ended too early
    return rec


def _warnings(rec, warmup: str) -> tuple[str, ...]:
    return _Run.warnings(SimpleNamespace(options=BenchOptions(warmup=warmup)), rec)  # type: ignore[arg-type]


def test_under_warmup_auto_no_warning_says_the_transient_is_left_in():
    rec = _short_warmup()
    assert any("left in" in w for w in _warnings(rec, "fixed"))
    assert not any("left in" in w or "too short" in w for w in _warnings(rec, "auto"))


def test_time_to_accuracy_runs_get_no_steady_state_warnings():
    rec = _short_warmup()
    tta = rec.model_copy(update={"settings": rec.settings.model_copy(update={"workload": "tta", "model": None})})
    assert _warnings(tta, "fixed") == ()
    allreduce = rec.model_copy(update={"settings": rec.settings.model_copy(update={"workload": "allreduce"})})
    assert _warnings(allreduce, "fixed") == ()
