"""Running `ansible-inventory --list` on an inventory, bounded: its sources checked first (regular files of bounded
size), its environment quietened, its process group stopped on a timeout, its JSON output parsed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from repro import inputs
from repro.errors import Diagnostic, InventoryError, Location
from repro.hosts.listing_errors import ansible_reason

DEFAULT_LIST_TIMEOUT = 120.0  # seconds; REPRO_INVENTORY_TIMEOUT overrides
QUIET_LISTING = frozenset({"ANSIBLE_VERBOSITY", "ANSIBLE_DEBUG", "ANSIBLE_STDOUT_CALLBACK",
                           "ANSIBLE_LOAD_CALLBACK_PLUGINS", "ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_CALLBACK_WHITELIST",
                           "ANSIBLE_LOG_PATH"})


def _ansible_inventory() -> str | None:
    """The ansible-inventory program, or None when Ansible is not installed (repro[hosts])."""
    exe = shutil.which("ansible-inventory") or str(Path(sys.executable).with_name("ansible-inventory"))
    return exe if Path(exe).exists() else None


def list_timeout() -> float:
    """Seconds ansible-inventory may take: REPRO_INVENTORY_TIMEOUT, else 120."""
    text = os.environ.get("REPRO_INVENTORY_TIMEOUT", "")
    try:
        return inputs.number(text, minimum=0.1, maximum=86400.0) if text else DEFAULT_LIST_TIMEOUT
    except inputs.InputValueError as exc:
        raise InventoryError(f"REPRO_INVENTORY_TIMEOUT: {exc}") from None


def _stop(proc: subprocess.Popen) -> None:
    """Stop ansible-inventory and everything it started (its own process group): TERM, a wait, then KILL.

    The KILL goes to the whole group even when the leader obeyed TERM: an inventory script's children
    that ignore TERM, or were never told, must not outlive the listing.
    """
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=3.0)
    _kill_group(proc.pid)
    proc.wait()


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _bounded_int(text: str) -> int | str:
    # json.loads would raise on an integer of more than 4,300 digits; keep such a number as its text
    return int(text) if len(text) <= 40 else text


def list_inventory(path: Path, timeout: float) -> Any:
    """ansible-inventory's listing of `path` as data (YAML read directly without Ansible), within `timeout`."""
    # verbosity and debugging print to stdout, which must hold only the JSON listing
    env = {**{k: v for k, v in os.environ.items() if k not in QUIET_LISTING},
           "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_DEPRECATION_WARNINGS": "false", "ANSIBLE_FORCE_COLOR": "0"}
    exe = _ansible_inventory()
    if exe is None:  # without the repro[hosts] extra: plain YAML inventories are read directly
        from repro.hosts.inventory_yaml import listing

        return listing(path)
    argv = [exe, "-i", str(path), "--list"]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                          errors="replace", env=env, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
            proc.communicate()
            raise InventoryError(
                f"{path}: ansible-inventory did not list the inventory within {timeout:g} s; repro stopped it and "
                "every process it started",
                [Diagnostic(f"listing took longer than {timeout:g} s", Location(str(path)))],
                hint="an inventory script or plugin hangs (or is slow: set REPRO_INVENTORY_TIMEOUT=SECONDS)") from None
        except BaseException:
            _stop(proc)
            raise
        finally:
            if proc.poll() is None:
                _stop(proc)
            else:  # what an inventory script left behind in the group
                _kill_group(proc.pid)
    if proc.returncode != 0:
        raise InventoryError(f"{path}: Ansible cannot read this inventory", ansible_reason(err, path))
    return parse_listing(out, path)


def parse_listing(text: str, path: str | Path) -> Any:
    """ansible-inventory's JSON output as data; an integer of more than 40 digits stays text."""
    try:
        return json.loads(text, parse_int=_bounded_int)
    except (ValueError, RecursionError):
        raise InventoryError(f"{path}: ansible-inventory printed no inventory",
                             [Diagnostic("its output is not JSON", Location(str(path)))]) from None


MAX_INVENTORY_BYTES = 16 << 20  # per file: far beyond any real inventory, far below what would fill memory
MAX_INVENTORY_ENTRIES = 10_000


def check_sources(path: Path) -> None:
    """Refuse, before ansible-inventory reads it, an inventory that is not regular files of bounded size (a FIFO
    would block it, /dev/zero or a 2 GB file would grow it to gigabytes): the file, or every entry of the
    directory (bounded walk)."""
    from repro.files import FileProblem, regular_file

    todo, seen = [path], 0
    while todo:
        here = todo.pop()
        if here.is_dir():
            try:
                entries = sorted(here.iterdir())
            except OSError as exc:
                raise InventoryError(f"{here}: unreadable inventory directory ({exc.strerror or exc})") from None
            seen += len(entries)
            if seen > MAX_INVENTORY_ENTRIES:
                raise InventoryError(f"{path}: more than {MAX_INVENTORY_ENTRIES:,} files; not an inventory")
            todo += [e for e in entries if not e.name.startswith(".")]
            continue
        try:
            regular_file(here, MAX_INVENTORY_BYTES)
        except FileProblem as exc:
            raise InventoryError(f"{here}: {exc}; an inventory is regular files",
                                 [Diagnostic(str(exc), Location(str(here)))],
                                 hint="give an inventory file or directory") from None
