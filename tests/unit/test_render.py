"""Rendering of stack images (pure): golden Dockerfiles and Apptainer definitions (HPC Container Maker's
blocks and repro's own), building-block details, the image tag, and the verifier's parsing and comparison.

The golden files in tests/data/golden/ are compared whole. After an intended change of a block,
regenerate them and review the diff:

    REPRO_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_render.py
"""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest

from repro.errors import VerificationError
from repro.image import render, verify
from repro.image.build import BuildOptions, plan_build
from repro.image.render import RenderOptions, render_apptainer, render_dockerfile
from repro.manifest import load_stack
from repro.manifest.software import same
from tests import golden

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
GOLDEN = ROOT / "tests" / "data" / "golden"
WHEEL = "horovod-0.28.1-cp311-cp311-linux_x86_64.whl"


def stack(name: str):
    return load_stack(STACKS / f"{name}.yaml").stack


def derived(tmp_path: Path, text: str, name: str = "derived"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return load_stack(path)


def apt_listed(text: str, package: str) -> bool:
    """Whether an apt-get install in the rendered text lists `package` (one per line, as hpccm writes them)."""
    return re.search(rf"^ +{re.escape(package)}( &&)? \\$", text, re.MULTILINE) is not None


assert_golden = partial(golden.assert_golden, GOLDEN)


# -- golden files --------------------------------------------------------------------------------------

GOLDEN_STACKS = ["tf110-cuda91", "tf114-cuda10", "tf215-cuda122", "cpu-tf215", "cpu-tf212"]


@pytest.mark.parametrize("name", GOLDEN_STACKS)
def test_dockerfile_matches_golden(name):
    assert_golden(f"{name}.Dockerfile", render_dockerfile(stack(name)))


@pytest.mark.parametrize("name", GOLDEN_STACKS)
def test_apptainer_definition_matches_golden(name):
    assert_golden(f"{name}.def", render_apptainer(stack(name)))


def test_rendering_is_deterministic():
    assert render_dockerfile(stack("tf114-cuda10")) == render_dockerfile(stack("tf114-cuda10"))


def test_docker_and_apptainer_come_from_the_same_blocks():
    docker, apptainer = render_dockerfile(stack("tf114-cuda10")), render_apptainer(stack("tf114-cuda10"))
    names = docker.splitlines()[1]
    assert names.startswith("# Building blocks") and names in apptainer
    assert "\nFROM " in docker and "\nFrom: " in apptainer and "\nBootStrap: docker" in apptainer
    for block_comment in ("# OpenMPI version 4.0.0", "# Horovod 0.19.0, built from source", "# Mellanox OFED version"):
        assert block_comment in docker and block_comment in apptainer


# -- GPU stacks ------------------------------------------------------------------------------------------


def test_tf114_pins_nccl_package_for_cuda_10_0():
    text = render_dockerfile(stack("tf114-cuda10"))
    assert "libnccl2=2.5.6-1+cuda10.0 libnccl-dev=2.5.6-1+cuda10.0" in text


def test_tf114_builds_open_mpi_4_0_0_cuda_aware_with_verbs_through_hpccm():
    text = render_dockerfile(stack("tf114-cuda10"))
    assert "# OpenMPI version 4.0.0\n" in text  # hpccm's openmpi block
    assert "https://www.open-mpi.org/software/ompi/v4.0/downloads/openmpi-4.0.0.tar.bz2" in text
    assert "./configure --prefix=/usr/local --disable-getpwuid --enable-orterun-prefix-by-default --with-cuda " \
           "--with-verbs" in text
    assert "openmpi-bin" not in text


def test_horovod_0_19_uses_gpu_allreduce_not_gpu_operations():
    text = render_dockerfile(stack("tf114-cuda10"))
    assert "HOROVOD_GPU_ALLREDUCE=NCCL" in text
    assert "HOROVOD_GPU_OPERATIONS" not in text
    assert "HOROVOD_WITHOUT_GLOO=1" in text and "HOROVOD_WITH_MPI=1" in text
    assert "install --no-build-isolation horovod==0.19.0" in text


def test_horovod_0_28_uses_gpu_operations():
    text = render_dockerfile(stack("tf215-cuda122"))
    assert "HOROVOD_GPU_OPERATIONS=NCCL" in text and "HOROVOD_GPU_ALLREDUCE" not in text
    assert "HOROVOD_WITH_GLOO=1" in text


def test_horovod_0_15_has_neither_gloo_variables_nor_horovodrun():
    text = render_dockerfile(stack("tf110-cuda91"))
    assert "HOROVOD_GPU_ALLREDUCE=NCCL" in text
    assert "GLOO" not in text and "HOROVOD_WITH_MPI" not in text
    assert "horovodrun" not in text


def test_sshd_listens_on_50000_by_default():
    text = render_dockerfile(stack("tf114-cuda10"))
    assert "echo 'Port 50000' > /etc/ssh/sshd_config" in text and "EXPOSE 50000" in text
    assert "'PasswordAuthentication no'" in text and "'PermitRootLogin prohibit-password'" in text
    assert "ssh-keygen -A" in text


def test_sshd_port_follows_the_stack(tmp_path):
    loaded = derived(tmp_path, f"extends: {STACKS / 'cpu-tf215.yaml'}\ncontainer: {{ssh_port: 2222}}\n")
    text = render_dockerfile(loaded.stack)
    assert "'Port 2222'" in text and "EXPOSE 2222" in text and "50000" not in text


def test_gpu_image_from_current_cuda_base_with_hpccm_ofed_at_pinned_version():
    text = render_dockerfile(stack("tf215-cuda122"))
    assert "FROM nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04\n" in text
    assert "# Mellanox OFED version 5.8-3.0.7.0\n" in text  # hpccm's mlnx_ofed block
    assert "https://linux.mellanox.com/public/repo/mlnx_ofed/5.8-3.0.7.0/ubuntu22.04/mellanox_mlnx_ofed.list" in text


def test_end_of_life_base_is_replaced_by_the_rebuilt_one():
    from repro.image.cuda_base import recipe_for_stack

    recipe = recipe_for_stack(stack("tf114-cuda10"))
    text = render_dockerfile(stack("tf114-cuda10"))
    assert recipe is not None and recipe.replaces == "nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04"
    assert f"\nFROM {recipe.tag}\n" in text and "nvidia/cuda:" not in text
    assert f"\nBootStrap: docker-daemon\nFrom: {recipe.tag}\n" in render_apptainer(stack("tf114-cuda10"))
    assert recipe.tag.startswith("repro/cuda-base:10.0-cudnn7-devel-ubuntu18.04-")


def test_ofed_installer_tarball_is_a_build_option():
    s = stack("tf114-cuda10")
    mirrored = render_dockerfile(s, RenderOptions(ofed_mirror="http://mirror.site/ofed"))
    assert ("wget -q -O /opt/mofed/mofed.tgz http://mirror.site/ofed/MLNX_OFED-4.7-3.2.9.0/"
            "MLNX_OFED_LINUX-4.7-3.2.9.0-ubuntu18.04-x86_64.tgz") in mirrored
    assert "--user-space-only --without-fw-update" in mirrored and "linux.mellanox.com" not in mirrored
    local = render_dockerfile(s, RenderOptions(ofed_tarball="mofed.tgz"))
    assert "ADD mofed.tgz /opt/mofed/\n" in local and "mofed.tgz http" not in local


def test_cudnn_installed_only_when_the_pin_differs_from_the_base_image():
    assert "libcudnn7=7.1.3.16-1+cuda9.1" in render_dockerfile(stack("tf110-cuda91"))  # base ships 7.1.2.21
    assert "libcudnn" not in render_dockerfile(stack("tf114-cuda10"))  # base ships 7.6.5.32
    assert "libcudnn" not in render_dockerfile(stack("tf215-cuda122"))  # base ships 8.9.6.50


def test_source_built_tensorflow_comes_from_the_wheelhouse_without_index():
    text = render_dockerfile(stack("tf110-cuda91"))
    assert "COPY wheelhouse/ /opt/repro/wheelhouse/" in text
    assert "pip --no-cache-dir install tensorflow-gpu==1.10.0 --no-index --find-links /opt/repro/wheelhouse" in text


def test_tf1_stacks_get_tf_cnn_benchmarks_of_their_branch():
    assert "cnn_tf_v1.14_compatible" in render_dockerfile(stack("tf114-cuda10"))
    assert render.TF_BENCHMARKS["1.14"][1] in render_dockerfile(stack("tf114-cuda10"))
    assert "cnn_tf_v1.10_compatible" in render_dockerfile(stack("tf110-cuda91"))
    assert "tf_cnn_benchmarks" not in render_dockerfile(stack("tf215-cuda122"))


def test_python2_stack_has_no_venv_and_old_pip():
    text = render_dockerfile(stack("tf114-cuda10"))
    assert "venv" not in text and "pip==20.3.4" in text
    assert "scikit-learn" not in text  # repro's own workloads need Python 3.8+


# -- CPU stacks -------------------------------------------------------------------------------------------


def test_cpu_image_has_no_cuda():
    text = render_dockerfile(stack("cpu-tf215")).lower()
    for word in ("cuda", "nccl", "nvidia", "cudnn", "mlnx", "ofed"):
        assert word not in text


def test_cpu_image_takes_distro_open_mpi_python_venv_tensorflow_cpu():
    text = render_dockerfile(stack("cpu-tf215"))
    assert text.count("FROM ") == 1 and "FROM debian:12\n" in text
    assert apt_listed(text, "openmpi-bin") and "openmpi-4.1.4.tar" not in text
    assert "python3 -m venv /opt/repro/venv" in text and "PATH=/opt/repro/venv/bin:$PATH" in text
    assert "python -m pip --no-cache-dir install tensorflow-cpu==2.15.1\n" in text
    assert "install scikit-learn==1.3.2\n" in text
    assert "HOROVOD_WITH_GLOO=1" in text and "HOROVOD_WITH_MPI=1" in text and "HOROVOD_WITHOUT_PYTORCH=1" in text


def test_cpu_horovod_source_build_brings_compilers_and_headers():
    text = render_dockerfile(stack("cpu-tf215"))
    for package in ("cmake", "g++", "libopenmpi-dev", "python3-dev"):
        assert apt_listed(text, package)


def test_cpu_horovod_from_a_matching_wheel_needs_no_compiler():
    text = render_dockerfile(stack("cpu-tf215"), RenderOptions(wheels=(WHEEL,)))
    assert "COPY wheelhouse/ /opt/repro/wheelhouse/" in text and "--find-links /opt/repro/wheelhouse" in text
    for package in ("cmake", "g++", "libopenmpi-dev", "python3-dev"):
        assert not apt_listed(text, package)


def test_wheel_for_another_python_does_not_count():
    assert not render.wheel_matches(WHEEL, "horovod", "0.28.1", "3.10")
    assert not render.wheel_matches(WHEEL, "horovod", "0.28.0", "3.11")
    assert render.wheel_matches(WHEEL, "horovod", "0.28.1", "3.11")


def test_workloads_copied_last_and_layers_ordered_slow_first():
    text = render_dockerfile(stack("cpu-tf215"))
    order = ["apt-get install", "python3 -m venv", "tensorflow-cpu==", "horovod==", "scikit-learn", "ssh-keygen",
             "COPY repro/ /opt/repro/repro/"]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert text.rstrip().endswith("COPY repro/ /opt/repro/repro/")
    assert "PYTHONPATH=/opt/repro" in text


def test_site_options_are_build_time_args():
    text = render_dockerfile(stack("cpu-tf215"), RenderOptions(ca_bundle=True, pip_index="https://pypi.site/simple",
                                                               extra_index="https://extra.site/simple"))
    assert "COPY ca-bundle.crt /etc/repro/ca-bundle.crt" in text
    assert "ARG PIP_CERT=/etc/repro/ca-bundle.crt" in text and "ARG REQUESTS_CA_BUNDLE=" in text
    assert "ARG PIP_INDEX_URL=https://pypi.site/simple" in text
    assert "ARG PIP_EXTRA_INDEX_URL=https://extra.site/simple" in text
    assert "ENV PIP_CERT" not in text


def test_apptainer_definition_carries_the_same_blocks():
    text = render_apptainer(stack("cpu-tf215"))
    assert text.count("BootStrap: docker\nFrom: debian:12\n") == 1
    assert "%files\n    repro /opt/repro/repro\n" in text
    assert "    export PATH=/opt/repro/venv/bin:$PATH\n" in text
    assert "%post\n    cd /\n    python -m pip --no-cache-dir install tensorflow-cpu==2.15.1\n" in text
    assert "RUN " not in text and "ARG " not in text and "COPY " not in text
    assert "%startscript\n    exec /usr/sbin/sshd -D -e\n" in text


# -- the image tag -----------------------------------------------------------------------------------------


def _tag(path, tmp_path, **kw):
    options = BuildOptions(wheelhouse=tmp_path / "no-wheelhouse", **kw)
    return plan_build(load_stack(path), options).tag


def test_tag_is_stable_for_unchanged_inputs(tmp_path):
    assert _tag(STACKS / "cpu-tf215.yaml", tmp_path) == _tag(STACKS / "cpu-tf215.yaml", tmp_path)
    assert _tag(STACKS / "cpu-tf215.yaml", tmp_path).startswith("repro/stack:")


def test_tag_ignores_benchmark_only_changes(tmp_path):
    # cpu-tf215-xla changes only a benchmark default: same image hash, same Dockerfile, same image
    assert _tag(STACKS / "cpu-tf215-xla.yaml", tmp_path) == _tag(STACKS / "cpu-tf215.yaml", tmp_path)


def test_tag_changes_with_the_stack(tmp_path):
    path = tmp_path / "nogloo.yaml"
    path.write_text(f"extends: {STACKS / 'cpu-tf215.yaml'}\nhorovod: {{with_gloo: false}}\n")
    assert _tag(path, tmp_path) != _tag(STACKS / "cpu-tf215.yaml", tmp_path)


def test_tag_changes_with_the_rendered_recipe(tmp_path):
    base = _tag(STACKS / "cpu-tf215.yaml", tmp_path)
    assert _tag(STACKS / "cpu-tf215.yaml", tmp_path, pip_index="https://pypi.site/simple") != base


def test_tag_changes_with_context_files_and_build_args(tmp_path):
    base = _tag(STACKS / "cpu-tf215.yaml", tmp_path)
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    assert _tag(STACKS / "cpu-tf215.yaml", tmp_path, ca_bundle=ca) != base
    assert _tag(STACKS / "cpu-tf215.yaml", tmp_path, build_args=(("OPENMPI_URL", "http://m/x"),)) != base


def test_plan_takes_the_matching_wheelhouse_subdirectory(tmp_path):
    sub = tmp_path / "wh" / "tf2.15.1-py311"
    sub.mkdir(parents=True)
    (sub / WHEEL).write_bytes(b"not really a wheel")
    (tmp_path / "wh" / "unrelated.whl").write_bytes(b"x")
    plan = plan_build(load_stack(STACKS / "cpu-tf215.yaml"), BuildOptions(wheelhouse=tmp_path / "wh"))
    names = [f.name for f in plan.files]
    assert f"wheelhouse/{WHEEL}" in names and "wheelhouse/unrelated.whl" not in names
    assert "repro/__init__.py" in names and "repro/workloads/cnn.py" in names
    assert not any("__pycache__" in n for n in names)


def test_source_tensorflow_without_its_wheel_is_an_error_before_building(tmp_path):
    from repro.errors import ImageError

    with pytest.raises(ImageError, match=r"tensorflow-gpu 1\.10\.0"):
        plan_build(load_stack(STACKS / "tf110-cuda91.yaml"), BuildOptions(wheelhouse=tmp_path))


# -- the verifier (pure parts) ------------------------------------------------------------------------------

CHECK_BUILD = """Horovod v0.28.1:

Available Frameworks:
    [X] TensorFlow
    [ ] PyTorch
    [ ] MXNet

Available Controllers:
    [X] MPI
    [X] Gloo

Available Tensor Operations:
    [ ] NCCL
    [ ] DDL
    [ ] CCL
    [X] MPI
    [X] Gloo
"""


def _probe(**over):
    found = {
        "os_release": {"ID": "debian", "VERSION_ID": "12"}, "python": "3.11.2",
        "tensorflow": {"version": "2.15.1"}, "horovod": {"version": "0.28.1"},
        "horovod_check_build": {"rc": 0, "out": CHECK_BUILD},
        "mpirun_version": {"rc": 0, "out": "mpirun (Open MPI) 4.1.4\n\nReport bugs to ..."},
        "pip_freeze": {"rc": 0, "out": "horovod==0.28.1\ntensorflow-cpu==2.15.1\n"},
        "sshd_config": "Port 50000\nUsePAM yes\n", "ssh_host_keys": ["ssh-ed25519 AAAA root@x"],
    }
    found.update(over)
    return found


def _printed(found: dict) -> verify.ImageProbe:
    """The probe as repro reads it: its REPRO_PROBE line, parsed once."""
    return verify.parse_probe("noise\nREPRO_PROBE " + json.dumps(found) + "\n")


def test_the_probe_line_is_parsed_once_into_a_typed_probe():
    found = _printed(_probe(libraries=["libmpi.so.40"], env={"PATH": "/usr/bin", "PYTHONPATH": None}))
    assert found.versions["tensorflow"] == "2.15.1" and found.versions["mpi"] == "openmpi 4.1.4"
    assert found.horovod_build["gloo"] is True and found.software.sshd_port == 50000
    assert found.pip_freeze == ("horovod==0.28.1", "tensorflow-cpu==2.15.1") and found.libraries == ("libmpi.so.40",)
    assert found.environment == {"PATH": "/usr/bin", "PYTHONPATH": None}
    with pytest.raises(VerificationError, match="unreadable result"):
        verify.parse_probe("REPRO_PROBE {not json")


def test_check_build_parsed_by_section():
    table = verify.parse_check_build(CHECK_BUILD)
    assert table["controllers"] == {"mpi": True, "gloo": True}
    assert table["tensor operations"]["nccl"] is False
    assert verify.horovod_flags(_probe()) == {"tensorflow": True, "pytorch": False, "mxnet": False, "mpi": True,
                                              "gloo": True, "nccl": False}


def test_matching_probe_has_no_mismatch():
    assert verify.mismatches(stack("cpu-tf215"), _printed(_probe())) == []


def test_gloo_built_in_against_a_pin_of_false_names_the_component(tmp_path):
    loaded = derived(tmp_path, f"extends: {STACKS / 'cpu-tf215.yaml'}\nhorovod: {{with_gloo: false}}\n")
    assert verify.mismatches(loaded.stack, _printed(_probe())) == [
        "horovod with_gloo: pinned false, found Gloo built in"]


def test_version_and_package_mismatches_say_pinned_and_found():
    found = _probe(tensorflow={"version": "2.12.1"}, mpirun_version={"rc": 0, "out": "mpirun (Open MPI) 4.1.2"},
                   pip_freeze={"rc": 0, "out": "tensorflow==2.12.1\n"})
    bad = verify.mismatches(stack("cpu-tf215"), _printed(found))
    assert "tensorflow: pinned 2.15.1, found 2.12.1" in bad
    assert "tensorflow package: pinned tensorflow-cpu, found tensorflow==2.12.1" in bad
    assert "mpi: pinned openmpi 4.1.4, found openmpi 4.1.2" in bad


def test_gpu_versions_compare_by_release_line():
    assert same("2.5.6", "2.5.6-1+cuda10.0") and same("7.6.5", "7.6.5.32-1+cuda10.0")
    assert same("4.3-1", "4.3-1.0.1.0") and same("10.0", "10.0.130")
    assert not same("2.5.6", "2.4.8-1+cuda10.0") and not same("7.6.5", None)


# -- the build stream (pure) ----------------------------------------------------------------------------------


def _transcript(chunks):
    import io

    from repro.image.build import _Transcript

    lines: list[str] = []
    t = _Transcript(io.StringIO(), lines.append)
    errors = [e for e in (t.feed(c) for c in chunks) if e]
    return t, lines, errors


def _plan(tmp_path):
    return plan_build(load_stack(STACKS / "cpu-tf215.yaml"), BuildOptions(wheelhouse=tmp_path))


def test_failed_step_is_named_with_the_end_of_its_output(tmp_path):
    from repro.image.build import _failure

    t, lines, errors = _transcript([
        {"stream": "Step 5/22 : ENV LANG=C.UTF-8\n"}, {"stream": " ---> Using cache\n"},
        {"stream": "Step 6/22 : RUN apt-get update && apt-get install -y nope\n"},
        {"stream": " ---> Running in 0123abcd\n"}, {"stream": "E: Unable to locate package nope\n"},
        {"errorDetail": {"code": 100, "message": "The command '/bin/bash -o pipefail -c apt-get ...' returned a "
                         "non-zero code: 100"}, "error": "The command ... returned a non-zero code: 100"},
    ])
    assert len(errors) == 1 and "Step 6/22 : RUN apt-get update && apt-get install -y nope" in lines
    plan = _plan(tmp_path)
    error = _failure(f"{plan.tag} for stack {plan.stack}", t, errors[0], tmp_path / "build.log")
    assert "failed at Step 6/22 : RUN apt-get update" in error.message
    assert "E: Unable to locate package nope" in error.message and "Using cache" not in error.message
    assert str(tmp_path / "build.log") in error.message


def test_full_disk_is_reported_as_such(tmp_path):
    from repro.image.build import _failure

    t, _, errors = _transcript([
        {"stream": "Step 15/22 : RUN python -m pip install \"tensorflow-cpu==2.15.1\"\n"},
        {"stream": "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n"},
        {"error": "The command returned a non-zero code: 1"},
    ])
    plan = _plan(tmp_path)
    error = _failure(f"{plan.tag} for stack {plan.stack}", t, errors[0], None)
    assert "ran out of disk space (no space left on device)" in error.message
    assert "Step 15/22" in error.message and "docker system df" in error.hint
