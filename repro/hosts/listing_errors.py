"""Ansible's own reason when `ansible-inventory --list` cannot read an inventory, located where it says.

ansible-inventory tries several plugins (auto, yaml, ini, ...) and prints each one's failure as a
warning, then a generic "Unable to parse" / "No inventory was parsed" that says nothing. repro keeps
the failure of the plugin that fits the file (yaml for .yml/.yaml/.json, ini otherwise) with the place
Ansible names ("Origin: file:line:column" in ansible-core 2.19, "The error appears to be in 'file':
line N, column M" before), or finds the quoted text of the failure in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from repro.errors import Diagnostic, Location
from repro.inputs import FileProblem, read_file

_FAILED = re.compile(r"Failed to parse (?:(?P<file>\S+) )?with '?(?P<plugin>[\w.]+)'? plugin: ?(?P<reason>.*)")
_ORIGIN = re.compile(r"^Origin: (?P<file>[^<].*?)(?::(?P<line>[0-9]+)(?::(?P<column>[0-9]+))?)?\s*$")
_APPEARS = re.compile(r"error appears to be in '(?P<file>[^']+)': line (?P<line>[0-9]+), column (?P<column>[0-9]+)")
_QUOTED = re.compile(r"'([^']{3,200})'")
_NOISE = ("Unable to parse", "No inventory was parsed", "Completely failed to parse", "<<< caused by >>>",
          "(source not shown")
MAX_REASON = 600


@dataclass
class _Failure:
    plugin: str
    reason: str
    file: str | None
    location: Location | None = None


def _location(match: re.Match[str]) -> Location:
    line = int(match["line"]) if match["line"] else None
    column = int(match["column"]) if match["column"] and line else None
    return Location(match["file"], line, column)


def _failures(stderr: str) -> list[_Failure]:
    out: list[_Failure] = []
    for raw in stderr.splitlines():
        line = raw.strip().removeprefix("[WARNING]:").strip().removeprefix("*").strip()
        failed = _FAILED.search(line)
        if failed:
            out.append(_Failure(failed["plugin"], failed["reason"].strip(), failed["file"]))
        if not out:
            continue
        current = out[-1]
        where = _ORIGIN.match(line) or _APPEARS.search(line)
        if where and (current.location is None or current.location.line is None):
            current.location = _location(where)
    return out


def _yaml_file(path: Path) -> bool:
    return path.suffix in (".yml", ".yaml", ".json") or path.is_dir()


def _fits(plugin: str, path: Path) -> int:
    """How well a plugin's failure explains this file: the yaml plugin's for a YAML inventory (auto's is about
    plugin configuration files, "no root 'plugin' key found"), the ini plugin's otherwise."""
    if _yaml_file(path):
        return {"yaml": 2, "auto": 1}.get(plugin, 0)
    return 2 if plugin == "ini" else 0


def _yaml_location(path: Path) -> Location | None:
    """Where repro's own reading of a YAML inventory finds it wrong (Ansible's yaml plugin names no line)."""
    from repro.errors import BackendUnavailable, InventoryError
    from repro.hosts.inventory_yaml import listing

    try:
        listing(path)
    except InventoryError as exc:
        located = [d.location for d in exc.diagnostics if d.location is not None and d.location.line is not None]
        return located[0] if located else None
    except (BackendUnavailable, OSError, ValueError):
        return None
    return None


# Reasons Ansible gives without a place, and what in a file they are about.
_UNPLACED = (("digits", re.compile(r"[0-9]{4301,}")),  # "Exceeds the limit (4300 digits) for integer ..."
             ("Unicode character escape", re.compile(r"\\[uU]0*[dD][89a-fA-F][0-9a-fA-F]{2}")))


def _find_in_file(reason: str, file: Path) -> Location | None:
    """Where in `file` the reason points without saying so: the text it quotes (INI errors name the
    definition, not its line), or the number too long for Python to read."""
    try:
        lines = read_file(file).decode("utf-8", errors="replace").splitlines()
    except FileProblem:
        return None
    patterns = [re.compile(re.escape(snippet)) for snippet in _QUOTED.findall(reason)]
    patterns += [pattern for words, pattern in _UNPLACED if words in reason]
    for pattern in patterns:
        for number, line in enumerate(lines, 1):
            found = pattern.search(line)
            if found:
                return Location(str(file), number, found.start() + 1)
    return None


def _inventory_files(path: Path) -> list[Path]:
    """The inventory's own files: the file (or the directory's files) and its group_vars/host_vars."""
    base = path if path.is_dir() else path.parent
    files = [path] if path.is_file() else []
    for folder in ([path] if path.is_dir() else []) + [base / "group_vars", base / "host_vars"]:
        try:
            files += sorted(p for p in folder.rglob("*") if p.is_file())[:200]
        except OSError:
            continue
    return files


def _find_anywhere(reason: str, path: Path) -> Location | None:
    for file in _inventory_files(path):
        where = _find_in_file(reason, file)
        if where is not None:
            return where
    return None


def ansible_reason(stderr: str, path: Path) -> list[Diagnostic]:
    """One located diagnostic with the reason Ansible gave for not reading the inventory at `path`."""
    failures = _failures(stderr)
    if not failures:
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not any(n in ln for n in _NOISE)]
        text = " ".join(ln.removeprefix("[ERROR]:").strip() for ln in lines)[:MAX_REASON] or \
            "ansible-inventory failed without saying why"
        return [Diagnostic(text, _find_anywhere(text, path) or Location(str(path)))]
    best = max(failures, key=lambda f: (_fits(f.plugin, Path(f.file) if f.file and Path(f.file).exists() else path),
                                        f.location is not None and f.location.line is not None))
    where = best.location
    if where is None or where.line is None:  # another plugin may have placed the same reason
        where = next((f.location for f in failures if f.reason == best.reason and f.location is not None
                      and f.location.line is not None), where)
    if (where is None or where.line is None) and best.plugin == "yaml":
        where = _yaml_location(path) or where
    if where is None or where.line is None:
        file = Path(where.file) if where else Path(best.file) if best.file else None
        where = _find_in_file(best.reason, file) if file is not None and file.is_file() else None
        where = where or _find_anywhere(best.reason, path)
    others = sorted({f.plugin for f in failures} - {best.plugin})
    hint = f"Ansible also tried the {', '.join(others)} plugin(s)" if others else ""
    reason = best.reason[:MAX_REASON].rstrip(".")
    return [Diagnostic(f"{reason} (Ansible's {best.plugin} inventory plugin)", where or Location(str(path)),
                       hint=hint)]
