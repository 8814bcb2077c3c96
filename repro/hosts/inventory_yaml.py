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


def _load(path: Path) -> Any:
    try:
        return yaml.safe_load(read_file(path).decode("utf-8-sig"))
    except (FileProblem, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        raise InventoryError(f"{path}: not a readable YAML inventory",
                             [Diagnostic(str(exc).splitlines()[0][:300], Location(str(path)))]) from None


def _vars_file(base: Path, kind: str, name: str) -> dict[str, Any]:
    for suffix in ("", *SUFFIXES):
        path = base / kind / f"{name}{suffix}"
        if path.is_file():
            data = _load(path)
            return data if isinstance(data, dict) else {}
    return {}


def _walk(name: str, body: Any, listing: dict[str, Any], chain: list[str], found: list[tuple[str, dict, list]],
          group_vars: dict[str, dict], depth: int) -> None:
    if depth > MAX_DEPTH or not isinstance(body, dict | type(None)):
        return
    body = body or {}
    entry = listing.setdefault(name, {})
    group_vars.setdefault(name, {}).update(body.get("vars") or {})
    hosts = body.get("hosts") or {}
    if not isinstance(hosts, dict):
        raise InventoryError(f"group {name}: 'hosts' is not a mapping", [Diagnostic("hosts must map names to vars")])
    for host, host_vars in hosts.items():
        if "[" in str(host):
            raise BackendUnavailable(f"host range {host!r} needs Ansible to expand it",
                                     hint="pip install 'repro[hosts]'")
        entry.setdefault("hosts", []).append(str(host))
        found.append((str(host), host_vars or {}, [*chain, name]))
    for child, child_body in (body.get("children") or {}).items():
        entry.setdefault("children", []).append(str(child))
        _walk(str(child), child_body, listing, [*chain, name], found, group_vars, depth + 1)


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
            _walk(str(group), body, out, [], found, group_vars, 0)
    for host, own, chain in found:
        merged: dict[str, Any] = {}
        for group in dict.fromkeys(["all", *chain]):
            merged.update(group_vars.get(group, {}))
            merged.update(_vars_file(base, "group_vars", group))
        merged.update(own if isinstance(own, dict) else {})
        merged.update(_vars_file(base, "host_vars", host))
        out["_meta"]["hostvars"].setdefault(host, {}).update(merged)
    return out
