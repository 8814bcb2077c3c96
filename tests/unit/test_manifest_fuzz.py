"""Property: whatever the bytes, loading a manifest returns a stack or a located ManifestError, nothing else.

Over 1,200 cases per run (derandomized: the same cases every run; REPRO_FUZZ_SCALE=N for N times more,
random): random bytes, mutated shipped stacks, random documents and fields, hostile values in every
field (non-ASCII digits, integers past Python's 4,300-digit limit, unbalanced quotes, tags, escapes of
NUL and lone surrogates, Jinja, shell), `extends:` to special files (symlink loop, FIFO, devices, a NUL
or surrogate in the name, cycles), deep nesting, duplicate keys and alias bombs. Each case must finish
within fuzz_cases.CASE_SECONDS, and every error must name file:line where the file has lines.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.fuzz_cases import (
    MANIFEST_CLASSES,
    SCALE,
    SPECIAL_TARGETS,
    Tally,
    fuzz_settings,
    manifest_property,
    special_extends,
)

pytestmark = pytest.mark.timeout(600)


def run(data: bytes, tally: Tally, name: str = "fuzz.yaml") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        manifest_property(path, tally)


def finish(tally: Tally, minimum: int) -> None:
    assert tally.cases >= minimum * SCALE, f"only {tally.cases} cases ran"
    assert not tally.unlocated, "errors without file:line:\n" + "\n".join(tally.unlocated[:10])


def fuzz(examples: int, strategy: st.SearchStrategy, to_bytes: Callable[[Any], bytes]) -> None:
    """Load `examples` manifests made by to_bytes from the strategy's values; check every outcome."""
    tally = Tally()

    @fuzz_settings(examples)
    @given(strategy)
    def case(value):
        run(to_bytes(value), tally)

    case()
    finish(tally, examples)


@pytest.mark.parametrize("name", sorted(MANIFEST_CLASSES))
def test_manifests_of_each_class_load_or_fail_located(name):
    fuzz(*MANIFEST_CLASSES[name])


@pytest.mark.parametrize("target", SPECIAL_TARGETS)
def test_extends_to_special_files_is_a_located_error(tmp_path, target):
    tally = Tally()
    child = special_extends(tmp_path, target)
    manifest_property(child, tally)
    finish(tally, 1)
    if target != "absolute-valid":
        assert tally.errors, f"extends to {target} was accepted"
