"""The shape of a compatibility finding, the rule registry and the shipped fact table (pure).

repro.manifest.compat holds the rules of TensorFlow stacks and the check, repro.manifest.compat_platform the rules on
hosts, base images and distributions, repro.manifest.compat_torch those of PyTorch stacks. All register with `@rule`
here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from repro.errors import Location
from repro.manifest.loader import FieldPath, dotted
from repro.manifest.schema import Stack
from repro.manifest.versions import in_any_line, lines_overlap

ERROR, WARNING, NOTE = "error", "warning", "note"
SEVERITIES = (ERROR, WARNING, NOTE)


@dataclass(frozen=True)
class Finding:
    """One compatibility finding about a stack."""

    severity: str
    rule: str
    message: str
    path: FieldPath = ()
    source: str = ""
    location: Location | None = None

    def render(self) -> str:
        where = f"{self.location}: " if self.location else ""
        field_ = f"{dotted(self.path)}: " if self.path else ""
        text = f"{where}{self.severity}[{self.rule}]: {field_}{self.message}"
        if self.source:
            text += f"\n    source: {self.source}"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "field": dotted(self.path),
            "message": self.message,
            "source": self.source,
            "location": str(self.location) if self.location else None,
        }


@functools.lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The shipped compatibility table."""
    text = resources.files("repro.manifest").joinpath("compat.yaml").read_text(encoding="utf-8")
    # libyaml where PyYAML has it: the same safe loading of a file repro ships, without the pure-Python parser's
    # cost on every `validate`
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _source(key: str | None) -> str:
    if not key:
        return ""
    return table()["sources"].get(key, key)


def _row(rows: list[dict], key: str, version: str) -> dict | None:
    for row in rows:
        values = row[key] if isinstance(row[key], list) else [row[key]]
        if in_any_line(version, values):
            return row
    return None


def _rows_within(rows: list[dict], key: str, version: str) -> list[dict]:
    """The row holding `version`; for a version written with fewer parts than the rows ('7.1' where the
    table has 7.1.2, 7.1.3 and 7.1.4), every row of that release line."""
    row = _row(rows, key, version)
    if row is not None:
        return [row]
    return [r for r in rows if any(lines_overlap(version, v) for v in (r[key] if isinstance(r[key], list)
                                                                          else [r[key]]))]


# ---------------------------------------------------------------- rules

Rule = Callable[[Stack], Iterator[Finding]]
RULES: list[Rule] = []
RULE_FRAMEWORK: dict[Rule, str] = {}  # rules that check one framework's stacks only (a plug-in's compat_module)


def rule(fn: Rule | None = None, *, framework: str | None = None) -> Callable:
    """Register a compatibility rule (`@rule`), or one that runs on stacks of one framework only
    (`@rule(framework="pytorch")`)."""

    def add(f: Rule) -> Rule:
        RULES.append(f)
        if framework is not None:
            RULE_FRAMEWORK[f] = framework
        return f

    return add(fn) if fn is not None else add


def _f(severity: str, rule_id: str, message: str, path: FieldPath, source: str = "") -> Finding:
    return Finding(severity, rule_id, message, path, _source(source))
