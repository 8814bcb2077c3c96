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
    data = {p.removeprefix("repro._data.") for p in setuptools["packages"] if p.startswith("repro._data.")}
    assert data == {"docker", "playbooks", "stacks", "inventories"}
    assert {setuptools["package-dir"][f"repro._data.{d}"] for d in data} == data
    assert all((ROOT / d).is_dir() for d in data)
