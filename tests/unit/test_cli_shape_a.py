"""The shape of `repro bench` and `repro compare` on the command line (issue 39 item 1): each handler, with every
helper it calls, is at most 25 lines and calls one repro.pipeline function; the verdict of --until-verdict prints
through repro.formats in every --format; the pipeline's compare_report returns a typed report."""

from __future__ import annotations

import ast
import csv
import dataclasses
import io
import json
import sys
from pathlib import Path

import pytest

from repro.cli import build_parser, main
from repro.cli.bench_cmds import _verdict, verdict_lines
from repro.pipeline.bench_request import BenchReport
from repro.pipeline.compare import CompareRequest, compare_report
from repro.pipeline.verdict import PairEvidence, VerdictResult
from repro.results import sequential
from repro.results.store import Store
from tests.unit import real_steps
from tests.unit import test_extensions as ext
from tests.unit.test_compare import put, stack_ref, sweep
from tests.unit.test_extensions import toys  # noqa: F401 - a fixture used below

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("bench_cmds", "compare_cmds", "progress")
MAX_LINES = 25


def _functions(name: str) -> tuple[dict[str, ast.FunctionDef], str]:
    path = ROOT / "repro" / "cli" / f"{name}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}, str(path)


def _called(fn: ast.FunctionDef) -> set[str]:
    return {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _tree(functions: dict[str, ast.FunctionDef], root: str) -> list[ast.FunctionDef]:
    """The handler and every module function it calls, directly or through another."""
    seen, todo = [], [root]
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.append(name)
        todo += sorted(_called(functions[name]))
    return [functions[n] for n in seen]


def _pipeline_functions(fns: list[ast.FunctionDef]) -> set[str]:
    """Names imported from repro.pipeline (functions, not request or result types) that these functions call."""
    imported: set[str] = set()
    for fn in fns:
        for node in ast.walk(fn):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("repro.pipeline"):
                imported |= {a.asname or a.name for a in node.names if not a.name[:1].isupper()}
    return {name for fn in fns for name in _called(fn)} & imported


def _handlers() -> list[tuple[str, str]]:
    return [(m, n) for m in MODULES for n in _functions(m)[0] if n.startswith("cmd_")]


def test_the_handlers_are_found():
    assert ("bench_cmds", "cmd_bench") in _handlers() and ("compare_cmds", "cmd_compare") in _handlers()


@pytest.mark.parametrize(("module", "handler"), _handlers())
def test_every_handler_and_the_helpers_it_calls_are_at_most_25_lines(module, handler):
    functions, path = _functions(module)
    long = [f"{path}:{f.lineno} {f.name}: {f.end_lineno - f.lineno + 1} lines" for f in _tree(functions, handler)
            if f.end_lineno - f.lineno + 1 > MAX_LINES]
    assert not long, long


@pytest.mark.parametrize(("module", "handler"), _handlers())
def test_every_handler_calls_one_pipeline_function(module, handler):
    functions, _ = _functions(module)
    assert len(_pipeline_functions(_tree(functions, handler))) == 1, _pipeline_functions(_tree(functions, handler))


def test_the_cli_modules_import_no_stage_and_no_tabulate():
    stages = ("repro.compare", "repro.hosts", "repro.image", "repro.launch", "repro.manifest", "repro.results",
              "repro.workloads", "tabulate")
    for module in MODULES:
        _, path = _functions(module)
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        found = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        found |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not [m for m in found if m.startswith(stages)], (module, found)


# -- the verdict of --until-verdict in every format --------------------------------------------------------------

@pytest.fixture
def verdict() -> VerdictResult:
    """Three pairs of real runs, the second incomplete (a run failed), decided slower."""
    runs = real_steps.runs()
    a = [real_steps.record(runs[i], "aa-one", n=i) for i in range(3)]
    b = [real_steps.record(runs[i], "aa-two", n=i, scale=1.2) for i in range(3)]
    b[1] = b[1].model_copy(update={"status": "failed", "failure": "host h1 stopped answering"})
    pairs = tuple(PairEvidence(i + 1, "AB"[i % 2], a[i], b[i], None if i == 1 else 1 / 1.2) for i in range(3))
    decision = sequential.Decision(sequential.SLOWER, 2, 1 / 1.2, 0.8, 0.86, 0.95, 0.02)
    return VerdictResult(decision, pairs, "decided", 600.0, 420.0, ("aa-one", "aa-two"), ("sw-1", "sw-2"))


def _print_verdict(verdict: VerdictResult, fmt: str, capsys) -> tuple[int, str, str]:
    args = build_parser().parse_args(["bench", "--stack", "a.yaml", "--stack", "b.yaml", "--until-verdict",
                                      "--format", fmt])
    code = _verdict(BenchReport(("aa-one", "aa-two"), Path("/tmp/s"), verdict=verdict), args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_verdict_as_a_table_is_the_verdict_lines_then_where_the_runs_are(verdict, capsys):
    code, out, err = _print_verdict(verdict, "table", capsys)
    assert code == 1 and err == ""  # an incomplete pair: status 1
    stored = "\nall 6 runs are stored (paired): repro compare a.yaml b.yaml\n"
    assert out == "\n".join(verdict_lines(verdict)) + "\n" + stored  # as each line was printed before
    assert out.startswith("\nverdict: aa-two is 1.20x slower than aa-one")


def test_the_verdict_as_json_is_one_object_on_stdout_with_every_pair(verdict, capsys):
    code, out, err = _print_verdict(verdict, "json", capsys)
    data = json.loads(out)
    assert code == 1 and "all 6 runs are stored" in err
    assert data["format"] == "repro.verdict/1" and (data["a"], data["b"]) == ("aa-one", "aa-two")
    assert data["verdict"] == "slower" and data["stopped"] == "decided"
    assert data["ratio"] == pytest.approx(1 / 1.2) and (data["low"], data["high"]) == (0.8, 0.86)
    assert (data["pairs_run"], data["incomplete_pairs"], data["wall_s"]) == (3, 1, 600.0) and data["steps"] is None
    assert [p["ratio"] is None for p in data["pairs"]] == [False, True, False]
    assert data["pairs"][1]["b"] == {"stack": "aa-two", "id": "aa-two-1", "status": "failed",
                                     "failure": "host h1 stopped answering"}


def test_the_verdict_as_csv_is_one_row_per_pair(verdict, capsys):
    code, out, err = _print_verdict(verdict, "csv", capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 1
    assert [r["pair"] for r in rows] == ["1", "2", "3"] and [r["first"] for r in rows] == ["A", "B", "A"]
    assert rows[1]["ratio"] == "" and rows[1]["b_status"] == "failed" and float(rows[0]["ratio"]) == pytest.approx(
        1 / 1.2)
    assert "all 6 runs are stored" in err


def test_the_verdict_in_markdown_keeps_every_line(verdict, capsys):
    _, out, _ = _print_verdict(verdict, "markdown", capsys)
    assert "verdict: aa-two is 1.20x slower than aa-one" in out and out.count("pair ") >= 3


# -- compare_report: the command from paths, typed --------------------------------------------------------------

def test_compare_report_from_a_store_path_says_what_regressed(tmp_path):
    store = Store(tmp_path)
    put(store, sweep(stack_ref("base"), 100, noise=0.002) + sweep(stack_ref("worse"), 90, noise=0.002, seed=3))
    report = compare_report(CompareRequest("base", "worse", store=str(tmp_path), workers=["1,2"],
                                           fail_on_regression=True))
    assert report.regression == "2 point(s) significantly slower" and report.plot is None
    assert sorted(row["point"]["workers"] for row in report.document.data["throughput"]) == [1, 2]
    plain = compare_report(CompareRequest("base", "worse", store=str(tmp_path)))
    assert plain.regression is None and len(plain.comparison.regressions) == 3


def test_compare_report_checks_the_figure_file_before_reading_the_store(tmp_path):
    from repro.errors import InputError

    with pytest.raises(InputError, match="--plot"):
        compare_report(CompareRequest("a", "b", store=str(tmp_path / "missing"), plot=str(tmp_path / "x.gif")))
    with pytest.raises(InputError, match="no such directory"):
        compare_report(CompareRequest("a", "b", store=str(tmp_path / "missing")))


# -- a real --until-verdict through the command line, as JSON ------------------------------------------------------

class _Throughput(ext.ToyWorkload):
    """The toy workload as a throughput workload (a fixed step time each run reports): --until-verdict takes it."""

    spec = dataclasses.replace(ext.TOY, name="toyt", kind="throughput")

    def command(self, point, python, *, data=None) -> list[str]:
        step = point.extra.get("step_seconds", 0.01)
        return [sys.executable, "-c", ext.PROGRAM.replace('"toy"', '"toyt"'), str(step), str(point.batch_per_worker)]


@pytest.fixture
def toyt(toys):  # noqa: F811 - the fixture imported above
    from repro.launch.workloads import WORKLOADS

    WORKLOADS.add("toyt", _Throughput())
    yield
    WORKLOADS.remove("toyt")


def test_until_verdict_runs_real_pairs_and_prints_its_verdict_as_json(toyt, tmp_path, capsys):
    stacks = []
    for name in ("a", "b"):  # the same software under two names
        (tmp_path / f"{name}.yaml").write_text(ext.STACK.read_text() + f"env:\n  REPRO_AA_COPY: {name}\n")
        stacks += ["--stack", str(tmp_path / f"{name}.yaml")]
    code = main(["bench", *stacks, "--hosts", str(ROOT / "inventories" / "localhost"), "--workload", "toyt",
                 "--runtime", "subprocess", "--launcher", "solo", "--scheduler", "inline", "--step-seconds", "0.02",
                 "--batch-size", "4", "--until-verdict", "--max-pairs", "3", "--store", str(tmp_path / "s"),
                 "--format", "json", "-q"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 0, err
    assert (data["format"], data["a"], data["b"], data["pairs_run"]) == ("repro.verdict/1", "a", "b", 3)
    assert data["stopped"] in ("decided", "max pairs") and data["incomplete_pairs"] == 0
    assert [p["first"] for p in data["pairs"]] == ["A", "B", "A"]
    stored = {r.id for r in Store(tmp_path / "s").records()}
    assert {p[side]["id"] for p in data["pairs"] for side in ("a", "b")} == stored and len(stored) == 6
    assert "all 6 runs are stored (paired)" in err
