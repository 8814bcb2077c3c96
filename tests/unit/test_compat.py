"""Compatibility rules on real manifest files (tests/data/stacks/compat) and the shipped stacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.manifest import load_stack
from repro.manifest.compat import check, table
from repro.manifest.versions import in_any_line, in_release_line

ROOT = Path(__file__).resolve().parents[2]
COMPAT = ROOT / "tests" / "data" / "stacks" / "compat"


def findings(path: Path, severity: str | None = None) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in check(load_stack(path)):
        if severity is None or f.severity == severity:
            out.setdefault(f.rule, []).append(f)
    return out


@pytest.mark.parametrize(
    "file, rule, words",
    [
        ("tf114-cuda101.yaml", "tf-cuda", ["CUDA 10.0", "will not load CUDA 10.1"]),
        ("tf114-py38.yaml", "tf-python", ["Python 3.8"]),
        ("cuda110-driver440.yaml", "cuda-driver", ["450.51.06", "440.33"]),
        ("hvd020-py27.yaml", "horovod-python", ["Python 2.7"]),
        ("hvd020-py27.yaml", "horovod-tf", ["1.15.0"]),
        ("tf216-hvd0281.yaml", "horovod-keras3", ["Keras 3"]),
        ("cudnn-cuda-mismatch.yaml", "cudnn-cuda", ["9.1"]),
        ("cuda10-ubuntu20.yaml", "base-image", ["ubuntu20.04"]),
        ("cudnn-two-part-mismatch.yaml", "cudnn-cuda", ["cuDNN 7.1", "9.2, 9.1, 9.0, 8.0", "CUDA 10.0"]),
        ("hvd027-tf212.yaml", "horovod-tf", ["Horovod 0.27.0 does not work with TensorFlow 2.12", "#3864",
                                             ">= 0.28.0"]),
        ("tf212-gpu-package.yaml", "tf-package", ["tensorflow-gpu", "2.12.0 removed"]),
        ("cpu-package-on-gpu.yaml", "tf-package", ["tensorflow-cpu", "GPU"]),
    ],
)
def test_incompatible_stacks_are_errors_with_reason_and_source(file, rule, words):
    errors = findings(COMPAT / file, "error")
    assert rule in errors, f"{file}: expected an error from {rule}, got {errors}"
    finding = errors[rule][0]
    for word in words:
        assert word in finding.message
    assert finding.source.startswith(("http", "tensorflow", "third-party"))
    assert finding.location is not None and finding.location.line


def test_source_build_turns_the_cuda_mismatch_into_a_warning():
    result = findings(COMPAT / "tf114-cuda101-source.yaml")
    assert [f.severity for f in result["tf-cuda"]] == ["warning"]
    assert "source build" in result["tf-cuda"][0].message


def test_removed_nccl_variable_is_a_warning_naming_its_replacement():
    (f,) = findings(COMPAT / "nccl-env-renamed.yaml", "warning")["nccl-env"]
    assert "NCCL_NET_GDR_LEVEL" in f.message and f.path == ("env", "NCCL_IB_CUDA_SUPPORT")


def test_openmpi_313_hang_is_a_warning():
    (f,) = findings(COMPAT / "openmpi-313.yaml", "warning")["openmpi"]
    assert "hang" in f.message


def test_whitepaper_stacks_get_the_warnings_they_deserve():
    old = findings(ROOT / "stacks/tf110-cuda91.yaml")
    assert "error" not in {f.severity for fs in old.values() for f in fs}
    assert old["tf-cuda"][0].severity == "warning" and "CUDA 9.0" in old["tf-cuda"][0].message
    assert old["nccl-release"][0].severity == "warning"  # NCCL 2.2.15 has no public release
    assert old["base-image"][0].severity == "warning"  # EOL nvidia/cuda tag
    assert "nv_peer_mem" in old["gpudirect"][0].message
    new = findings(ROOT / "stacks/tf114-cuda10.yaml")
    assert "tf-cuda" not in new and "error" not in {f.severity for fs in new.values() for f in fs}


def test_current_gpu_stack_uses_nvidia_peermem_and_warns_about_horovod_ci():
    result = findings(ROOT / "stacks/tf215-cuda122.yaml")
    assert "nvidia-peermem" in result["gpudirect"][0].message
    assert result["horovod-tf"][0].severity == "warning"


def test_cpu_stack_on_the_newest_horovod_tested_tf_has_no_warnings():
    result = findings(ROOT / "stacks/cpu-tf212.yaml")
    assert not [f for fs in result.values() for f in fs if f.severity != "note"]


def test_minor_version_compatibility_downgrades_driver_error_to_warning(tmp_path):
    src = (COMPAT / "cuda110-driver440.yaml").read_text()
    src = src.replace('driver: "440.33"', 'driver: "450.80.02"').replace('cuda: "11.0.3"', 'cuda: "11.8.0"')
    path = tmp_path / "s.yaml"
    path.write_text(src)
    (f,) = findings(path)["cuda-driver"]
    assert f.severity == "warning" and "minor version compatibility" in f.message


def test_version_line_matching():
    assert in_release_line("7.4.2", "7.4") and not in_release_line("7.40", "7.4")
    assert in_release_line("11.7.1", "11.x") and not in_release_line("12.0", "11.x")
    assert in_any_line("3.5", ["2.7", "3.3-3.6"]) and not in_any_line("3.7", ["2.7", "3.3-3.6"])


def test_every_table_row_has_a_source():
    t = table()
    for name in ("tensorflow_builds", "cudnn_cuda", "nccl_cuda", "horovod", "ofed_os", "nccl_env", "openmpi",
                 "horovod_tf_fixes", "tensorflow_packages"):
        for row in t[name]:
            assert row.get("source") in t["sources"], (name, row)


def test_end_of_life_is_judged_on_the_derived_image_tag():
    """cuda "12.2" is not in the end-of-life list as written, but the tag it derives, 12.2.0, is."""
    loaded = load_stack(COMPAT / "cuda122-two-part-eol.yaml")
    assert loaded.stack.base_image == "nvidia/cuda:12.2.0-cudnn8-devel-ubuntu22.04"
    (f,) = [f for f in check(loaded) if f.rule == "base-image"]
    assert f.severity == "warning" and "end of life" in f.message and "12.2.0" in f.message
    assert f.location.line == 4  # derived from the cuda line
    current = findings(ROOT / "stacks" / "tf215-cuda122.yaml")  # 12.2.2: not end of life (unverified note)
    assert [x.severity for x in current["base-image"]] == ["note"]


def test_a_two_part_cudnn_is_matched_against_its_release_line():
    result = findings(COMPAT / "cudnn-two-part.yaml")
    assert "cudnn-cuda" not in result  # 7.1.3 was published for CUDA 9.1


def test_a_horovod_release_with_a_documented_problem_is_a_warning_with_its_source():
    (f,) = findings(COMPAT / "hvd0211-tf24.yaml")["horovod-tf"]
    assert f.severity == "warning" and "#2647" in f.message and "CHANGELOG" in f.source


def test_a_documented_break_replaces_the_untested_warning():
    result = findings(COMPAT / "hvd027-tf212.yaml")
    assert [f.severity for f in result["horovod-tf"]] == ["error"]
    assert "untested" not in result["horovod-tf"][0].message


def test_a_base_image_written_by_hand_must_hold_the_pinned_cuda():
    (mismatch,) = [f for f in findings(COMPAT / "base-image-mismatch.yaml")["base-image"] if "pins" in f.message]
    assert mismatch.severity == "warning" and "CUDA 11.8.0" in mismatch.message and "12.2.2" in mismatch.message


def test_shipped_stacks_meet_no_changelog_break():
    for path in sorted((ROOT / "stacks").glob("*.yaml")):
        assert not [f for f in check(load_stack(path)) if f.rule == "horovod-tf" and f.severity == "error"], path


def test_findings_keep_their_rule_order_within_a_severity_across_the_rule_modules():
    """A plug-in's rules first, then compat's, then compat_platform's (compat.RULE_MODULES): the order `repro validate`
    listed before the platform rules left compat.py (issue 39)."""
    tf = [(f.severity, f.rule) for f in check(load_stack(ROOT / "stacks" / "tf110-cuda91.yaml"))]
    assert tf == [("warning", "tf-cuda"), ("warning", "nccl-release"), ("warning", "base-image"),
                  ("note", "horovod-gpu-ops"), ("note", "ofed-os"), ("note", "gpudirect"), ("note", "base-image"),
                  ("note", "python2")]
    torch = [(f.severity, f.rule) for f in check(load_stack(ROOT / "stacks" / "torch24-cuda124.yaml"))]
    assert torch == [("note", "torch-cuda"), ("note", "gpudirect")]
