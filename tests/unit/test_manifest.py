"""Manifest loading, validation, extends, hashing: real manifest files, no services."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repro.errors import ManifestError
from repro.manifest import load_stack
from repro.manifest.canonical import stack_hash
from repro.manifest.compat import check

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
BAD = ROOT / "tests" / "data" / "stacks" / "bad"


def diagnostics(path: Path) -> list:
    with pytest.raises(ManifestError) as info:
        load_stack(path)
    assert info.value.diagnostics, "a ManifestError must say what is wrong"
    return info.value.diagnostics


def test_every_shipped_stack_loads_without_errors():
    files = sorted(STACKS.glob("*.yaml"))
    assert len(files) >= 5
    for path in files:
        loaded = load_stack(path)
        errors = [f for f in check(loaded) if f.severity == "error"]
        assert not errors, f"{path.name}: {[f.render() for f in errors]}"


def test_misspelled_key_is_located_and_suggests_the_right_name():
    diags = diagnostics(BAD / "misspelled-key.yaml")
    unknown = [d for d in diags if "unknown field" in d.message]
    assert len(unknown) == 1
    d = unknown[0]
    assert "did you mean 'version'" in d.message
    assert d.path == "tensorflow.verison"
    assert (d.location.line, d.location.column) == (6, 3)
    assert d.location.file.endswith("misspelled-key.yaml")


def test_wrong_types_name_field_expected_and_found():
    diags = {d.path: d for d in diagnostics(BAD / "wrong-type.yaml")}
    assert set(diags) == {"horovod.with_mpi", "benchmark.batch_size"}
    assert diags["benchmark.batch_size"].found == "'lots'"
    assert diags["benchmark.batch_size"].expected == "a whole number"  # repro's words, not pydantic's "int"
    assert diags["benchmark.batch_size"].location.line == 7
    assert diags["horovod.with_mpi"].found == "'sometimes'"


def test_missing_required_version_is_reported_at_its_parent():
    (d,) = diagnostics(BAD / "missing-version.yaml")
    assert d.path == "tensorflow.version"
    assert "missing required field" in d.message
    assert d.location.line == 4
    assert "TensorFlow version" in d.expected


def test_malformed_versions_are_each_reported():
    diags = {d.path: d for d in diagnostics(BAD / "malformed-version.yaml")}
    assert set(diags) == {"python", "horovod.version"}
    assert "malformed version 'three.eleven'" in diags["python"].message
    assert diags["horovod.version"].location.line == 5


def test_all_errors_of_a_file_are_reported_together():
    diags = diagnostics(BAD / "many-errors.yaml")
    assert [d.path for d in diags] == ["os.distro", "benchmrk", "container.ssh_port"]
    assert "did you mean 'benchmark'" in diags[1].message


def test_duplicate_keys_are_errors_not_silently_overwritten():
    (d,) = diagnostics(BAD / "duplicate-key.yaml")
    assert "duplicate key 'python'" in d.message
    assert "line 3" in d.message and d.location.line == 4


def test_extends_cycle_is_an_error_naming_the_chain():
    (d,) = diagnostics(BAD / "cycle-a.yaml")
    assert "extends cycle" in d.message
    assert "cycle-a.yaml" in d.message and "cycle-b.yaml" in d.message


def test_extends_of_a_missing_file_points_at_the_extends_line():
    (d,) = diagnostics(BAD / "extends-missing.yaml")
    assert d.path == "extends"
    assert (d.location.line, d.location.column) == (1, 10)
    assert "no-such-stack.yaml" in d.message


def test_non_mapping_document_is_an_error():
    (d,) = diagnostics(BAD / "not-a-mapping.yaml")
    assert d.found == "a list"


def test_gpu_field_on_a_cpu_stack_is_located():
    (d,) = diagnostics(BAD / "gpu-field-on-cpu.yaml")
    assert d.path == "cudnn" and d.location.line == 2


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"\x00\x01\x02binary\xff\xfe", "not UTF-8"),
        (b"a: [1, 2\nb: 3\n", "YAML"),
        (b"", "no YAML document"),
        (b"--- {a: 1}\n--- {b: 2}\n", "single document"),
        (b"just a string\n", "mapping"),
        (b"!!python/object:os.system {}\n", "YAML"),
        (b"[" * 5000 + b"]" * 5000, "nest"),
        (b"<<: {a: 1}\nb: 2\n", "merge keys"),
        (b"? [a, b]\n: 1\n", "plain name"),
    ],
)
def test_hostile_input_gives_a_manifest_error(tmp_path, content, needle):
    path = tmp_path / "junk.yaml"
    path.write_bytes(content)
    with pytest.raises(ManifestError) as info:
        load_stack(path)
    text = info.value.render()
    assert needle.lower() in text.lower(), text


def test_yaml_bomb_is_refused_quickly(tmp_path):
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ManifestError) as info:
        load_stack(path)
    assert "alias" in info.value.render()


def test_huge_file_is_refused(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"# " + b"x" * (2 << 20) + b"\n")
    with pytest.raises(ManifestError, match="too large"):
        load_stack(path)


def test_versions_written_as_yaml_numbers_keep_their_text(tmp_path):
    src = (STACKS / "cpu-tf215.yaml").read_text().replace('python: "3.11"', "python: 3.10")
    path = tmp_path / "s.yaml"
    path.write_text(src)
    assert load_stack(path).stack.python == "3.10"  # not the float 3.1


def test_extends_overrides_and_removes_fields():
    old = load_stack(STACKS / "tf110-cuda91.yaml").stack
    new = load_stack(STACKS / "tf114-cuda10.yaml").stack
    assert new.tensorflow.version == "1.14.0" and old.tensorflow.version == "1.10.0"
    assert new.os.distro == "ubuntu" and new.os.version == "18.04"  # distro inherited, version overridden
    assert new.python == "2.7"  # inherited unchanged
    assert "NCCL_IB_CUDA_SUPPORT" in old.env and "NCCL_IB_CUDA_SUPPORT" not in new.env  # removed with null
    assert new.env["NCCL_NET_GDR_LEVEL"] == "3"
    assert new.name == "tf114-cuda10"  # the name is not inherited
    assert new.base_image == "nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04"
    assert old.base_image == "nvidia/cuda:9.1-cudnn7-devel-ubuntu16.04"


def test_inherited_field_errors_point_into_the_parent_file():
    loaded = load_stack(ROOT / "tests/data/stacks/compat/hvd020-py27.yaml")
    (py,) = [f for f in check(loaded) if f.rule == "horovod-python"]
    assert py.location.file.endswith("stacks/tf110-cuda91.yaml")
    assert py.location.line == 13
    # and say how the leaf got there: each extends line on the way
    hops = str(py.location).split(" → ")
    assert hops[0].endswith("hvd020-py27.yaml:2:10: extends ../../../../stacks/tf114-cuda10.yaml")
    assert hops[1].endswith("tf114-cuda10.yaml:3:10: extends tf110-cuda91.yaml")
    assert hops[2].endswith("tf110-cuda91.yaml:13:1")


def test_an_error_inside_an_extends_target_names_the_child_and_its_extends_line(tmp_path):
    (tmp_path / "parent.yaml").write_text("# parent\nos: {distro: ubuntu, version: [1, 2}\n")
    (tmp_path / "child.yaml").write_text("description: x\nextends: parent.yaml\n")
    (d,) = diagnostics(tmp_path / "child.yaml")
    text = d.render()
    assert text.startswith(f"{tmp_path / 'child.yaml'}:2:10: extends parent.yaml → {tmp_path / 'parent.yaml'}:2:")
    assert d.location.file.endswith("parent.yaml") and d.location.line == 2


@pytest.mark.parametrize("target, words", [
    ("loop.yaml", "symbolic link loop"), ("fifo.yaml", "named pipe"), ("/dev/zero", "character device"),
    ('"a\\0b.yaml"', "control characters"), ('"\\ud800.yaml"', "surrogate"),
])
def test_extends_to_special_files_is_refused_at_the_extends_line(tmp_path, target, words):
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "child.yaml").write_text(f"description: x\nextends: {target}\n")
    (d,) = diagnostics(tmp_path / "child.yaml")
    assert words in d.message and d.path == "extends" and (d.location.line, d.location.column) == (2, 10)


def test_hash_ignores_comments_order_and_name_but_not_versions(tmp_path):
    src = (STACKS / "cpu-tf215.yaml").read_text()
    base = stack_hash(load_stack(STACKS / "cpu-tf215.yaml").stack)

    commented = tmp_path / "commented.yaml"
    commented.write_text("# a new comment\n" + src.replace("# a CIFAR-size", "# another comment; a CIFAR-size"))
    assert stack_hash(load_stack(commented).stack) == base

    lines = src.splitlines()
    reordered = tmp_path / "reordered.yaml"
    first = [ln for ln in lines if ln.startswith("python:")]
    reordered.write_text("\n".join(first + [ln for ln in lines if not ln.startswith("python:")]) + "\n")
    assert stack_hash(load_stack(reordered).stack) == base

    edited = tmp_path / "edited.yaml"
    edited.write_text(src.replace('version: "2.15.1"', 'version: "2.15.0"'))
    assert stack_hash(load_stack(edited).stack) != base


def test_image_hash_is_shared_by_stacks_differing_only_in_benchmark_settings():
    plain = load_stack(STACKS / "cpu-tf215.yaml")
    xla = load_stack(STACKS / "cpu-tf215-xla.yaml")
    assert plain.hash != xla.hash
    assert plain.image_hash == xla.image_hash
    assert load_stack(STACKS / "cpu-tf212.yaml").image_hash != plain.image_hash


def test_show_json_hash_is_the_same_from_another_directory_and_process(tmp_path):
    """Same hash on 'another machine': a copy of the tree, another cwd, another hash seed."""
    copy = tmp_path / "elsewhere"
    shutil.copytree(STACKS, copy / "stacks")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "LC_ALL": "C"}
    cmd = [sys.executable, "-m", "repro", "show", "stacks/tf114-cuda10.yaml", "--json"]
    here = json.loads(subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    there = json.loads(subprocess.run(cmd, cwd=copy, capture_output=True, text=True, check=True, env=env).stdout)
    assert here["hash"] == there["hash"]
    assert len(here["hash"]) == 12


def test_tf114_cuda10_hash_is_pinned():
    """A change here means every stored image tag and result key moves: make it on purpose."""
    assert load_stack(STACKS / "tf114-cuda10.yaml").hash == "158c4320f69c"


def test_stacks_table_prints_versions_as_written(capsys):
    from repro.cli import main

    assert main(["stacks", str(STACKS)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("tf215-cuda122"))
    assert " 3.10 " in line and "12.2.2" in line and "2.15.1" in line
