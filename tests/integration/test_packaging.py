"""repro installed like any tool: the wheel, into a fresh virtual environment without extras, used from an empty
directory (no checkout anywhere on its path)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "data" / "logs" / "tf_cnn_benchmarks_1gpu.log"
pytestmark = pytest.mark.timeout(900)


def run(argv: list[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, cwd=cwd, env=env, text=True, capture_output=True, timeout=600, check=False)
    assert not check or proc.returncode == 0, f"{argv}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


BUILD_WARNING = re.compile(r"BuildBackendWarning|SetuptoolsDeprecationWarning|SetuptoolsWarning|would be ignored|"
                           r"is absent from the `packages`|deprecated")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """The wheel built from this checkout, and what the build printed (verbose: every warning setuptools gives)."""
    base = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--no-build-isolation", "-v",
                           "-w", str(base / "dist")], check=True, capture_output=True, text=True, timeout=600)
    (wheel,) = (base / "dist").glob("repro-*.whl")
    return wheel, proc.stdout + proc.stderr


def test_building_the_wheel_gives_no_packaging_warnings(built):
    """The quick start installs repro: its own packaging (license, data packages) warns about nothing."""
    _, output = built
    assert not [line for line in output.splitlines() if BUILD_WARNING.search(line)], output[-3000:]


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A venv holding the wheel built from this checkout and only repro's required dependencies."""
    base = tmp_path_factory.mktemp("venv")
    wheel, _ = built
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "REPRO_STORE")}
    env["PATH"] = f"{base / 'venv' / 'bin'}:{env.get('PATH', '')}"
    subprocess.run([str(base / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], env=env,
                   check=True, capture_output=True, timeout=900)
    return base / "venv" / "bin" / "repro", env


def test_the_wheel_works_from_an_empty_directory_without_extras(installed, tmp_path):
    repro, env = installed
    work = tmp_path / "empty"
    work.mkdir()
    out = run([str(repro), "init"], work, env).stdout
    shipped = len(list((ROOT / "stacks").glob("*.yaml")))  # every stack of the checkout is in the wheel
    assert f"{shipped} example stacks" in out and (work / "stacks" / "cpu-tf215.yaml").is_file()
    assert "ok (cpu-tf215" in run([str(repro), "validate", "stacks/"], work, env).stdout
    assert run([str(repro), "render", "cpu-tf215"], work, env).stdout.startswith("# Rendered by repro")
    dry = run([str(repro), "prepare", "--hosts", "inventories/localhost", "--dry-run"], work, env).stdout
    playbook = next(w for w in dry.split() if w.endswith("site.yml"))
    assert Path(playbook).is_file() and str(ROOT) not in playbook  # shipped inside the installed package
    store = work / "results"
    for stack in ("old", "new"):
        run([str(repro), "import", str(LOG), "--stack", stack, "--store", str(store)], work, env)
    compared = run([str(repro), "compare", "old", "new", "--store", str(store)], work, env).stdout
    assert "1.00x" in compared or "no significant difference" in compared or "not enough runs" in compared


@pytest.mark.parametrize(("argv", "extra"), [
    (["up", "cpu-tf215"], "images"),
    (["prepare", "--hosts", "inventories/localhost"], "hosts"),
    (["results", "scaling", "--plot", "scaling.png"], "plot"),
    (["compare", "old", "new", "--plot", "compare.png"], "plot"),
])
def test_a_command_that_needs_a_missing_extra_names_it(installed, tmp_path, argv, extra):
    repro, env = installed
    run([str(repro), "init", str(tmp_path)], tmp_path, env)
    proc = run([str(repro), *argv], tmp_path, env, check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"pip install 'repro[{extra}]'" in proc.stderr and "Traceback" not in proc.stderr
