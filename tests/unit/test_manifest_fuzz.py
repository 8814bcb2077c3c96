"""Property: whatever the bytes, loading a manifest returns a stack or raises ManifestError, nothing else.

And a stack that loads can always be hashed and checked without an exception.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from repro.errors import ManifestError
from repro.manifest import load_stack
from repro.manifest.compat import check

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "stacks").glob("*.yaml"))
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
YAML_CHARS = st.sampled_from(list(":-[]{}&*!|>'\"#%@,?<\n\t ") + list("abc019.") + ["\x00", "\u2028", "\ufeff"])

FIELDS = ["os", "distro", "version", "python", "cuda", "cudnn", "nccl", "driver", "mpi", "tensorflow", "horovod",
          "env", "benchmark", "packages", "extends", "name", "with_gloo", "gpu_operations", "steps", "ofed"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["2.15.1", "10.0", "4.7-3", "NCCL", "0", "..", "1e9"]))
documents = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=8)), children,
                                               max_size=5)),
    max_leaves=25,
)


def load_property(data: bytes, name: str = "fuzz.yaml") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        try:
            loaded = load_stack(path)
        except ManifestError as exc:
            assert exc.render()  # renders without failing
            return
        assert len(loaded.hash) == 12
        for finding in check(loaded):
            assert finding.render()


@SETTINGS
@given(st.binary(max_size=3000))
def test_random_bytes(data):
    load_property(data)


@SETTINGS
@given(st.sampled_from(SHIPPED), st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 40),
                                                      st.text(YAML_CHARS, max_size=12)), max_size=6))
def test_mutated_shipped_manifests(path, edits):
    text = path.read_text()
    for pos, cut, insert in edits:
        pos = pos % (len(text) + 1)
        text = text[:pos] + insert + text[pos + cut:]
    # a mutated child keeps resolving `extends` against the real stacks directory
    text = text.replace("extends: ", f"extends: {ROOT / 'stacks'}/")
    load_property(text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(documents)
def test_random_documents(doc):
    load_property(yaml.safe_dump(doc, allow_unicode=True).encode())


@SETTINGS
@given(st.dictionaries(st.sampled_from(FIELDS), documents, max_size=6))
def test_random_fields_over_a_valid_stack(overrides):
    base = yaml.safe_load((ROOT / "stacks" / "tf114-cuda10.yaml").read_text())
    base["extends"] = str(ROOT / "stacks" / "tf110-cuda91.yaml")
    base.update(overrides)
    load_property(yaml.safe_dump(base, allow_unicode=True).encode())
