"""End-of-life CUDA bases, rebuilt (pure): the rendered recipe against the published facts.

The facts below are written out here, independently of docker/cuda_bases.yaml, from
/work/shared/reference/eol-cuda-images.md (NVIDIA's generated CUDA 10.0 / Ubuntu 18.04 Dockerfiles,
the April 2022 key rotation). The recipe cannot be built on these machines (NVIDIA's servers are out
of reach); what can be checked is that it says exactly this. The key check itself runs for real below
against a key made here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.image import cuda_base
from repro.image.blocks import formats
from repro.image.blocks.own import SignedAptRepository
from repro.manifest import load_stack
from tests.cluster.fixtures import skip_or_fail
from tests.unit.test_render import assert_golden

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
CUDA_REPO = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu1804/x86_64"
ML_REPO = "https://developer.download.nvidia.com/compute/machine-learning/repos/ubuntu1804/x86_64"
CUDA_KEY_FPR = "EB693B3035CD5710E231E123A4B469963BF863CC"  # 3bf863cc, key id A4B469963BF863CC
ML_KEY_FPR = "AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80"  # 7fa2af80, NVIDIA_GPGKEY_FPR of the old recipes
PACKAGES = [  # base, runtime, devel, cudnn7 of 10.0, at tf114-cuda10's pins (cuDNN 7.6.5, NCCL 2.5.6)
    "cuda-cudart-10-0=10.0.130-1", "cuda-compat-10-0", "cuda-libraries-10-0=10.0.130-1",
    "cuda-nvtx-10-0=10.0.130-1", "libnccl2=2.5.6-1+cuda10.0", "cuda-libraries-dev-10-0=10.0.130-1",
    "cuda-nvml-dev-10-0=10.0.130-1", "cuda-minimal-build-10-0=10.0.130-1",
    "cuda-command-line-tools-10-0=10.0.130-1", "libnccl-dev=2.5.6-1+cuda10.0", "libcudnn7=7.6.5.32-1+cuda10.0",
    "libcudnn7-dev=7.6.5.32-1+cuda10.0"]


def stack(name: str):
    return load_stack(STACKS / f"{name}.yaml").stack


def recipe(name: str = "tf114-cuda10") -> cuda_base.CudaBaseRecipe:
    found = cuda_base.recipe_for_stack(stack(name))
    assert found is not None
    return found


def installed(text: str) -> list[str]:
    """Every package an `apt-get install` of the rendered text installs (hpccm lists one per line)."""
    out = []
    for line in text.splitlines():
        item = line.strip().removesuffix("\\").strip().removesuffix("&&").strip()
        if line.startswith("        ") and item and " " not in item:
            out.append(item)
    return out


def test_recipe_installs_exactly_the_published_packages_at_the_stacks_pins():
    text = recipe().render()
    assert text.count("\nFROM ubuntu:18.04\n") == 1
    assert sorted(p for p in installed(text) if p not in ("ca-certificates", "curl", "gnupg2")) == sorted(PACKAGES)
    assert "apt-mark hold libnccl2 libnccl-dev libcudnn7 libcudnn7-dev" in text
    assert "ln -s cuda-10.0 /usr/local/cuda" in text


def test_recipe_applies_the_2022_key_rotation_with_pinned_fingerprints():
    text = recipe().render()
    assert f"curl -fsSL -o /var/tmp/3bf863cc.pub {CUDA_REPO}/3bf863cc.pub" in text
    assert f"curl -fsSL -o /var/tmp/7fa2af80.pub {ML_REPO}/7fa2af80.pub" in text
    assert f"!= {CUDA_KEY_FPR} ]" in text and f"!= {ML_KEY_FPR} ]" in text
    assert f'"deb [signed-by=/usr/share/keyrings/cuda-archive-3bf863cc.gpg] {CUDA_REPO} /"' in text
    assert f'"deb [signed-by=/usr/share/keyrings/nvidia-ml-7fa2af80.gpg] {ML_REPO} /"' in text
    assert "apt-key" not in text and f"{CUDA_REPO}/7fa2af80.pub" not in text  # the rotated-out key


def test_recipe_sets_the_published_environment():
    text = recipe().render()
    for line in ("CUDA_VERSION=10.0.130", "LIBRARY_PATH=/usr/local/cuda/lib64/stubs",
                 "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
                 'NVIDIA_REQUIRE_CUDA="cuda>=10.0 brand=tesla,driver>=384,driver<385 brand=tesla,driver>=410,'
                 'driver<411"', "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:$PATH",
                 "LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/nvidia/lib64"):
        assert line in text
    assert 'echo "/usr/local/nvidia/lib64" >> /etc/ld.so.conf.d/nvidia.conf' in text


def test_recipe_matches_golden_in_both_formats():
    assert_golden("tf114-cuda10.base.Dockerfile", recipe().render(formats.DOCKER))
    assert_golden("tf114-cuda10.base.def", recipe().render(formats.APPTAINER))


def test_the_lock_entry_names_the_recipe_and_what_it_replaces():
    entry = recipe().lock_entry()
    assert entry["rebuilt"] is True and entry["recipe"] == "cuda-10.0-devel-ubuntu18.04"
    assert entry["replaces"] == "nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04" and entry["tag"] == recipe().tag
    assert entry["keys"] == {"cuda": CUDA_KEY_FPR, "machine-learning": ML_KEY_FPR}
    assert entry["eol_path"].startswith("dist/end-of-life/10.0/")


def test_the_rebuilt_tag_follows_the_stacks_pins(tmp_path):
    other = tmp_path / "nccl248.yaml"
    other.write_text(f"extends: {STACKS / 'tf114-cuda10.yaml'}\nnccl: '2.4.8'\n")
    changed = cuda_base.recipe_for_stack(load_stack(other).stack)
    assert changed is not None and changed.tag != recipe().tag and "libnccl2=2.4.8-1+cuda10.0" in changed.render()
    assert recipe().tag == recipe().tag  # and is stable


def test_only_end_of_life_bases_with_a_recipe_are_rebuilt():
    assert cuda_base.recipe_for_stack(stack("tf215-cuda122")) is None  # not end of life
    assert cuda_base.recipe_for_stack(stack("cpu-tf215")) is None
    assert cuda_base.is_end_of_life(stack("tf110-cuda91")) and cuda_base.recipe_for_stack(stack("tf110-cuda91")) is None


def test_every_fact_row_names_a_source():
    facts = cuda_base.facts()
    for row in facts["recipes"]:
        assert row["source"] in facts["sources"]
    for key in facts["keys"].values():
        assert key["source"] in facts["sources"] and key["fingerprint_source"] in facts["sources"]


def test_render_base_of_a_stack_without_one_says_why(capsys):
    from repro.cli import main

    assert main(["render", str(STACKS / "tf114-cuda10.yaml"), "--base"]) == 0
    assert f"{CUDA_REPO}/3bf863cc.pub" in capsys.readouterr().out
    assert main(["render", str(STACKS / "tf110-cuda91.yaml"), "--base"]) == 2
    assert "has no rebuild recipe" in capsys.readouterr().err
    assert main(["render", str(STACKS / "tf215-cuda122.yaml"), "--base"]) == 2
    assert "not an end-of-life" in capsys.readouterr().err


# -- the key check, run for real against a key made here -------------------------------------------


@pytest.fixture(scope="module")
def test_key(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    if shutil.which("gpg") is None:
        skip_or_fail("gpg is not installed")
    home = tmp_path_factory.mktemp("gnupg")
    env = dict(os.environ, GNUPGHOME=str(home))
    try:
        subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-generate-key", "repro test <t@example.invalid>",
                        "ed25519", "sign", "never"], env=env, check=True, capture_output=True, timeout=60)
        listing = subprocess.run(["gpg", "--batch", "--with-colons", "--fingerprint"], env=env, check=True,
                                 capture_output=True, text=True, timeout=60).stdout
        fpr = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr"))
        armored = subprocess.run(["gpg", "--batch", "--armor", "--export", fpr], env=env, check=True,
                                 capture_output=True, timeout=60).stdout
        key = home / "test.pub"
        key.write_bytes(armored)
        yield key, fpr
    finally:  # gpg started an agent for this home: stop it, or it outlives the session
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, capture_output=True, timeout=60, check=False)


def _run_key_steps(tmp_path: Path, key: Path, fingerprint: str) -> subprocess.CompletedProcess[str]:
    """The repository block's commands with the download replaced by a copy and paths moved to tmp_path."""
    block = SignedAptRepository(name="test", url="https://repo.invalid/x86_64", key_url="https://repo.invalid/test.pub",
                                fingerprint=fingerprint, keyring=str(tmp_path / "keyrings" / "test.gpg"))
    with formats.settings(formats.APPTAINER, "ubuntu18"):
        text = str(block)
    steps = [line.strip() for line in text.splitlines()[1:] if line.startswith("    ")]
    script = "\n".join(steps).replace("curl -fsSL -o /var/tmp/test.pub https://repo.invalid/test.pub",
                                      f"cp {key} /var/tmp/repro-test-{os.getpid()}.pub")
    script = script.replace("/var/tmp/test.pub", f"/var/tmp/repro-test-{os.getpid()}.pub")
    script = script.replace("/etc/apt/sources.list.d/", f"{tmp_path}/")
    env = dict(os.environ, GNUPGHOME=str(tmp_path / "gnupg"))
    (tmp_path / "gnupg").mkdir(mode=0o700, exist_ok=True)
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_key_check_accepts_the_pinned_key_and_writes_a_signed_by_source(tmp_path, test_key):
    key, fpr = test_key
    proc = _run_key_steps(tmp_path, key, fpr)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "test.list").read_text() == (f"deb [signed-by={tmp_path}/keyrings/test.gpg] "
                                                    "https://repo.invalid/x86_64 /\n")


