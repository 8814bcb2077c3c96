"""`repro capture`: a probe's software as a stack manifest that `repro validate` accepts. The GPU host is a probe
output in HOST_PROBE's format (tests/data/probes); one test probes this machine's own Python for real."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.manifest import load_stack
from repro.manifest.capture import manifest_from
from repro.manifest.software import from_host_probe
from repro.pipeline.capture import capture, probe_python

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT / "tests" / "data" / "probes"


def gpu_host(**changes):
    found = json.loads((PROBES / "gpu-torch211-cu130.json").read_text())
    found.update(changes)
    return from_host_probe(found)


def test_the_gpu_host_with_torch_211_cuda_13_and_driver_580_gives_a_valid_stack(tmp_path):
    out = tmp_path / "h100.yaml"
    result = capture(software=gpu_host(), name="h100", output=out, source="host gpu1")
    assert not result.errors, [f.render() for f in result.errors]
    stack = load_stack(out).stack
    assert (stack.framework, stack.pytorch.version, stack.pytorch.variant) == ("pytorch", "2.11.0", "cu130")
    assert (stack.cuda, stack.driver, stack.python) == ("13.0", "580.95.05", "3.12")
    assert stack.pytorch.index_url == "https://download.pytorch.org/whl/cu130"
    assert stack.horovod is None and stack.benchmark.workload == "torch_cnn"
    # no mpirun there: the image's MPI is the distribution's, and the file says so
    assert (stack.mpi.implementation, stack.mpi.version) == ("openmpi", "4.1.6")
    assert "no mpirun" in result.text and "cuDNN 9.13.0, NCCL 2.27.7" in result.text


def test_the_captured_file_passes_repro_validate(tmp_path, capsys):
    from repro.cli import main

    out = tmp_path / "gpu.yaml"
    capture(software=gpu_host(), name="gpu", output=out)
    assert main(["validate", str(out)]) == 0
    assert "gpu.yaml: ok" in capsys.readouterr().out


def test_an_image_without_a_driver_gets_the_minimum_of_its_cuda_family():
    captured = manifest_from(gpu_host(driver=None))
    assert captured.data["driver"] == "580" and any("minimum for CUDA 13.x" in n for n in captured.notes)


def test_an_os_repro_cannot_build_asks_for_one(tmp_path):
    with pytest.raises(InputError) as exc:
        manifest_from(gpu_host(os="rhel 9.4"))
    assert "rhel 9.4" in exc.value.message and "--os" in exc.value.hint
    assert manifest_from(gpu_host(os="rhel 9.4"), os="ubuntu:22.04").data["os"] == {"distro": "ubuntu",
                                                                                     "version": "22.04"}


def test_both_frameworks_need_a_choice():
    both = gpu_host(tensorflow="2.15.1")
    with pytest.raises(InputError) as exc:
        manifest_from(both)
    assert "--framework" in exc.value.hint
    assert "tensorflow" in manifest_from(both, framework="tensorflow").data
    assert "pytorch" in manifest_from(both, framework="pytorch").data


def test_no_framework_says_what_failed():
    with pytest.raises(InputError) as exc:
        manifest_from(gpu_host(torch={"error": "No module named 'torch'"}))
    assert "No module named 'torch'" in exc.value.message


def test_horovod_not_built_for_the_framework_is_left_out():
    sw = gpu_host(horovod="0.28.1", horovod_built={"mpi": True, "gloo": True, "nccl": False, "pytorch": False,
                                                   "tensorflow": True})
    captured = manifest_from(sw)
    assert "horovod" not in captured.data and any("not built for pytorch" in n for n in captured.notes)


def test_a_real_probe_of_a_python_without_a_framework_says_so():
    """HOST_PROBE for real, with the interpreter this environment was made from (no TensorFlow, no torch: cheap)."""
    python = getattr(sys, "_base_executable", sys.executable)
    sw = probe_python(python)
    if any(part.version for part in sw.frameworks.values()):
        pytest.skip(f"{python} has a framework installed")
    torch = sw.framework("pytorch")
    assert sw.python and sw.python.count(".") == 2 and torch.version is None and torch.error
    with pytest.raises(InputError) as exc:
        manifest_from(sw)
    assert "found no framework (tensorflow or pytorch)" in exc.value.message
