"""The wheel carries every package of repro and its data directories (pyproject.toml's explicit list)."""

from __future__ import annotations

from pathlib import Path

from repro.resources import tomllib  # the standard library's, or tomli on Python 3.10

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_of_repro_is_listed_for_the_wheel_and_nothing_else():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = {p for p in setuptools["packages"] if not p.startswith("repro._data.")}
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "repro").rglob("__init__.py")}
    assert listed == found, f"missing: {sorted(found - listed)}; extra: {sorted(listed - found)}"
    data = {p.removeprefix("repro._data.") for p in setuptools["packages"] if p.startswith("repro._data.")
            and p.count(".") == 2}  # the data directories themselves (their sub-directories follow them)
    assert data == {"docker", "playbooks", "stacks", "inventories"}
    assert {setuptools["package-dir"][f"repro._data.{d}"] for d in data} == data
    assert all((ROOT / d).is_dir() for d in data)


def test_every_data_directory_with_files_is_a_package_of_the_wheel():
    """A directory of docker/, playbooks/, stacks/ or inventories/ that holds files must be listed, else setuptools
    warns ('Package would be ignored') and will one day leave its files out."""
    import subprocess

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = {p.removeprefix("repro._data.").replace(".", "/") for p in setuptools["packages"]
              if p.startswith("repro._data.")}
    tracked = subprocess.run(["git", "ls-files", "docker", "playbooks", "stacks", "inventories"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    holding = {str(Path(f).parent) for f in tracked}
    assert holding <= listed, f"missing from pyproject.toml's packages: {sorted(holding - listed)}"


def test_the_license_is_an_spdx_expression():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"  # a TOML table is deprecated by setuptools (2027-02-18)