def test_key_check_refuses_a_key_with_another_fingerprint(tmp_path, test_key):
    key, _ = test_key
    proc = _run_key_steps(tmp_path, key, CUDA_KEY_FPR)
    assert proc.returncode == 1
    assert f"is not {CUDA_KEY_FPR}" in proc.stderr and not (tmp_path / "test.list").exists()


# -- the plan, the dry run and the lock ------------------------------------------------------------------


def test_plan_builds_from_the_rebuilt_base_and_the_dry_run_shows_its_recipe(tmp_path):
    from repro.image.build import BuildOptions, plan_build

    plan = plan_build(load_stack(STACKS / "tf114-cuda10.yaml"), BuildOptions(wheelhouse=tmp_path))
    assert plan.base_recipe == recipe() and plan.base_image == recipe().tag
    text = plan.describe()
    assert f"base image:  {recipe().tag}\n" in text
    assert "nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04 is end of life" in text
    assert "Base recipe (Dockerfile):\n" in text and f"{CUDA_REPO}/3bf863cc.pub" in text
    assert text.index("Base recipe (Dockerfile):") < text.index("\nDockerfile:\n")
    current = plan_build(load_stack(STACKS / "tf215-cuda122.yaml"), BuildOptions(wheelhouse=tmp_path))
    assert current.base_recipe is None and "Base recipe" not in current.describe()


def test_lock_records_whether_the_base_was_rebuilt_and_from_which_recipe(tmp_path):
    from repro.image.build import BuildOptions, plan_build
    from repro.image.lock import base_entry

    plan = plan_build(load_stack(STACKS / "tf114-cuda10.yaml"), BuildOptions(wheelhouse=tmp_path))
    entry = base_entry(plan, "sha256:base")
    assert entry["rebuilt"] is True and entry["recipe"] == "cuda-10.0-devel-ubuntu18.04"
    assert entry["recipe_key"] == recipe().key and entry["image"] == recipe().tag and entry["id"] == "sha256:base"
    cpu = plan_build(load_stack(STACKS / "cpu-tf215.yaml"), BuildOptions(wheelhouse=tmp_path))
    assert base_entry(cpu, "sha256:deb") == {"rebuilt": False, "image": "debian:12", "id": "sha256:deb"}
