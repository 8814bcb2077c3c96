"""The loop the transformer-training readers share (repro.results.importers.training): cutting a log into runs where
the step count goes back or a launch command comes, and reading a run's steps with the settings its lines show."""

from __future__ import annotations

import re

import pytest

from repro.errors import InputError
from repro.results.importers import training
from repro.results.importers.lines import Line, split_lines
from repro.results.importers.training import Step

_STEP = re.compile(r"step (\d+) rate ([\d.]+)(?: batch (\d+))?")


def _step(line: Line) -> Step | None:
    m = _STEP.search(line.text)
    if m is None:
        return None
    return Step(line.number, int(m.group(1)), {"rate": float(m.group(2))},
                {"global_batch": int(m.group(3))} if m.group(3) else {})


LOG = split_lines("workers 4\nstep 10 rate 1.5 batch 32\nstep 20 rate 2.5 batch 64\nlaunch\nstep 30 rate 3\n"
                  "step 10 rate 4\nworkers 8\n")


def test_a_new_run_starts_where_the_step_count_goes_back_or_after_a_launch():
    assert training.run_indexes(LOG, _step) == [None, 0, 0, None, 0, 1, None]
    assert training.run_indexes(LOG, _step, launches={4}) == [None, 0, 0, None, 1, 2, None]


def test_steps_are_read_in_order_and_the_first_setting_shown_is_kept_with_its_line():
    shown = training.shown_for("toy")
    workers = lambda line: {"workers": int(line.text.split()[1])} if line.text.startswith("workers") else {}  # noqa: E731
    steps = training.read_steps(LOG, "toy.log", shown, _step, "no toy step line", "'step 10 rate 1.5'", workers)
    assert [(s.line, s.number, s.figures["rate"]) for s in steps] == [(2, 10, 1.5), (3, 20, 2.5), (5, 30, 3.0),
                                                                       (6, 10, 4.0)]
    assert shown.values == {"workload": "toy", "extra.program": "toy", "workers": 4, "global_batch": 32}
    assert shown.where == {"workers": 1, "global_batch": 2}


def test_a_run_without_a_step_is_refused_naming_the_file_line_and_what_is_missing():
    with pytest.raises(InputError, match=r"toy\.log: cannot import this log") as info:
        training.read_steps(split_lines("workers 4\nnothing here\n"), "toy.log", training.shown_for("toy"), _step,
                            "no toy step line", "'step 10 rate 1.5'")
    assert "toy.log:1: error: no toy step line\n    expected: 'step 10 rate 1.5'" in info.value.render()
