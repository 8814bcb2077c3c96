"""The "What changed" line of `repro compare` (issue 42 item 8): never "nothing recorded differs" above a list."""

from __future__ import annotations

from types import SimpleNamespace

from repro.compare.align import Change
from repro.compare.diff import Changes
from repro.compare.render import _changes_lines


def _lines(**parts) -> list[str]:
    empty = {"manifest": (), "lock": (), "settings": (), "hardware": (), "software": ()}
    return _changes_lines(SimpleNamespace(changes=Changes(**{**empty, **parts})))


def test_nothing_recorded_differs_only_when_nothing_is_listed():
    assert _lines() == ["What changed: nothing recorded differs"]


def test_differences_without_headline_words_are_counted_not_denied():
    lines = _lines(lock=(Change("image.id", "sha256:aa", "sha256:bb"), Change("versions.openmpi", "4.1.4", "4.1.5")))
    assert lines[0] == "What changed: 2 recorded differences, listed below"
    assert lines[1] == "  lock:" and len(lines) == 4


def test_a_headline_difference_is_named():
    lines = _lines(manifest=(Change("tensorflow.version", "1.10.0", "1.14.0"),))
    assert lines[0] == "What changed: TensorFlow 1.10.0 → 1.14.0"


def test_a_host_probe_of_the_pinned_framework_only_is_no_difference_from_one_that_found_both():
    from repro.compare.diff import lock_diff
    from repro.manifest.software import Software
    from tests.unit import real_steps

    run = real_steps.runs()[0]
    both = Software(python="3.11.7", tensorflow="2.15.1", torch="2.1.2", torch_backends={"gloo": True})
    pinned = Software(python="3.11.7", tensorflow="2.15.1", torch_error="not probed: the stack pins another framework")
    stack = real_steps.record(run, "a").stack.model_copy(update={"manifest": {"name": "a", "tensorflow": {}}})
    old = real_steps.record(run, "a").model_copy(update={"stack": stack, "host_software": {"h1": both}})
    new = real_steps.record(run, "a").model_copy(update={"stack": stack, "host_software": {"h1": pinned}})
    assert lock_diff([old], [new]) == ()
    newer = Software(python="3.11.7", tensorflow="2.16.1", torch_error="not probed: the stack pins another framework")
    newer_tf = new.model_copy(update={"host_software": {"h1": newer}})
    assert [c.path for c in lock_diff([old], [newer_tf])] == ["hosts.h1.frameworks.tensorflow.version"]
