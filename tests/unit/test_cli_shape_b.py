"""The CLI parses, calls one pipeline function and renders (issue 39 item 1), checked by AST for the modules of
prepare, up, render, base-image, archive, restore, validate, show, stacks and schema."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from repro.resources import tomllib  # the standard library's, or tomli on Python 3.10

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("hosts_cmds", "image_cmds", "manifest_cmds")
MAX_LINES = 25
PARSER_TYPES = ("ArgumentParser", "_SubParsersAction")


def _functions(module: str) -> list[ast.FunctionDef]:
    tree = ast.parse((ROOT / "repro" / "cli" / f"{module}.py").read_text())
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def _builds_a_parser(fn: ast.FunctionDef) -> bool:
    """register() and the functions that add arguments: declarations, not handlers."""
    return any(a.annotation is not None and ast.unparse(a.annotation).endswith(PARSER_TYPES) for a in fn.args.args)


def _pipeline_functions_called(fn: ast.FunctionDef) -> set[str]:
    """Lower-case names imported from repro.pipeline.* inside `fn` and called there (request types excluded)."""
    imported = {alias.asname or alias.name for node in ast.walk(fn) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("repro.pipeline") for alias in node.names}
    called = {node.func.id for node in ast.walk(fn) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    return {name for name in imported & called if name[0].islower()}


HANDLERS = [(m, f) for m in MODULES for f in _functions(m) if not _builds_a_parser(f)]


@pytest.mark.parametrize(("module", "fn"), HANDLERS, ids=[f"{m}.{f.name}" for m, f in HANDLERS])
def test_every_handler_and_helper_is_at_most_25_lines(module, fn):
    lines = fn.end_lineno - fn.lineno + 1
    assert lines <= MAX_LINES, f"repro/cli/{module}.py: {fn.name} is {lines} lines (at most {MAX_LINES})"


@pytest.mark.parametrize(("module", "fn"), HANDLERS, ids=[f"{m}.{f.name}" for m, f in HANDLERS])
def test_a_handler_calls_one_pipeline_function_and_a_helper_none(module, fn):
    called = _pipeline_functions_called(fn)
    if fn.name.startswith("cmd_"):
        assert len(called) == 1, f"{module}.{fn.name} calls {sorted(called) or 'no'} pipeline functions"
    else:
        assert called == set(), f"{module}.{fn.name} (a helper) calls {sorted(called)}"


def test_the_handlers_are_found():
    names = {f.name for _, f in HANDLERS}
    assert {"cmd_prepare", "cmd_up", "cmd_render", "cmd_archive", "cmd_restore", "cmd_base_image", "cmd_validate",
            "cmd_show", "cmd_stacks", "cmd_schema"} <= names


def test_the_cli_contract_lists_no_exception_for_these_modules():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"]
                   if c["name"].startswith("the CLI reaches the stages only through repro.pipeline")]
    mine = [line for line in contract.get("ignore_imports", []) if line.split(" -> ")[0].rsplit(".", 1)[-1] in MODULES]
    assert mine == []


def test_tabulate_is_imported_by_formats_only():
    importers = []
    for path in (ROOT / "repro").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "tabulate" or n.startswith("tabulate.") for n in names):
                importers.append(str(path.relative_to(ROOT)))
    assert sorted(set(importers)) == ["repro/formats.py"]
