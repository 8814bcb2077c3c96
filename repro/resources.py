"""Where repro's own files are: image templates, Ansible playbooks, example stacks and inventories.

In a checkout they are the top-level directories `docker/`, `playbooks/`, `stacks/`, `inventories/`. An
installed wheel carries the same directories as the packages `repro._data.<name>` (pyproject.toml maps
them), found through the import system (importlib). A site overrides any of them with an environment variable
(`REPRO_DOCKER_TEMPLATES`, `REPRO_PLAYBOOKS`, `REPRO_STACKS`, `REPRO_INVENTORIES`) or the same keys in a
config file (`repro.toml` in the working directory, else `$XDG_CONFIG_HOME/repro/config.toml`):

    [site]
    playbooks = "/srv/repro/playbooks"
    store = "/nfs/team/repro-results"
"""

from __future__ import annotations

import importlib.util
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from repro.errors import BackendUnavailable, InputError
from repro.files import FileProblem, read_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package (a dependency there)
    import tomli as tomllib

NAMES = {"docker": "REPRO_DOCKER_TEMPLATES", "playbooks": "REPRO_PLAYBOOKS", "stacks": "REPRO_STACKS",
         "inventories": "REPRO_INVENTORIES"}
CONFIG_KEYS = {"docker": "docker_templates", "playbooks": "playbooks", "stacks": "stacks",
               "inventories": "inventories", "store": "store"}
_CHECKOUT = Path(__file__).resolve().parent.parent


def config_file() -> Path | None:
    """The site configuration in use: ./repro.toml, else $XDG_CONFIG_HOME/repro/config.toml, else none."""
    here = Path("repro.toml")
    if here.is_file():
        return here
    home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "repro" / "config.toml"
    return home if home.is_file() else None


@cache
def _site(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = tomllib.loads(read_file(path).decode("utf-8"))
    except (FileProblem, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{path}: unreadable repro configuration ({exc})") from None
    site = data.get("site", {})
    if not isinstance(site, dict) or any(k not in CONFIG_KEYS.values() or not isinstance(v, str)
                                         for k, v in site.items()):
        raise InputError(f"{path}: [site] takes text values for {', '.join(CONFIG_KEYS.values())}")
    return site


def site_setting(key: str) -> str | None:
    """A [site] value of the configuration file, or None."""
    found = config_file()
    return _site(str(found) if found else None).get(key)


def data_dir(name: str) -> Path:
    """The directory of one of repro's data sets (docker, playbooks, stacks, inventories), as a real path."""
    override = os.environ.get(NAMES[name]) or site_setting(CONFIG_KEYS[name])
    if override:
        return Path(override).expanduser()
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
