"""The options the README promises on every command: -q/-v, --format where results print, -V, a subcommand's own
usage for an unknown option, did-you-mean for stack names, inventories by name ($REPRO_INVENTORIES too)."""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

import pytest

from repro import __version__
from repro.cli import build_parser, main
from repro.formats import FORMATS
from repro.results.record import RunRecord
from repro.results.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name), sub
                yield from _commands(sub, (*prefix, name))


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for a in parser._actions for flag in a.option_strings}


def test_every_command_takes_quiet_and_verbose():
    for path, sub in _commands(build_parser()):
        assert {"-q", "-v"} <= _flags(sub), path


RESULT_COMMANDS = [("stacks",), ("validate",), ("show",), ("results",), ("results", "show"), ("results", "scaling"),
                   ("results", "rm"), ("results", "prune"), ("compare",), ("bench",)]


@pytest.mark.parametrize("path", RESULT_COMMANDS, ids=" ".join)
def test_every_command_that_prints_results_takes_format(path):
    commands = dict(_commands(build_parser()))
    assert "--format" in _flags(commands[path])


def test_dash_capital_v_prints_the_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["-V"])
    assert exc.value.code == 0 and __version__ in capsys.readouterr().out


@pytest.mark.parametrize("argv, usage", [
    (["results", "show", "abc", "--bogus"], "usage: repro results show"),
    (["stacks", "--bogus"], "usage: repro stacks"),
    (["bench", "--stack", "cpu-tf215", "--bogus"], "usage: repro bench"),
])
def test_an_unknown_option_prints_the_subcommands_usage(capsys, argv, usage):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and usage in err and "--bogus" in err


def test_a_misspelt_stack_name_gets_did_you_mean(capsys):
    assert main(["show", "cpu-tf2155"]) == 2
    assert "did you mean cpu-tf215" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", FORMATS.names())
def test_stacks_validate_and_show_print_every_format(capsys, fmt):
    for argv in (["stacks", str(ROOT / "stacks")], ["validate", str(ROOT / "stacks" / "cpu-tf215.yaml")],
                 ["show", "cpu-tf215"]):
        assert main([*argv, "--format", fmt]) == 0, argv
        out = capsys.readouterr().out
        if fmt == "json":
            json.loads(out)
        elif fmt == "csv":
            assert len(list(csv.reader(io.StringIO(out)))) >= 2
        assert "cpu-tf215" in out


def _stored(tmp_path: Path) -> tuple[str, str]:
    from tests.unit.test_reports import ALLREDUCE, load  # a real all-reduce run's record

    store = Store(tmp_path / "results")
    record: RunRecord = load(ALLREDUCE)
    store.put(record)
    return str(store.root), record.id


@pytest.mark.parametrize("fmt", FORMATS.names())
def test_results_show_and_rm_print_every_format(capsys, tmp_path, fmt):
    store, rid = _stored(tmp_path)
    assert main(["results", "show", rid, "--store", store, "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert rid in out
    if fmt == "json":
        assert json.loads(out)["id"] == rid
    assert main(["results", "rm", rid, "--store", store, "--dry-run", "--format", fmt]) == 0
    assert rid in capsys.readouterr().out


def test_compare_quiet_prints_the_tables_without_the_preamble(capsys, tmp_path):
    from tests.unit.test_reports import ALLREDUCE, load  # a real all-reduce run's record

    record: RunRecord = load(ALLREDUCE)
    old, new = tmp_path / "old", tmp_path / "new"  # the same run twice, as two runs (OLD = NEW is refused)
    for folder, rid in ((old, record.id), (new, record.id[:-4] + "beef")):
        folder.mkdir()
        (folder / f"{rid}.json").write_text(record.model_copy(update={"id": rid}).model_dump_json())
    assert main(["compare", str(old), str(new)]) == 0
    loud = capsys.readouterr().out
    assert main(["compare", str(old), str(new), "-q"]) == 0
    quiet = capsys.readouterr().out
    assert "What changed" in loud and "What changed" not in quiet
    assert "All-reduce" in quiet and len(quiet) < len(loud)


def test_inventories_are_named_from_the_checkout_and_from_repro_inventories(tmp_path, monkeypatch):
    from repro.hosts.inventory import load_inventory

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REPRO_INVENTORIES", raising=False)
    assert load_inventory("c4140").path.endswith("inventories/c4140")  # the shipped inventory, by name
    site = tmp_path / "site-inventories" / "lab"
    site.mkdir(parents=True)
    (site / "hosts.yml").write_text("all:\n  hosts:\n    node7:\n      ansible_host: 10.0.0.7\n", encoding="utf-8")
    monkeypatch.setenv("REPRO_INVENTORIES", str(site.parent))
    inventory = load_inventory("lab")
    assert [h.name for h in inventory.hosts] == ["node7"]
    from repro.errors import InventoryError

    with pytest.raises(InventoryError) as exc:
        load_inventory("lbb")
    assert "did you mean lab" in exc.value.render()


def test_compare_help_names_the_method_it_uses(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Welch's t" in text and "paired t" in text and "bootstrap" not in text
