"""The architecture contracts hold without exceptions (issue 39): no contract lists imports it ignores."""

from pathlib import Path

import tomllib

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_no_import_contract_lists_ignored_imports():
    contracts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    excepted = {c["name"]: c["ignore_imports"] for c in contracts if c.get("ignore_imports")}
    assert not excepted, f"contracts kept by exception: {excepted}"
