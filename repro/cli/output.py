"""Printing one command's result in the format asked for (--format), for commands whose terminal form is not a
table: a tree of values (`show`, `results show`) is YAML on a terminal, JSON for programs, a fenced YAML block
in markdown and one `field,value` row per leaf in CSV."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any


def leaves(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted field, value) for every leaf of a tree of mappings and lists ('ranks.0.host', 'a4')."""
    if isinstance(data, Mapping) and data:
        for key, value in data.items():
            yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(data, (list, tuple)) and data:
        for i, value in enumerate(data):
            yield from leaves(value, f"{prefix}.{i}" if prefix else str(i))
    else:
        yield prefix, data


def tree_text(data: Any, fmt: str, *, terminal: str | None = None) -> str:
    """A tree of values in a registered format; `terminal`: what the table format prints (default YAML)."""
    import json

    import yaml

    from repro.formats import FORMATS, Column, Document, Table, clean, render

    FORMATS.get(fmt)  # an unknown format: InputError naming the known ones
    if fmt == "json":
        return json.dumps(clean(data), indent=2, sort_keys=True) + "\n"
    as_yaml = yaml.safe_dump(clean(data), sort_keys=False, default_flow_style=False, allow_unicode=True)
    if fmt == "table":
        return terminal if terminal is not None else as_yaml
    if fmt == "markdown":
        return f"```yaml\n{as_yaml}```\n"
    rows = tuple({"field": k, "value": v} for k, v in leaves(clean(data)))
    table = Table((Column("field"), Column("value")), tuple((r["field"], "" if r["value"] is None else str(r["value"]))
                                                            for r in rows), rows)
    return render(Document((table,)), fmt)


def write(text: str) -> None:
    sys.stdout.write(text)
