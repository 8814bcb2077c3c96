"""Where a host or a variable is written in an Ansible inventory's own files (pure reading, no Ansible).

`ansible-inventory --list` says what the hosts and their variables are, not where they were written.
To locate a bad value at file:line:column, repro reads the inventory's sources the way Ansible finds
them: a YAML or INI file (or every file of an inventory directory), and the `group_vars/` and
`host_vars/` directories beside it. Reading is bounded (repro.inputs.read_file) and never fails: a
file that cannot be read or parsed only gives no locations.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from repro.errors import Location
from repro.inputs import FileProblem, read_file

YAML_SUFFIXES = (".yml", ".yaml", ".json")
# Files Ansible skips in an inventory directory (INVENTORY_IGNORE_EXTS).
IGNORED_SUFFIXES = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".ini", ".cfg",
                    ".retry")
MAX_FILES = 200
MAX_NODES = 100_000
MAX_DEPTH = 30

# Ansible's variable precedence among the places an inventory can set a variable (higher wins).
RANK_ALL, RANK_ALL_FILE, RANK_GROUP, RANK_GROUP_FILE, RANK_HOST, RANK_HOST_FILE = range(1, 7)


@dataclass(frozen=True)
class Definition:
    """One host entry (var "") or one variable of a host or group, where it is written."""

    owner: str  # host name (or host pattern such as node[01:04]) or group name
    scope: str  # "host" or "group"
    var: str
    location: Location
    value: str | None  # the value's text as written, for scalars
    rank: int


def _node_location(file: str, node: yaml.Node) -> Location:
    return Location(file, node.start_mark.line + 1, node.start_mark.column + 1)


def _mapping(node: yaml.Node | None) -> list[tuple[yaml.Node, yaml.Node]]:
    if isinstance(node, yaml.MappingNode):
        return [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)]
    return []


def _scalar(node: yaml.Node) -> str | None:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None


def _compose(path: Path) -> tuple[str, yaml.Node] | None:
    try:
        text = read_file(path).decode("utf-8-sig")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except (FileProblem, UnicodeDecodeError, yaml.YAMLError, RecursionError, ValueError):
        return None
    return (str(path), node) if node is not None else None


def _vars(file: str, node: yaml.Node | None, owner: str, scope: str, rank: int) -> Iterator[Definition]:
    for key, value in _mapping(node):
        where = key if isinstance(value, yaml.ScalarNode) and value.value == "" else value
        yield Definition(owner, scope, str(key.value), _node_location(file, where), _scalar(value), rank)


def _yaml_group(file: str, name: str, node: yaml.Node | None, depth: int) -> Iterator[Definition]:
    if depth > MAX_DEPTH:
        return
    group_rank = RANK_ALL if name == "all" else RANK_GROUP
    for key, value in _mapping(node):
        if key.value == "hosts":
            for host, host_vars in _mapping(value):
                yield Definition(str(host.value), "host", "", _node_location(file, host), None, RANK_HOST)
                yield from _vars(file, host_vars, str(host.value), "host", RANK_HOST)
        elif key.value == "vars":
            yield from _vars(file, value, name, "group", group_rank)
        elif key.value == "children":
            for child, child_node in _mapping(value):
                yield from _yaml_group(file, str(child.value), child_node, depth + 1)


def _yaml_source(path: Path) -> Iterator[Definition] | None:
    composed = _compose(path)
    if composed is None or not isinstance(composed[1], yaml.MappingNode):
        return None
    file, node = composed
    return (d for group, body in _mapping(node) for d in _yaml_group(file, str(group.value), body, 0))


_SECTION = re.compile(r"\[([^\]\s:]+)(?::([A-Za-z]+))?\]\s*(?:[#;].*)?", re.ASCII)
_TOKEN = re.compile(r"""(?:[^\s"']+|"[^"]*"?|'[^']*'?)+""")


def _host_name(token: str) -> str:
    """'node1:2222' -> 'node1' (a port after the name); patterns such as node[01:04] keep their colon."""
    head, sep, port = token.rpartition(":")
    if sep and port.isdigit() and head.count("[") == head.count("]") and ":" not in head:
        return head
    return token


def _ini_source(path: Path) -> Iterator[Definition]:
    try:
        text = read_file(path).decode("utf-8-sig", errors="replace")
    except FileProblem:
        return
    file = str(path)
    group, kind = "ungrouped", "hosts"
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        section = _SECTION.fullmatch(stripped)
        if section:
            group, kind = section[1], section[2] or "hosts"
            continue
        if kind == "hosts":
            tokens = list(_TOKEN.finditer(line))
            if not tokens:
                continue
            host = _host_name(tokens[0].group())
            yield Definition(host, "host", "", Location(file, number, tokens[0].start() + 1), None, RANK_HOST)
            for token in tokens[1:]:
                key, sep, value = token.group().partition("=")
                if sep:
                    yield Definition(host, "host", key, Location(file, number, token.start() + len(key) + 2),
                                     value, RANK_HOST)
        elif kind == "vars":
            key, sep, value = line.partition("=")
            if sep:
                column = len(line) - len(line.lstrip()) + len(key.strip()) + 2
                yield Definition(group, "group", key.strip(), Location(file, number, column), value.strip(),
                                 RANK_ALL if group == "all" else RANK_GROUP)


def _source(path: Path) -> Iterator[Definition]:
    """Ansible's order: the yaml plugin for .yml/.yaml/.json or no suffix, else (or failing that) ini."""
    if path.suffix in YAML_SUFFIXES or not path.suffix:
        found = _yaml_source(path)
        if found is not None:
            yield from found
            return
    if path.suffix not in (".yml", ".yaml") and not os.access(path, os.X_OK):
        yield from _ini_source(path)


def _vars_files(base: Path, kind: str, name: str) -> Iterator[Path]:
    """group_vars/NAME(.yml|.yaml|.json) and group_vars/NAME/* (likewise host_vars)."""
    folder = base / kind
    for candidate in [folder / name, *(folder / (name + s) for s in YAML_SUFFIXES)]:
        if candidate.is_file():
            yield candidate
        elif candidate.is_dir():
            yield from sorted(p for p in candidate.iterdir() if p.is_file() and not p.name.startswith("."))[:MAX_FILES]


def _listed(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())[:MAX_FILES]
    except OSError:
        return []


def _sources(path: Path, depth: int = 0) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    if not path.is_dir() or depth > 3:
        return
    for entry in _listed(path):
        if entry.name.startswith(".") or entry.name in ("group_vars", "host_vars") or \
                entry.name.endswith(IGNORED_SUFFIXES):
            continue
        yield from _sources(entry, depth + 1)


class InventoryFiles:
    """The definitions of an inventory file or directory, read once, for locating hosts and variables."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.base = self.path if self.path.is_dir() else self.path.parent
        self.definitions: list[Definition] = []
        for source in _sources(self.path):
            self.definitions.extend(_bounded(_source(source)))

    def _vars_file_definitions(self, kind: str, name: str, scope: str, rank: int) -> list[Definition]:
        out = []
        for file in _vars_files(self.base, kind, name):
            composed = _compose(file)
            if composed is not None:
                out.extend(_vars(composed[0], composed[1], name, scope, rank))
        return out

    def host(self, host: str) -> Location | None:
        """Where `host` is defined (its first entry)."""
        entries = [d for d in self.definitions if d.scope == "host" and not d.var and _owns(d.owner, host)]
        return entries[0].location if entries else None

    def variable(self, host: str, var: str, groups: frozenset[str], value: object = None) -> Location | None:
        """Where the value `host` got for `var` is written: the definition Ansible would use, preferring
        one whose text matches the value."""
        candidates = [d for d in self.definitions if d.var == var and (
            (d.scope == "host" and _owns(d.owner, host)) or (d.scope == "group" and d.owner in groups))]
        candidates += self._vars_file_definitions("host_vars", host, "host", RANK_HOST_FILE)
        for group in sorted(groups):
            rank = RANK_ALL_FILE if group == "all" else RANK_GROUP_FILE
            candidates += [d for d in self._vars_file_definitions("group_vars", group, "group", rank) if d.var == var]
        candidates = [d for d in candidates if d.var == var]
        if not candidates:
            return None
        text = None if value is None or isinstance(value, (dict, list)) else str(value)
        best = max(candidates, key=lambda d: (_same(d.value, text), d.rank))
        return best.location


def _bounded(definitions: Iterator[Definition]) -> list[Definition]:
    out = []
    for d in definitions:
        out.append(d)
        if len(out) >= MAX_NODES:
            break
    return out


def _same(written: str | None, value: str | None) -> bool:
    if written is None or value is None:
        return False
    return written.strip().strip("'\"").lower() == value.strip().lower()


_RANGE = re.compile(r"\\\[[0-9a-zA-Z]+:[0-9a-zA-Z]+(?::[0-9]+)?\\\]")


def _owns(owner: str, host: str) -> bool:
    """Whether an inventory entry (a name or a pattern such as node[01:04]) stands for `host`."""
    if owner == host:
        return True
    if "[" not in owner:
        return False
    pattern = _RANGE.sub("[0-9a-zA-Z]+", re.escape(owner))
    return re.fullmatch(pattern, host) is not None
