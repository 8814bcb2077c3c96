"""The `--threads` warning (repro.results.threads): a run's intra-op threads against the cores its recorded
conditions say other work left free."""

from __future__ import annotations

import json

from repro.results import conditions as cond
from repro.results.record import parse_record
from repro.results.threads import threads_warning
from tests.unit import real_steps


def _run(threads: int, others: float, cpus: int = 2, workers_on_h1: int = 1):
    samples = [cond.HostSample(phase="during", t=5.0, seconds=5.0, load1=3.0, others=others)]
    conditions = cond.Conditions(hosts={"h1": cond.HostConditions(cpus=cpus, samples=samples)})
    rec = real_steps.record(real_steps.runs()[0], "a")
    ranks = [r.model_copy(update={"host": "h1"}) for r in rec.ranks] * workers_on_h1
    return rec.model_copy(update={"conditions": conditions, "ranks": ranks,
                                  "resolved": {**rec.resolved, "intra_threads": threads}})


def test_two_threads_on_a_2_core_host_with_a_core_of_other_work_are_warned_about_naming_threads():
    warning = threads_warning(_run(threads=2, others=1.2))
    assert warning is not None
    assert "2 intra-op thread(s) x 1 worker(s) on h1" in warning and "0.8 of its 2 cores free" in warning
    assert "`--threads 1`" in warning


def test_threads_that_fit_the_free_cores_are_not_warned_about():
    assert threads_warning(_run(threads=1, others=1.2)) is None
    assert threads_warning(_run(threads=2, others=0.1)) is None  # within the quarter-core floor
    assert threads_warning(_run(threads=4, others=0.5, cpus=8, workers_on_h1=1)) is None


def test_several_workers_on_a_host_count_their_threads_together():
    warning = threads_warning(_run(threads=2, others=1.0, cpus=4, workers_on_h1=2))
    assert warning is not None and "x 2 worker(s)" in warning and "`--threads 1`" in warning


def test_without_conditions_or_known_threads_nothing_is_said():
    rec = real_steps.record(real_steps.runs()[0], "a")
    assert threads_warning(rec) is None
    unknown = _run(threads=2, others=1.5).model_copy(update={"resolved": {}})
    assert threads_warning(unknown) is None


def test_the_warning_is_kept_in_the_record_and_old_records_without_it_still_load():
    rec = _run(threads=2, others=1.5)
    kept = rec.model_copy(update={"conditions": rec.conditions.model_copy(update={"warnings": [threads_warning(rec)]})})
    back = parse_record(json.loads(kept.model_dump_json()))
    assert back.conditions.warnings == kept.conditions.warnings and "--threads" in back.conditions.warnings[0]
    data = json.loads(rec.model_dump_json())
    del data["conditions"]["warnings"]
    assert parse_record(data).conditions.warnings == []
