"""The editor JSON Schema (`repro schema`): valid draft-07, described, and in agreement with `repro validate`.

check-jsonschema (the real validator editors' schemas are checked with in CI) must accept every stack
repro accepts, shipped or test data, and reject manifests repro rejects for the schema's reasons.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from repro.errors import ManifestError
from repro.manifest import load_stack
from repro.manifest.compat import check
from repro.manifest.editor_schema import SCHEMA_ID, editor_schema

ROOT = Path(__file__).resolve().parents[2]
CHECK_JSONSCHEMA = Path(sys.executable).with_name("check-jsonschema")
STACKS = sorted((ROOT / "stacks").glob("*.yaml")) + sorted((ROOT / "tests" / "data" / "stacks").rglob("*.yaml"))


def accepted_by_repro(path: Path) -> bool:
    """What `repro validate PATH` accepts: it loads and has no compatibility error."""
    try:
        loaded = load_stack(path)
    except ManifestError:
        return False
    return not [f for f in check(loaded) if f.severity == "error"]


def check_jsonschema(schema: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CHECK_JSONSCHEMA), "--schemafile", str(schema), *map(str, files)],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def schema_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("schema") / "stack.schema.json"
    path.write_text(json.dumps(editor_schema()))
    return path


def test_schema_is_valid_draft7_with_an_id():
    schema = editor_schema()
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["$id"] == SCHEMA_ID and schema["$schema"].startswith("http://json-schema.org/draft-07")


def _properties(schema: dict):
    yield "(root)", schema["properties"]
    for name, definition in schema["definitions"].items():
        yield name, definition.get("properties", {})


def test_every_field_has_a_description():
    missing = [f"{owner}.{field}" for owner, props in _properties(editor_schema())
               for field, prop in props.items() if not prop.get("description")]
    assert not missing, missing


def test_known_value_sets_are_enums():
    d = editor_schema()["definitions"]
    assert d["OS"]["properties"]["distro"]["enum"] == ["ubuntu", "debian", "centos", "rockylinux"]
    assert "tta" in d["Benchmark"]["properties"]["workload"]["enum"]
    models = d["Benchmark"]["properties"]["model"]["enum"]
    assert {"resnet20", "resnet50", "digits_cnn", "inception4"} <= set(models)


def test_shipped_copy_is_what_repro_schema_prints():
    printed = subprocess.run([sys.executable, "-m", "repro", "schema"], capture_output=True, text=True, check=True,
                             cwd=ROOT).stdout
    assert json.loads((ROOT / "docs" / "stack.schema.json").read_text()) == json.loads(printed), \
        "docs/stack.schema.json is stale: repro schema > docs/stack.schema.json"


def test_check_jsonschema_accepts_every_stack_repro_accepts(schema_file):
    accepted = [p for p in STACKS if accepted_by_repro(p)]
    assert len(accepted) >= 10
    assert any("extends" in p.read_text() for p in accepted)
    assert any(": null" in p.read_text() for p in accepted)
    result = check_jsonschema(schema_file, accepted)
    assert result.returncode == 0, result.stdout + result.stderr


# Each of these is refused by repro's boundary; the schema must refuse it too (one check-jsonschema run).
BAD = [
    "os: {distro: ubuntu, version: '22.04'}\npython: '\u0663.\u0661\u0660'\n",  # Arabic-Indic digits
    "os: {distro: ubuntu, version: '\uff12\uff12.04'}\n",  # full-width digits
    "packages: {pip: ['$(touch /tmp/x)']}\n",
    "packages: {pip: ['--index-url=http://evil']}\n",
    "packages: {apt: ['curl\\nRUN rm -rf /']}\n",
    "base_image: \"debian:12\\nRUN id\"\n",
    "benchmark: {model: resnet51}\n",
    "env: {'BAD NAME': x}\n",
    "env: {NCCL_DEBUG: \"INFO\\nX\"}\n",
    "tensorflow: {verison: '2.15.1'}\n",
    "os: null\n",
    "container: {ssh_port: 70000}\n",
]


def test_check_jsonschema_rejects_what_the_boundary_rejects(schema_file, tmp_path):
    (tmp_path / "base.yaml").write_text((ROOT / "stacks" / "cpu-tf215.yaml").read_text())
    files = []
    for i, text in enumerate(BAD):
        path = tmp_path / f"bad{i}.yaml"
        path.write_text("extends: base.yaml\n" + text)
        assert not accepted_by_repro(path), text
        files.append(path)
    result = subprocess.run([str(CHECK_JSONSCHEMA), "--schemafile", str(schema_file), "-o", "json", *map(str, files)],
                            capture_output=True, text=True, timeout=120, check=False)
    report = json.loads(result.stdout)
    rejected = {Path(e["filename"]).name for e in report["errors"] + report["parse_errors"]}
    assert [f.name for f in files if f.name not in rejected] == []


def test_a_full_stack_must_be_complete_but_a_child_need_not(schema_file, tmp_path):
    partial = tmp_path / "partial.yaml"
    partial.write_text("python: '3.11'\n")
    assert check_jsonschema(schema_file, [partial]).returncode == 1  # no extends: os, mpi, ... required
    partial.write_text("extends: x.yaml\npython: '3.11'\nenv: {NCCL_DEBUG: null}\n")
    assert check_jsonschema(schema_file, [partial]).returncode == 0
