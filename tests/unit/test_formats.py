"""Output formats (repro.formats): one typed document, rendered by every registered format; a toy format is one
class plus one registration, registered here and offered by every command that prints results."""

from __future__ import annotations

import csv
import html
import io
import json
import shutil
from pathlib import Path

import pytest

from repro.cli import main
from repro.formats import FORMATS, Column, Document, Heading, Table, Text, render

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def v1(tmp_path: Path) -> str:
    """A copy of the committed schema-1 store (commands may write an index next to the records)."""
    shutil.copytree(ROOT / "tests" / "data" / "stores" / "v1", tmp_path / "v1")
    return str(tmp_path / "v1")


def doc() -> Document:
    table = Table((Column("model"), Column("workers", True), Column("images/sec", True)),
                  (("resnet50", "1", "99.9"), ("resnet50", "8", "1,408.0")),
                  ({"model": "resnet50", "workers": 1, "images_per_sec": 99.94},
                   {"model": "resnet50", "workers": 8, "images_per_sec": float("nan")}),
                  title="Scaling", caption=("stack a · fp32", "±: 95% interval"), notes=("* one run",), name="scaling")
    return Document((Text(("OLD: a", "  nested")), Heading("Tables"), table))


def test_every_builtin_format_renders_the_same_document():
    assert {"table", "markdown", "csv", "json"} <= set(FORMATS.names())
    text = render(doc(), "table").splitlines()
    header = next(i for i, line in enumerate(text) if line.startswith("model"))
    assert text[header - 2:header] == ["stack a · fp32", "±: 95% interval"]  # the caption, above the table
    assert text[header + 2].endswith("    99.9") and text[header + 3].endswith("1,408.0")  # numbers right-aligned
    md = render(doc(), "markdown").splitlines()
    assert "### Scaling" in md and "stack a · fp32\\" in md and "- \\* one run" in md
    rule = next(line for line in md if line.startswith("|--"))
    assert rule.count(":|") == 2 and not rule.startswith("|:")  # two numeric columns right-aligned, model left
    rows = list(csv.DictReader(io.StringIO(render(doc(), "csv"))))
    assert rows[0] == {"model": "resnet50", "workers": "1", "images_per_sec": "99.94"}
    assert rows[1]["images_per_sec"] == ""  # no figure: empty, never "nan"
    assert json.loads(render(doc(), "json"))[1] == {"model": "resnet50", "workers": 8, "images_per_sec": None}


def test_a_table_has_as_many_cells_as_headers():
    with pytest.raises(ValueError, match="row 0 has 3 cells for 2 columns"):
        Table((Column("a"), Column("b")), (("1", "2", "3"),))


def test_an_unknown_format_is_an_input_error_naming_the_known_ones(capsys, v1):
    with pytest.raises(SystemExit) as exit_:
        main(["results", "--store", v1, "scaling", "--format", "yaml"])
    assert exit_.value.code == 2
    assert "invalid choice: 'yaml' (choose from 'table', 'markdown', 'csv', 'json')" in capsys.readouterr().err


class Html:
    """an HTML table per table (toy)"""

    name = "html"
    machine = False

    def render(self, document: Document) -> str:
        out = []
        for t in document.tables:
            head = "".join(f"<th>{html.escape(c.header)}</th>" for c in t.columns)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in row) + "</tr>" for row in t.cells)
            out.append(f"<table><caption>{html.escape(' '.join(t.caption))}</caption><tr>{head}</tr>{body}</table>")
        return "\n".join(out) + "\n"


@pytest.fixture()
def toy_format():
    FORMATS.add("html", Html())  # one registration
    yield
    FORMATS.remove("html")


def test_a_toy_format_is_one_class_plus_one_registration_and_every_command_offers_it(toy_format, capsys, v1):
    assert main(["results", "--store", v1, "scaling", "cpu-tf215", "--format", "html"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("<table><caption>stack cpu-tf215") and "<th>images/sec</th>" in out
    assert main(["results", "--store", v1, "--format", "html"]) == 0
    assert "<td>20261122T162827Z-eafd67dd</td>" in capsys.readouterr().out
    runs = Path(v1) / "runs" / "bd779ae04811"  # two 1-worker runs of the stack (OLD = NEW is refused)
    assert main(["compare", str(runs / "20261122T162827Z-eafd67dd.json"), str(runs / "20261122T163111Z-2ba4a0fd.json"),
                 "--store", v1, "--format", "html"]) == 0
    assert "<th>NEW/OLD</th>" in capsys.readouterr().out
    from repro.cli import build_parser

    bench = " ".join(build_parser()._subparsers._group_actions[0].choices["bench"].format_help().split())
    assert "--format {table,markdown,csv,json,html}" in bench and "html: an HTML table per table" in bench


def test_machine_formats_keep_other_messages_off_stdout(capsys, v1):
    assert main(["results", "--store", v1, "scaling", "cpu-tf215", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {d["model"] for d in data} == {"resnet20", "resnet32"}
    assert main(["results", "--store", v1, "--csv"]) == 0  # --csv and --json stay as aliases
    assert next(csv.DictReader(io.StringIO(capsys.readouterr().out)))["id"] == "20261122T162827Z-eafd67dd"
