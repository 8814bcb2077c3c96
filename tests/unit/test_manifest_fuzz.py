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
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.fuzz_cases import (
    DOCUMENTS,
    FIELD_LINES,
    FIELDS,
    HOSTILE_TEXT,
    ROOT,
    SCALE,
    SHIPPED,
    SPECIAL_TARGETS,
    YAML_CHARS,
    Tally,
    fuzz_settings,
    hostile_stack,
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


def mutated(args) -> bytes:
    path, edits = args
    text = path.read_text()
    for pos, cut, insert in edits:
        pos = pos % (len(text) + 1)
        text = text[:pos] + insert + text[pos + cut:]
    # a mutated child keeps resolving `extends` against the real stacks directory
    return text.replace("extends: ", f"extends: {ROOT / 'stacks'}/").encode("utf-8", "surrogatepass")


def over_a_valid_stack(overrides: dict) -> bytes:
    base = yaml.safe_load((ROOT / "stacks" / "tf114-cuda10.yaml").read_text())
    base["extends"] = str(ROOT / "stacks" / "tf110-cuda91.yaml")
    base.update(overrides)
    return yaml.safe_dump(base, allow_unicode=True).encode()


def test_random_bytes():
    fuzz(200, st.binary(max_size=3000), bytes)


def test_mutated_shipped_manifests():
    edits = st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 40), st.text(YAML_CHARS, max_size=12)),
                     max_size=6)
    fuzz(250, st.tuples(st.sampled_from(SHIPPED), edits), mutated)


def test_random_documents():
    fuzz(150, DOCUMENTS, lambda doc: yaml.safe_dump(doc, allow_unicode=True).encode())


def test_random_fields_over_a_valid_stack():
    fuzz(150, st.dictionaries(st.sampled_from(FIELDS), DOCUMENTS, max_size=6), over_a_valid_stack)


def test_hostile_values_in_every_field():
    fuzz(350, st.tuples(st.sampled_from(sorted(FIELD_LINES)), st.sampled_from(HOSTILE_TEXT)),
         lambda fv: hostile_stack(*fv).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("target", SPECIAL_TARGETS)
def test_extends_to_special_files_is_a_located_error(tmp_path, target):
    tally = Tally()
    child = special_extends(tmp_path, target)
    manifest_property(child, tally)
    finish(tally, 1)
    if target != "absolute-valid":
        assert tally.errors, f"extends to {target} was accepted"


@st.composite
def nested(draw) -> str:
    depth = draw(st.integers(1, 3000))
    kind = draw(st.sampled_from(["flow-seq", "flow-map", "block", "dup", "alias", "quote"]))
    if kind == "flow-seq":
        return "a: " + "[" * depth + "]" * draw(st.integers(0, depth)) + "\n"
    if kind == "flow-map":
        return "a: " + "{b: " * depth + "}" * draw(st.integers(0, depth)) + "\n"
    if kind == "block":
        return "".join("  " * i + f"k{i}:\n" for i in range(min(depth, 400))) + "  " * min(depth, 400) + "x: 1\n"
    if kind == "dup":
        key = draw(st.sampled_from(["python", "os", "env", "benchmark", "tensorflow"]))
        return hostile_stack("python", "'3.11'") + f"{key}: 1\n" * draw(st.integers(1, 5))
    if kind == "alias":
        width = draw(st.integers(2, 12))
        lines = ["a0: &a0 [" + ",".join(["x"] * width) + "]"]
        lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, min(depth, 12))]
        return "\n".join(lines) + "\n"
    return hostile_stack("description", '"' + "\\\"" * draw(st.integers(0, 5)) + "'" * depth)


def test_deep_nesting_duplicates_and_bombs():
    fuzz(150, nested(), str.encode)
