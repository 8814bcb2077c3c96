"""Output formats (pure): a renderer builds a typed Document, a format turns it into text.

    doc = Document((Heading("Scaling"), Table(columns, cells, data=rows, caption=("stack a · fp32",))))
    FORMATS.get("markdown").render(doc)

A Document is a list of blocks: headings, lines of text and tables. A Table carries what each format
needs: headers, display cells (rounded, with units), raw data rows (unrounded numbers, for csv and
json), which columns are numeric (right-aligned), a title, caption lines (settings that are the same on
every row, units, what ± means) and footnotes. Built in: table (terminal), markdown, csv, json.
Adding one (html, latex, ...) is one class with `name`, `machine` and `render(doc) -> str`, plus
`FORMATS.add(name, instance)` or `@FORMATS.register(name, instance=True)`.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from repro.registry import Registry


@dataclass(frozen=True)
class Column:
    """A table column: its header, and whether it holds numbers (right-aligned in every text format)."""

    header: str
    numeric: bool = False


@dataclass(frozen=True)
class Table:
    """Display cells for people, data rows for programs, and the words that explain both."""

    columns: tuple[Column, ...]
    cells: tuple[tuple[str, ...], ...]
    data: tuple[Mapping[str, Any], ...] = ()
    title: str = ""
    caption: tuple[str, ...] = ()  # above the table: what is the same on every row, units, what ± means
    notes: tuple[str, ...] = ()  # under the table: footnotes
    name: str = "rows"  # the key of its data rows in json when a document holds several tables
    wrap: tuple[int | None, ...] = ()  # terminal: wrap each column's text at this width (None: never), cells may
    # hold several lines (tabulate lays them out)

    def __post_init__(self) -> None:
        for i, row in enumerate(self.cells):  # a table has as many cells as headers, always
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.title or self.name!r}: row {i} has {len(row)} cells for "
                                 f"{len(self.columns)} columns")

    @property
    def headers(self) -> tuple[str, ...]:
        return tuple(c.header for c in self.columns)


@dataclass(frozen=True)
class Heading:
    text: str


@dataclass(frozen=True)
class Text:
    """Lines of text; bullets=True: a list in markdown (two leading spaces per level of nesting), plain lines in
    a terminal."""

    lines: tuple[str, ...]
    bullets: bool = False


Block = Heading | Text | Table


@dataclass(frozen=True)
class Document:
    """What a command prints. `data`: what json writes (default: the tables' data rows)."""

    blocks: tuple[Block, ...]
    data: Any = None
    tables: tuple[Table, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", tuple(b for b in self.blocks if isinstance(b, Table)))


class Format(Protocol):
    name: str
    machine: bool  # data only (csv, json): commands send their other messages to stderr

    def render(self, doc: Document) -> str: ...


FORMATS: Registry[Format] = Registry("output format")


def render(doc: Document, fmt: str) -> str:
    """The document in the format registered as `fmt` (InputError naming the known ones otherwise)."""
    return FORMATS.get(fmt).render(doc)


def is_machine(fmt: str) -> bool:
    """Whether `fmt` writes data only (other messages then go to stderr)."""
    return bool(getattr(FORMATS.get(fmt), "machine", False))


# -- text layouts ----------------------------------------------------------------------------------

def _pad(text: str, width: int, right: bool) -> str:
    return text.rjust(width) if right else text.ljust(width)


def _widths(table: Table) -> list[int]:
    return [max([len(c.header), *(len(row[i]) for row in table.cells)]) for i, c in enumerate(table.columns)]


def text_table(table: Table) -> list[str]:
    """Aligned columns, numbers right-aligned, a dashed rule under the headers."""
    widths = _widths(table)
    right = [c.numeric for c in table.columns]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(_pad(x, w, r) for x, w, r in zip(cells, widths, right, strict=True)).rstrip()

    return [line(table.headers), "  ".join("-" * w for w in widths), *(line(row) for row in table.cells)]


def wrapped_table(table: Table) -> list[str]:
    """Columns wrapped at the table's widths, multi-line cells, as tabulate's plain layout (numbers right-aligned)."""
    from tabulate import tabulate  # the one module of repro that uses tabulate

    return tabulate([list(row) for row in table.cells], headers=list(table.headers),
                    maxcolwidths=list(table.wrap)).split("\n")


def escape_markdown(text: str) -> str:
    """Characters that would end a cell or start emphasis, escaped."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")


def markdown_table(table: Table) -> list[str]:
    """A GitHub table; numeric columns right-aligned (`---:`)."""
    cells = [[escape_markdown(x).replace("\n", "<br>") for x in row] for row in table.cells]  # a cell is one line
    headers = [escape_markdown(h) for h in table.headers]
    widths = [max(3, len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    right = [c.numeric for c in table.columns]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(_pad(x, w, r) for x, w, r in zip(row, widths, right, strict=True)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if r else ("-" * (w + 2)) for w, r in zip(widths, right,
                                                                                           strict=True)) + "|"
    return [line(headers), rule, *(line(row) for row in cells)]


@FORMATS.register("table", instance=True)
class TextFormat:
    """aligned text for a terminal"""

    name = "table"
    machine = False

    def render(self, doc: Document) -> str:
        out: list[str] = []
        for block in doc.blocks:
            if isinstance(block, Heading):
                out += [block.text]
            elif isinstance(block, Text):
                out += list(block.lines)
            else:
                out += [block.title] if block.title else []
                out += list(block.caption)
                out += wrapped_table(block) if block.wrap else text_table(block)
                out += [f"  {n}" for n in block.notes]
            out.append("")
        return "\n".join(out).rstrip() + "\n"


@FORMATS.register("markdown", instance=True)
class MarkdownFormat:
    """GitHub markdown: headings, captions, tables with right-aligned numbers"""

    name = "markdown"
    machine = False

    def render(self, doc: Document) -> str:
        out: list[str] = []
        for block in doc.blocks:
            if isinstance(block, Heading):
                out += [f"### {escape_markdown(block.text)}"]
            elif isinstance(block, Text):
                out += [_bullet(line) if block.bullets else escape_markdown(line) + "\\" for line in block.lines]
                if not block.bullets and out:
                    out[-1] = out[-1].removesuffix("\\")
            else:
                if block.title:
                    out += [f"### {escape_markdown(block.title)}", ""]
                if block.caption:  # one paragraph, a hard line break (backslash) after each line
                    out += [escape_markdown(c) + ("\\" if i < len(block.caption) - 1 else "")
                            for i, c in enumerate(block.caption)] + [""]
                out += markdown_table(block)
                out += [""] + [f"- {escape_markdown(n)}" for n in block.notes] if block.notes else []
            out.append("")
        return "\n".join(out).rstrip() + "\n"


def _bullet(line: str) -> str:
    depth = (len(line) - len(line.lstrip(" "))) // 2
    return f"{'  ' * depth}- {escape_markdown(line.strip())}"


# -- machine-readable ----------------------------------------------------------------------------------

def clean(value: Any) -> Any:
    """NaN and infinities become None (JSON has no such numbers); tuples become lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "; ".join(map(str, value))
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True)
    return value


@FORMATS.register("csv", instance=True)
class CsvFormat:
    """one CSV row per table row, raw numbers (the union of the tables' fields)"""

    name = "csv"
    machine = True

    def render(self, doc: Document) -> str:
        rows = [clean(row) for table in doc.tables for row in table.data]
        fields = list(dict.fromkeys(k for row in rows for k in row)) or ["rows"]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        return buf.getvalue()


@FORMATS.register("json", instance=True)
class JsonFormat:
    """JSON, raw numbers (null where a figure is missing)"""

    name = "json"
    machine = True

    def render(self, doc: Document) -> str:
        data = doc.data
        if data is None:
            tables = doc.tables
            data = list(tables[0].data) if len(tables) == 1 else {t.name: list(t.data) for t in tables}
        return json.dumps(clean(data), indent=2) + "\n"


# -- cells ------------------------------------------------------------------------------------------

def number(value: float | None, digits: int = 1) -> str:
    """1234.5 -> '1,234.5'; None or not finite -> '-'."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:,.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str:
    """0.7623 -> '76.2%' (one decimal: finer digits would be below any interval we measure)."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * 100:.{digits}f}%"


def constant_settings(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> tuple[list[str], list[str]]:
    """(keys whose value is the same on every row, keys that vary): the first go to a caption."""
    same, varying = [], []
    for key in keys:
        values = {json.dumps(row.get(key), sort_keys=True, default=str) for row in rows}
        (same if len(values) <= 1 else varying).append(key)
    return same, varying
