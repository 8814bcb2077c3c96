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
