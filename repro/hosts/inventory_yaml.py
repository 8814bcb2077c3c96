"""A YAML inventory listed without Ansible, for installations without the `repro[hosts]` extra.

`ansible-inventory --list` is how repro reads inventories (every plugin, INI, scripts, patterns). Where
Ansible is not installed, the commands that only need the hosts and their variables (`repro prepare
--dry-run`, `repro bench` on `inventories/localhost`) still work for plain YAML inventories: this module
builds the same listing from the YAML files, the `group_vars/` and `host_vars/` beside them, with
Ansible's precedence (all < parent group < child group < group_vars file < host < host_vars file).
Anything else (INI, scripts, plugins, host ranges) needs Ansible, and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from repro.errors import BackendUnavailable, Diagnostic, InventoryError, Location
from repro.inputs import FileProblem, read_file

SUFFIXES = (".yml", ".yaml")
MAX_DEPTH = 30


class _Mapping(dict):
    """A YAML mapping that remembers where it is written (1-based line), to name file:line in errors."""

    line: int | None = None
    lines: dict[str, int] | None = None  # key -> the line it is written on


class _Loader(yaml.SafeLoader):
    """SafeLoader whose mappings know their line, and whose integers of more than 40 digits stay text (as
    repro reads ansible-inventory's listing): int() of 5,000 digits raises ValueError."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> Any:
        text = str(node.value).replace("_", "")
        return text if len(text.lstrip("+-")) > 40 else super().construct_yaml_int(node)

    def construct_yaml_map(self, node: yaml.MappingNode) -> Any:
        data = _Mapping()
        data.line = node.start_mark.line + 1
        data.lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
        yield data
        data.update(self.construct_mapping(node))


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_yaml_map)


def _load(path: Path) -> Any:
    try:
        return yaml.load(read_file(path).decode("utf-8-sig"), Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(str(path), mark.line + 1, mark.column + 1) if mark else Location(str(path))
        raise InventoryError(f"{where}: not a readable YAML inventory",
                             [Diagnostic(f"YAML: {exc.problem or exc.context or 'syntax error'}", where)]) from None
    except UnicodeDecodeError as exc:  # the line of the first byte that is not UTF-8
        where = Location(str(path), exc.object[:exc.start].count(b"\n") + 1)
        raise InventoryError(f"{where}: not a readable YAML inventory",
                             [Diagnostic(f"not UTF-8 text (byte {exc.object[exc.start]:#04x})", where)]) from None
    except (FileProblem, yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        raise InventoryError(f"{path}: not a readable YAML inventory",
                             [Diagnostic(str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__,
                                         Location(str(path)))]) from None


def _where(file: Path, body: Any, key: str | None = None) -> Location:
    lines = getattr(body, "lines", None) or {}
    return Location(str(file), lines.get(key) if key in lines else getattr(body, "line", None))


def _need_mapping(file: Path, group: str, key: str, value: Any, parent: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        where = _where(file, parent, key)
        raise InventoryError(f"{where}: group {group}: '{key}' is not a mapping",
                             [Diagnostic(f"'{key}' of group {group} must be a mapping, found {type(value).__name__}",
                                         where, f"{group}.{key}")])
    return value


def _vars_file(base: Path, kind: str, name: str) -> dict[str, Any]:
    for suffix in ("", *SUFFIXES):
        path = base / kind / f"{name}{suffix}"
        if path.is_file():
            data = _load(path)
            if data is not None and not isinstance(data, dict):
                raise InventoryError(f"{path}: not a mapping of variables",
                                     [Diagnostic(f"a mapping of variables expected, found {type(data).__name__}",
                                                 Location(str(path), 1), f"{kind}.{name}")])
            return data or {}
    return {}


def _walk(file: Path, name: str, body: Any, listing: dict[str, Any], chain: list[str],
          found: list[tuple[str, dict, list]], group_vars: dict[str, dict], depth: int) -> None:
    if depth > MAX_DEPTH or not isinstance(body, dict | type(None)):
        return
    body = body or {}
    entry = listing.setdefault(name, {})
    group_vars.setdefault(name, {}).update(_need_mapping(file, name, "vars", body.get("vars"), body))
    hosts = _need_mapping(file, name, "hosts", body.get("hosts"), body)
    for host, host_vars in hosts.items():
        if "[" in str(host):
            raise BackendUnavailable(f"host range {host!r} needs Ansible to expand it",
                                     hint="pip install 'repro[hosts]'")
        entry.setdefault("hosts", []).append(str(host))
        found.append((str(host), host_vars or {}, [*chain, name]))
    for child, child_body in _need_mapping(file, name, "children", body.get("children"), body).items():
        entry.setdefault("children", []).append(str(child))
        _walk(file, str(child), child_body, listing, [*chain, name], found, group_vars, depth + 1)


def listing(path: Path) -> dict[str, Any]:
    """The `ansible-inventory --list` document of a YAML inventory file or directory."""
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.suffix in SUFFIXES)
    if not files or any(f.suffix not in SUFFIXES for f in files):
        raise BackendUnavailable(f"{path}: only YAML inventories are read without Ansible",
                                 hint="pip install 'repro[hosts]' (Ansible reads every inventory format)")
    base = path.parent if path.is_file() else path
    out: dict[str, Any] = {"_meta": {"hostvars": {}}}
    found: list[tuple[str, dict, list]] = []
    group_vars: dict[str, dict] = {}
    for file in files:
        data = _load(file)
        if not isinstance(data, dict):
            raise InventoryError(f"{file}: not an inventory (a mapping of groups expected)",
                                 [Diagnostic("not a mapping of groups", Location(str(file), 1))])
        for group, body in data.items():
            _walk(file, str(group), body, out, [], found, group_vars, 0)
    for host, own, chain in found:
        merged: dict[str, Any] = {}
        for group in dict.fromkeys(["all", *chain]):
            merged.update(group_vars.get(group, {}))
            merged.update(_vars_file(base, "group_vars", group))
        merged.update(own if isinstance(own, dict) else {})
        merged.update(_vars_file(base, "host_vars", host))
        out["_meta"]["hostvars"].setdefault(host, {}).update(merged)
    return out
