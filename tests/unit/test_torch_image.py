"""PyTorch stacks' images (pure): golden recipes of the GPU stacks, the CPU wheel through the wheelhouse, Horovod
built for PyTorch, and the probe's torch part as the lock keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import ImageError
from repro.image import verify
from repro.image.blocks import formats
from repro.image.build import BuildOptions, pip_find_links, plan_build, torch_wheels
from repro.image.render import RenderOptions, render, render_apptainer, render_dockerfile
from repro.manifest import load_stack
from tests.unit.test_render import assert_golden

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
CPU = 'os: {distro: debian, version: "12"}\nmpi: {version: "4.1.4"}\npython: "3.11"\n'


def stack(name: str):
    return load_stack(STACKS / f"{name}.yaml").stack


@pytest.mark.parametrize("name", ["torch24-cuda124", "torch211-cuda130"])
def test_gpu_torch_recipes_match_golden(name):
    assert_golden(f"{name}.Dockerfile", render_dockerfile(stack(name)))
    assert_golden(f"{name}.def", render_apptainer(stack(name)))


def test_a_gpu_torch_image_takes_the_variant_from_its_index_and_no_system_nccl():
    text = render_dockerfile(stack("torch24-cuda124"))
    assert "FROM nvidia/cuda:12.4.1-devel-ubuntu22.04" in text
    assert "torch==2.4.1+cu124 --extra-index-url https://download.pytorch.org/whl/cu124" in text
    assert "libnccl2" not in text and "libcudnn" not in text and "horovod" not in text.lower()


def test_the_cpu_wheel_comes_from_the_wheelhouse_in_both_formats():
    o = RenderOptions(wheels=(WHEEL,))
    docker = render_dockerfile(stack("cpu-torch213"), o)
    assert "COPY wheelhouse/ /opt/repro/wheelhouse/" in docker
    assert "install torch==2.13.0+cpu --find-links /opt/repro/wheelhouse" in docker
    apptainer = render(stack("cpu-torch213"), o, formats.APPTAINER)
    assert "wheelhouse /opt/repro/wheelhouse" in apptainer and "torch==2.13.0+cpu" in apptainer


def test_horovod_on_a_torch_stack_is_built_for_pytorch_from_its_commit(tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    path = tmp_path / "h.yaml"
    path.write_text(CPU + f'pytorch: {{version: "2.13.0"}}\nhorovod: {{version: "0.28.1", commit: "{commit}"}}\n')
    text = render_dockerfile(load_stack(path).stack, RenderOptions(wheels=(WHEEL,)))
    assert "HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITH_PYTORCH=1" in text
    assert f"git -C /var/tmp/horovod checkout {commit}" in text and "git \\" in text.replace("  ", " ")
    assert text.count("COPY wheelhouse/") == 1  # the torch block copied it; Horovod finds it there


def test_debian_torch_is_the_distributions_package_seen_by_the_venv(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(CPU + 'pytorch: {version: "1.13.1", source: debian}\n')
    text = render_dockerfile(load_stack(path).stack)
    assert "python3-torch" in text and "python3 -m venv --system-site-packages /opt/repro/venv" in text


def test_tensorflow_render_keeps_its_venv_line():
    assert "python3 -m venv /opt/repro/venv" in render_dockerfile(stack("cpu-tf215"))


def isolated_pip(monkeypatch, tmp_path: Path, links: str = "") -> None:
    """pip settings of an empty home: only $PIP_FIND_LINKS (and /etc) count."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.delenv("PIP_CONFIG_FILE", raising=False)
    monkeypatch.setenv("PIP_FIND_LINKS", links)


def test_the_torch_wheel_is_found_in_pips_find_links(monkeypatch, tmp_path):
    links = tmp_path / "wheels"
    links.mkdir()
    (links / WHEEL).write_bytes(b"not really a wheel")
    (links / "torch-2.12.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    isolated_pip(monkeypatch, tmp_path, str(links))
    assert links in pip_find_links()
    assert [p.name for p in torch_wheels(stack("cpu-torch213"), None)] == [WHEEL]


def test_the_torch_wheel_travels_in_the_build_context(monkeypatch, tmp_path):
    links = tmp_path / "wheels"
    links.mkdir()
    (links / WHEEL).write_bytes(b"not really a wheel")
    isolated_pip(monkeypatch, tmp_path, str(links))
    plan = plan_build(load_stack(STACKS / "cpu-torch213.yaml"), BuildOptions(wheelhouse=tmp_path / "empty"))
    assert f"wheelhouse/{WHEEL}" in {f.name for f in plan.files}
    assert "--find-links /opt/repro/wheelhouse" in plan.dockerfile


def test_a_cpu_torch_stack_without_its_wheel_is_refused_with_the_way_to_get_it(monkeypatch, tmp_path):
    isolated_pip(monkeypatch, tmp_path)
    with pytest.raises(ImageError) as exc:
        plan_build(load_stack(STACKS / "cpu-torch213.yaml"), BuildOptions(wheelhouse=tmp_path / "empty"))
    assert "2.13.0+cpu" in exc.value.message and "download.pytorch.org/whl/cpu" in exc.value.hint


def torch_probe(**torch) -> dict:
    return {"os_release": {"ID": "debian", "VERSION_ID": "12"}, "python": "3.11.2", "torch": torch,
            "tensorflow": {"error": "ModuleNotFoundError"}, "horovod": {"error": "ModuleNotFoundError"},
            "mpirun_version": {"rc": 0, "out": "mpirun (Open MPI) 4.1.4\n"},
            "pip_freeze": {"rc": 0, "out": "torch==2.13.0+cpu\n"}, "sshd_config": "Port 50000\n",
            "ssh_host_keys": ["ssh-ed25519 AAAA"]}


def test_the_image_probe_of_a_torch_image_verifies_and_locks_its_versions():
    found = torch_probe(version="2.13.0+cpu", cuda=None, cudnn=None, backends={"gloo": True, "mpi": False,
                                                                              "nccl": False})
    assert verify.mismatches(stack("cpu-torch213"), verify.ImageProbe.from_json(found)) == []
    versions = verify.found_versions(found)
    assert versions["torch"] == "2.13.0+cpu" and versions["torch_cuda"] is None
    assert verify.software(found).framework("pytorch").build["backends"] == {"gloo": True, "mpi": False, "nccl": False}
    assert versions["torch_backends"] == "gloo"


def test_a_torch_image_with_the_cuda_wheel_fails_verification():
    found = torch_probe(version="2.13.0", cuda="13.0", cudnn=92000, nccl=[2, 29, 7], backends={})
    bad = verify.mismatches(stack("cpu-torch213"), verify.ImageProbe.from_json(found))
    assert any("torch variant: pinned cpu" in line for line in bad)


def test_a_tensorflow_image_lock_keeps_its_keys():
    found = torch_probe()
    found["torch"] = {"error": "ModuleNotFoundError"}
    assert not any(k.startswith("torch") for k in verify.found_versions(found))
