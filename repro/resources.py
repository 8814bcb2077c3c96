"""Where repro's own files are: image templates, Ansible playbooks, example stacks and inventories.

In a checkout they are the top-level directories `docker/`, `playbooks/`, `stacks/`, `inventories/`. An
installed wheel carries the same directories as the packages `repro._data.<name>` (pyproject.toml maps
them), found through the import system (importlib). A site overrides any of them with an environment variable
(`REPRO_DOCKER_TEMPLATES`, `REPRO_PLAYBOOKS`, `REPRO_STACKS`, `REPRO_INVENTORIES`; `REPRO_STORE` for the
results store) or the same keys in a config file: `repro.toml` in the working directory, then
`$XDG_CONFIG_HOME/repro/config.toml` (~/.config/repro/config.toml); the first place that sets a key wins, a
relative directory is relative to the file that names it, and an unknown key is an error naming file and line:

    [site]
    playbooks = "/srv/repro/playbooks"
    store = "/nfs/team/repro-results"
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from repro.errors import BackendUnavailable, InputError
from repro.files import FileProblem, read_file, shape_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package (a dependency there)
    import tomli as tomllib

NAMES = {"docker": "REPRO_DOCKER_TEMPLATES", "playbooks": "REPRO_PLAYBOOKS", "stacks": "REPRO_STACKS",
         "inventories": "REPRO_INVENTORIES"}
CONFIG_KEYS = {"docker": "docker_templates", "playbooks": "playbooks", "stacks": "stacks",
               "inventories": "inventories", "store": "store"}
# every [site] key and the environment variable that overrides it (the README lists the same)
SITE_KEYS = {"store": "REPRO_STORE", "playbooks": "REPRO_PLAYBOOKS", "stacks": "REPRO_STACKS",
             "inventories": "REPRO_INVENTORIES", "docker_templates": "REPRO_DOCKER_TEMPLATES"}
# tables a scheduler reads itself (its own options, checked there): [kubernetes] in launch/schedulers/kube_site.py
SCHEDULER_TABLES = ("kubernetes",)
_CHECKOUT = Path(__file__).resolve().parent.parent
MAX_CONFIG_DEPTH = 16  # a configuration is two levels deep; thousands would break the parser (a RecursionError)
MAX_CONFIG_ITEMS = 10_000
_DIGITS = re.compile(r"[0-9][0-9_]{4300,}")  # past Python's int limit: the parser raises a plain ValueError


def config_files() -> list[Path]:
    """The site configuration files in use, first match wins per key: ./repro.toml, then
    $XDG_CONFIG_HOME/repro/config.toml (~/.config/repro/config.toml)."""
    home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "repro" / "config.toml"
    return [p for p in (Path("repro.toml"), home) if p.is_file()]


def config_file() -> Path | None:
    """The first site configuration file in use (./repro.toml, else the user's), or None."""
    found = config_files()
    return found[0] if found else None


def _line_of(text: str, key: str, table: str | None) -> int:
    """The line that sets `key` (in [table], or at the top level), 1-based; 1 when it cannot be told."""
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        header = re.match(r"\[\s*([^\]]+?)\s*\]", stripped)
        if header:
            current = header.group(1).strip().strip('"')
            if table is None and current.split(".")[0] == key:
                return number
            continue
        name = re.match(r'["\']?([A-Za-z0-9_.-]+)["\']?\s*=', stripped)
        if name and current == table and name.group(1).split(".")[0] == key:
            return number
    return 1


def _deep_line(text: str) -> int:
    """The line where brackets first nest past MAX_CONFIG_DEPTH (or a dotted key does), 1 when none does: where
    a configuration too deep to read is too deep. Brackets inside strings are counted too: it only locates."""
    depth = 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.count(".") >= MAX_CONFIG_DEPTH:
            return number
        for char in line:
            depth += (char in "[{") - (char in "]}")
            if depth > MAX_CONFIG_DEPTH:
                return number
    return 1


def read_config(path: str | Path) -> tuple[str, dict[str, Any]]:
    """A TOML configuration file's text and data, read bounded and depth-limited; InputError at file:line when it
    cannot be used (unreadable, not UTF-8, not TOML, nested too deep, a number past Python's 4,300 digits)."""
    try:
        raw = read_file(path)  # bounded: a FIFO or a device is refused, never read for ever
    except (FileProblem, OSError) as exc:
        raise InputError(f"{path}: unreadable repro configuration ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{path}:{line}: unreadable repro configuration: "
                         f"not UTF-8 text (byte {raw[exc.start:exc.start + 1]!r})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"at line (\d+)", str(exc))
        raise InputError(f"{path}:{at.group(1) if at else 1}: unreadable repro configuration ({exc})") from None
    except RecursionError:
        raise InputError(f"{path}:{_deep_line(text)}: unreadable repro configuration: nested more than "
                         f"{MAX_CONFIG_DEPTH} levels deep") from None
    except ValueError:  # an integer of more than 4,300 digits
        digits = _DIGITS.search(text)
        line = text.count("\n", 0, digits.start()) + 1 if digits else 1
        raise InputError(f"{path}:{line}: unreadable repro configuration: a number of more than 4,300 digits") \
            from None
    why = shape_problem(data, max_depth=MAX_CONFIG_DEPTH, max_items=MAX_CONFIG_ITEMS)
    if why:
        raise InputError(f"{path}:{_deep_line(text) if why.startswith('nested') else 1}: unusable repro "
                         f"configuration: {why}")
    return text, data


def _check(path: Path, text: str, data: dict[str, Any]) -> dict[str, str]:
    """The [site] table, every key known and every value text; InputError naming file and line otherwise."""
    known = ", ".join(SITE_KEYS)
    for key in data:
        if key != "site" and key not in SCHEDULER_TABLES:
            where = f"{path}:{_line_of(text, key, None)}"
            raise InputError(f"{where}: unknown setting '{key}' in the repro configuration; it takes one table, "
                             f"[site], with {known}")
    site = data.get("site", {})
    if not isinstance(site, dict):
        raise InputError(f"{path}:{_line_of(text, 'site', None)}: 'site' must be a table ([site]) with {known}")
    for key, value in site.items():
        where = f"{path}:{_line_of(text, key, 'site')}"
        if key not in SITE_KEYS:
            import difflib

            close = difflib.get_close_matches(key, list(SITE_KEYS), n=1)
            raise InputError(f"{where}: unknown key '{key}' in [site]" + (f" (did you mean '{close[0]}'?)"
                                                                         if close else ""),
                             hint=f"[site] takes {known}")
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where}: [site] {key} must be a non-empty text (a directory), found {value!r}")
    return site


MAX_TOML_DEPTH = 32  # [site] is one table of texts; deeper nesting is never a configuration


def _toml(path: str, text: str) -> dict:
    """tomllib's reading of a configuration, its nesting bounded first (tomllib recurses once per level, so a deep
    file would exhaust the stack) and a number too long for Python's int() named at its line."""
    depth, line = _depth(text)
    if depth > MAX_TOML_DEPTH:
        raise InputError(f"{path}:{line}: nested more than {MAX_TOML_DEPTH} levels deep; not a repro configuration")
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise InputError(f"{path}: nested too deeply; not a repro configuration") from None
    except ValueError as exc:
        if isinstance(exc, tomllib.TOMLDecodeError):
            raise
        long = re.search(r"[0-9][0-9_]{999,}", text)  # int() of more than 4,300 digits
        where = f":{text.count(chr(10), 0, long.start()) + 1}" if long else ""
        raise InputError(f"{path}{where}: a number too long to read ({len(long.group(0)) if long else '?'} "
                         "digits); not a repro configuration") from None


def _depth(text: str) -> tuple[int, int]:
    """The deepest nesting of arrays and inline tables outside strings and comments, and its line (a rough reading:
    tomllib's own RecursionError is still caught where this one is wrong)."""
    depth = deepest = 0
    line = where = 1
    quote: str | None = None
    comment = escaped = False
    for ch in text:
        if ch == "\n":
            line, comment, quote = line + 1, False, None
        elif comment:
            continue
        elif quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest, where = depth, line
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest, where


@cache
def _site(path: str, stamp: tuple[int, int]) -> dict[str, str]:
    """A configuration file's [site] values, relative directories resolved against the file's own."""
    text, data = read_config(path)
    base = Path(path).parent
    return {k: str(base / Path(v).expanduser()) for k, v in _check(Path(path), text, data).items()}


def _file_settings(path: Path) -> dict[str, str]:
    st = path.stat()
    return _site(str(path), (st.st_mtime_ns, st.st_size))


def site_setting(key: str) -> str | None:
    """A [site] value of the configuration files (./repro.toml first, then the user's), or None."""
    for path in config_files():
        value = _file_settings(path).get(key)
        if value:
            return value
    return None


def check_config() -> None:
    """Read every configuration file in use: an unknown key or a bad value is an InputError naming file and line."""
    for path in config_files():
        _file_settings(path)


def setting(key: str) -> tuple[str, str] | None:
    """(value, where it came from) of a site setting: its environment variable, else the configuration files."""
    env = SITE_KEYS[key]
    if os.environ.get(env):
        return os.environ[env], f"${env}"
    for path in config_files():
        value = _file_settings(path).get(key)
        if value:
            return value, f"{path} [site] {key}"
    return None


def store_root(default: str) -> Path:
    """The results store: $REPRO_STORE, else [site] store of the configuration, else `default`."""
    found = setting("store")
    return Path(found[0]).expanduser() if found else Path(default)


def data_dir(name: str) -> Path:
    """The directory of one of repro's data sets (docker, playbooks, stacks, inventories), as a real path."""
    found = setting(CONFIG_KEYS[name])
    if found:
        path = Path(found[0]).expanduser()
        if not path.is_dir():
            raise InputError(f"{found[1]}: {found[0]} is not a directory",
                             hint=f"point it at a copy of repro's {name} directory, or unset it")
        return path
    checkout = _CHECKOUT / name
    if checkout.is_dir():
        return checkout
    # an installed wheel: repro._data.<name> is a namespace package (no __init__.py) whose one location is
    # the directory (importlib.resources.files gives a MultiplexedPath for it, not a path)
    spec = importlib.util.find_spec(f"repro._data.{name}")
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable(f"repro's {name} directory is missing from this installation",
                                 hint=f"reinstall repro, or point {NAMES[name]} at a copy of it")
    return Path(next(iter(spec.submodule_search_locations)))


def locate_inventory(text: str | Path) -> Path:
    """An inventory by path, or by name: NAME in ./inventories, then among the site's or repro's shipped
    inventories ($REPRO_INVENTORIES, [site] inventories, else the ones repro ships: `--hosts c4140`)."""
    path = Path(text)
    if path.exists():
        return path
    parts = path.parts
    name = parts[-1] if len(parts) == 1 or (len(parts) == 2 and parts[0] == "inventories") else None
    if name and name not in (".", ".."):
        for folder in (Path("inventories"), data_dir("inventories")):
            if (folder / name).exists():
                return folder / name
    return path


def inventory_names() -> list[str]:
    """The inventories that can be named: those in ./inventories and the site's or repro's shipped ones."""
    names: set[str] = set()
    for folder in (Path("inventories"), data_dir("inventories")):
        if folder.is_dir():
            names |= {p.name for p in folder.iterdir() if not p.name.startswith((".", "_"))}
    return sorted(names)


EXAMPLES = ("stacks", "inventories/localhost")  # what `repro init` writes to start from


def copy_examples(target: Path, *, force: bool = False) -> list[Path]:
    """Copy the shipped example stacks and the localhost inventory into `target`; the files written.

    InputError naming the files that exist already unless `force` (nothing is written then).
    """
    import shutil

    pairs: list[tuple[Path, Path]] = []
    for example in EXAMPLES:
        kind, _, sub = example.partition("/")
        source = data_dir(kind) / sub if sub else data_dir(kind)
        for path in sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            pairs.append((path, target / example / path.relative_to(source)))
    existing = [dest for _, dest in pairs if dest.exists()]
    if existing and not force:
        raise InputError(f"{target}: {len(existing)} file(s) exist already, e.g. {existing[0]}",
                         hint="choose an empty directory, or --force to overwrite them")
    for source, dest in pairs:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
    return [dest for _, dest in pairs]
