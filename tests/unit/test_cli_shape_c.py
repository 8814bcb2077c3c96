"""The shape of the CLI modules of `results`, `import` and `capture` (issue 39 item 1), read from their source:
every handler (`cmd_*`) and every helper it calls is at most 25 lines, and a handler calls one pipeline function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "repro" / "cli"
# each module's handlers: the commands' cmd_* functions; the dispatcher (main) and the output helpers they call
MODULES = {"results_cmds.py": (), "import_cmds.py": (), "capture_cmds.py": (), "output.py": ("tree_text", "write"),
           "__init__.py": ("main",)}
MAX_LINES = 25


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _called(fn: ast.FunctionDef, known: dict[str, ast.FunctionDef]) -> set[str]:
    """The module's own functions that `fn` calls by name (or passes on, as `key=_helper`)."""
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id in known and n.id != fn.name}


def handlers_and_helpers(source: str, roots: tuple[str, ...] = ()) -> dict[str, int]:
    """Every cmd_* function (and the `roots`) and every module function it reaches, with its length in lines
    (def to last line)."""
    known = _functions(ast.parse(source))
    todo = [name for name in known if name.startswith("cmd_")] + list(roots)
    seen: dict[str, int] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        fn = known[name]
        seen[name] = fn.end_lineno - (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) + 1
        todo += _called(fn, known)
    return seen


def pipeline_calls(fn: ast.FunctionDef) -> list[str]:
    """The functions a handler imports from repro.pipeline (its vocabulary module, choices, aside)."""
    return [alias.name for n in ast.walk(fn) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith(
        "repro.pipeline") and n.module != "repro.pipeline.choices" for alias in n.names]


@pytest.mark.parametrize("module", MODULES)
def test_every_handler_and_its_helpers_are_at_most_25_lines(module):
    lengths = handlers_and_helpers((CLI / module).read_text(), MODULES[module])
    assert lengths
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


@pytest.mark.parametrize("module", [m for m in MODULES if m.endswith("_cmds.py")])
def test_every_handler_calls_one_pipeline_function(module):
    functions = _functions(ast.parse((CLI / module).read_text()))
    handlers = {name: fn for name, fn in functions.items() if name.startswith("cmd_")}
    assert handlers
    assert {name: calls for name, fn in handlers.items() if len(calls := pipeline_calls(fn)) != 1} == {}


def test_the_length_check_finds_a_long_helper_and_a_handler_calling_two_pipeline_functions():
    body = "\n".join(f"    x{i} = {i}" for i in range(30))
    source = (f"def cmd_x(args):\n    from repro.pipeline.a import f\n    from repro.pipeline.b import g\n"
              f"    return _helper(f, g)\n\n\ndef _helper(f, g):\n{body}\n    return 0\n\n\ndef _unused():\n{body}\n")
    assert handlers_and_helpers(source) == {"cmd_x": 4, "_helper": 32}
    assert pipeline_calls(_functions(ast.parse(source))["cmd_x"]) == ["f", "g"]
