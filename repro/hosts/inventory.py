"""Ansible inventories as repro sees them: an ordered set of hosts with address, SSH and slots.

The inventory is read by Ansible itself (`ansible-inventory --list`), so INI, YAML, group_vars and
host_vars all work as they do for the playbooks. The variables repro reads are listed in
docs/design.md ("Inventory contract"). Every one is checked here, where it enters, against its kind
in repro.inputs; a bad value is an InventoryError located in the inventory's files (file:line:column).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from repro import inputs
from repro.errors import Diagnostic, InventoryError, Location
from repro.hosts import ssh_trust
from repro.hosts.inventory_files import InventoryFiles
from repro.hosts.listing_errors import ansible_reason
from repro.manifest.schema import InterNodePath, IntraNodePath

WORKERS_GROUP = "workers"
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
DEFAULT_LIST_TIMEOUT = 120.0  # seconds; REPRO_INVENTORY_TIMEOUT overrides
MAX_HOSTS = 10_000
QUIET_LISTING = frozenset({"ANSIBLE_VERBOSITY", "ANSIBLE_DEBUG", "ANSIBLE_STDOUT_CALLBACK",
                           "ANSIBLE_LOAD_CALLBACK_PLUGINS", "ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_CALLBACK_WHITELIST",
                           "ANSIBLE_LOG_PATH"})


@dataclass(frozen=True)
class Host:
    """One host of an inventory, with what repro needs to reach and use it (every value checked)."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    local: bool = False
    slots: int = 1
    gpus: int = 0
    docker_host: str = DEFAULT_DOCKER_HOST
    interface: str = "eth0"
    python: str = "python3"
    registry: str | None = None
    dataset_dir: str | None = None
    infiniband: bool = False
    link_gbps: float | None = None
    launch_key: str | None = None
    launch_known_hosts: str | None = None
    vars: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    groups: frozenset[str] = field(default=frozenset({"all"}), compare=False, repr=False)  # to locate its vars


@dataclass(frozen=True)
class Inventory:
    """The hosts repro uses from an inventory (group `workers`, else all), in inventory order."""

    path: str
    hosts: tuple[Host, ...]

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise InventoryError(f"{self.path}: no host named {name}")

    @property
    def slots(self) -> int:
        return sum(h.slots for h in self.hosts)

    @property
    def local_only(self) -> bool:
        return all(h.local for h in self.hosts)


# ---------------------------------------------------------------- the variables repro reads


def _text(kind: inputs.Kind) -> Callable[[object], object]:
    def check(value: object) -> object:
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            raise inputs.InputValueError("holds a Jinja template; ansible-inventory does not render templates, "
                                         "so write the value itself")
        return kind.check(value)

    return check


def _int(minimum: int, maximum: int) -> Callable[[object], int]:
    return lambda value: inputs.integer(value, minimum=minimum, maximum=maximum)


def _checking_on(value: object) -> object:
    if inputs.boolean(value) is not True:
        raise inputs.InputValueError("turns host-key checking off; repro checks host keys on every SSH connection "
                                     "(record the host's key in known_hosts instead)")
    return True


def _checked(problem: Callable[[object], str | None]) -> Callable[[object], object]:
    def check(value: object) -> object:
        why = problem(value)
        if why:
            raise inputs.InputValueError(why)
        return value

    return check


def _one_of(names: tuple[str, ...]) -> Callable[[object], object]:
    def check(value: object) -> object:
        if not isinstance(value, str) or value not in names:
            raise inputs.InputValueError(f"one of {', '.join(names)}")
        return value

    return check


def _owned(value: object) -> object:
    raise inputs.InputValueError("repro sets this itself: it decides which ssh program runs and which host keys "
                                 "it trusts (put other ssh options in ansible_ssh_common_args)")


# variable -> its check, which returns the value to use (normalised: "true" from INI becomes True)
VARIABLES: dict[str, Callable[[object], object]] = {
    "ansible_host": _text(inputs.HOST_NAME),
    "ansible_port": _int(1, 65535),
    "ansible_user": _text(inputs.USER_NAME),
    "ansible_ssh_private_key_file": _text(inputs.PATH),
    "ansible_connection": _checked(ssh_trust.connection_problem),
    "repro_known_hosts": _checked(ssh_trust.known_hosts_problem),
    "repro_slots": _int(1, 4096),
    "repro_gpus": _int(0, 1024),
    "repro_docker_host": _text(inputs.DOCKER_ENDPOINT),
    "repro_interface": _text(inputs.INTERFACE),
    "repro_python": _text(inputs.COMMAND),
    "repro_registry": _text(inputs.REGISTRY),
    "repro_dataset_dir": _text(inputs.DATA_DIR),
    "repro_infiniband": inputs.boolean,
    "repro_link_gbps": lambda v: inputs.number(v, minimum=0.001, maximum=100_000.0),
    "repro_launch_key": _text(inputs.SSH_PATH),
    "repro_launch_known_hosts": _text(inputs.SSH_PATH),
    # the path NCCL must take on these hosts (docs/fabric.md; repro.launch.expect): the names of a stack's `expect`
    "repro_expect_inter_node": _one_of(get_args(InterNodePath)),
    "repro_expect_intra_node": _one_of(get_args(IntraNodePath)),
    # Ansible's own switches of host-key checking: only "on" is accepted
    "ansible_host_key_checking": _checking_on,
    "ansible_ssh_host_key_checking": _checking_on,
    "ansible_paramiko_host_key_checking": _checking_on,
    "ansible_ssh_common_args": _checked(ssh_trust.args_problem),
    "ansible_ssh_extra_args": _checked(ssh_trust.args_problem),
    "ansible_scp_extra_args": _checked(ssh_trust.args_problem),
    "ansible_sftp_extra_args": _checked(ssh_trust.args_problem),
    # what repro sets itself (ansible_ssh_args: its trust options; the ssh programs), checked for a clear message
    "ansible_ssh_args": lambda v: _owned(_checked(ssh_trust.args_problem)(v)),
    **{var: _owned for var in sorted(ssh_trust.OWNED_VARS - {"ansible_ssh_args"})},
}


class _Problems:
    """Diagnostics of one inventory, located lazily (the files are read only when something is wrong)."""

    def __init__(self, path: Path, groups: dict[str, frozenset[str]]) -> None:
        self.path = path
        self.groups = groups
        self.diagnostics: list[Diagnostic] = []
        self._files: InventoryFiles | None = None

    @property
    def files(self) -> InventoryFiles:
        if self._files is None:
            self._files = InventoryFiles(self.path)
        return self._files

    def bad_host(self, name: object, why: str) -> None:
        where = self.files.host(name) if isinstance(name, str) else None
        self.diagnostics.append(Diagnostic(f"bad host name: {why}", where or Location(str(self.path)), "hosts",
                                           hint="a host name becomes a file name in the store and an ssh argument"))

    def bad_var(self, host: str, var: str, value: object, why: str) -> None:
        where = self.files.variable(host, var, self.groups.get(host, frozenset({"all"})), value)
        self.diagnostics.append(Diagnostic(why, where or self.files.host(host) or Location(str(self.path)),
                                           f"{host}.{var}", found=show(value)))


def show(value: object) -> str:
    """A value as a message may show it: short, escapes visible."""
    text = ascii(value) if isinstance(value, str) else repr(value) if isinstance(value, (bool, float)) else \
        (repr(value) if isinstance(value, int) and abs(value) < 10**30 else type(value).__name__)
    return text if len(text) <= 60 else text[:57] + "..."


def _checked_vars(problems: _Problems, name: str, hv: dict[str, Any]) -> dict[str, Any]:
    """The host's variables with every variable of the inventory contract checked and normalised."""
    out = dict(hv)
    for var, check in VARIABLES.items():
        if var not in hv or hv[var] is None:
            out.pop(var, None)
            continue
        try:
            out[var] = check(hv[var])
        except inputs.InputValueError as exc:
            problems.bad_var(name, var, hv[var], str(exc))
            out.pop(var, None)
    return out


def _host(problems: _Problems, name: str, hv: dict[str, Any]) -> Host | None:
    before = len(problems.diagnostics)
    v = _checked_vars(problems, name, hv)
    if len(problems.diagnostics) > before:
        return None
    local = v.get("ansible_connection") == "local"
    gpus = v.get("repro_gpus", 0)
    known = v.get("repro_known_hosts")
    return Host(
        name=name,
        address=v.get("ansible_host", "127.0.0.1" if local else name),
        port=v.get("ansible_port", 22),
        user=v.get("ansible_user"),
        key_file=v.get("ansible_ssh_private_key_file"),
        known_hosts=str(Path(known).expanduser()) if known else None,
        local=local,
        slots=v.get("repro_slots", gpus or 1),
        gpus=gpus,
        docker_host=v.get("repro_docker_host", DEFAULT_DOCKER_HOST),
        interface=v.get("repro_interface", "lo" if local else "eth0"),
        python=v.get("repro_python", sys.executable if local else "python3"),
        registry=v.get("repro_registry"),
        dataset_dir=v.get("repro_dataset_dir"),
        infiniband=v.get("repro_infiniband", False),
        link_gbps=v.get("repro_link_gbps"),
        launch_key=v.get("repro_launch_key"),
        launch_known_hosts=v.get("repro_launch_known_hosts"),
        vars=v,
        groups=problems.groups.get(name, frozenset({"all"})),
    )


# ---------------------------------------------------------------- the listing


def _group(raw: dict[str, Any], name: str) -> dict[str, Any]:
    group = raw.get(name)
    return group if isinstance(group, dict) else {}


def _names(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


def _ordered_hosts(raw: dict[str, Any]) -> list[object]:
    workers = _names(_group(raw, WORKERS_GROUP).get("hosts"))
    if workers:
        return workers
    seen: list[object] = []

    def walk(group: str, depth: int = 0) -> None:
        if depth > 50:
            return
        for h in _names(_group(raw, group).get("hosts")):
            if h not in seen:
                seen.append(h)
        for child in _names(_group(raw, group).get("children")):
            if isinstance(child, str):
                walk(child, depth + 1)

    walk("all")
    return seen


def _groups_of_hosts(raw: dict[str, Any]) -> dict[str, frozenset[str]]:
    """host -> every group it belongs to, directly or through children ("all" always)."""
    out: dict[str, set[str]] = {}

    def walk(group: str, parents: tuple[str, ...]) -> None:
        if len(parents) > 50 or group in parents:
            return
        chain = (*parents, group)
        for h in _names(_group(raw, group).get("hosts")):
            if isinstance(h, str):
                out.setdefault(h, {"all"}).update(chain)
        for child in _names(_group(raw, group).get("children")):
            if isinstance(child, str):
                walk(child, chain)

    walk("all", ())
    return {h: frozenset(g) for h, g in out.items()}


def inventory_from_listing(raw: object, path: str | Path) -> Inventory:
    """The hosts of an `ansible-inventory --list` listing, every value checked; InventoryError otherwise.

    This is the code path of load_inventory after Ansible has run: the fuzz tests call it directly with
    listings of generated inventory files.
    """
    p = Path(path)
    if not isinstance(raw, dict):
        raise InventoryError(f"{path}: ansible-inventory printed no inventory",
                             [Diagnostic("the listing is not a JSON object", Location(str(path)))])
    names = _ordered_hosts(raw)
    if not names:  # a file: its first line (nothing in it is a host); a directory holds no one line to name
        raise InventoryError(f"{path}: the inventory has no hosts",
                             [Diagnostic("no hosts (put them in group 'workers')",
                                         Location(str(path), 1 if p.is_file() else None), "hosts")])
    problems = _Problems(p, _groups_of_hosts(raw))
    if len(names) > MAX_HOSTS:
        first_over = names[MAX_HOSTS] if isinstance(names[MAX_HOSTS], str) else None
        where = (problems.files.host(first_over) if first_over else None) or Location(str(path))
        raise InventoryError(f"{path}: {len(names)} hosts; repro uses at most {MAX_HOSTS}",
                             [Diagnostic(f"{len(names)} hosts, the first past {MAX_HOSTS}: {show(first_over)}", where,
                                         "hosts", expected=f"at most {MAX_HOSTS} hosts")])
    meta = raw.get("_meta")
    hostvars = meta.get("hostvars") if isinstance(meta, dict) else None
    hostvars = hostvars if isinstance(hostvars, dict) else {}
    hosts = []
    for name in names:
        why = inputs.INVENTORY_NAME.problem(name)
        if why:
            problems.bad_host(name, why)
            continue
        hv = hostvars.get(name)
        host = _host(problems, name, hv if isinstance(hv, dict) else {})
        if host is not None:
            hosts.append(host)
    if problems.diagnostics:
        raise InventoryError(f"{path}: {len(problems.diagnostics)} bad value(s) in the inventory",
                             problems.diagnostics, hint="the inventory contract is in docs/design.md")
    return Inventory(str(path), tuple(hosts))


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


def _listing(path: Path, timeout: float) -> Any:
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


def load_inventory(path: str | Path, *, timeout: float | None = None) -> Inventory:
    """Read an Ansible inventory file or directory into the hosts repro will use."""
    why = inputs.PATH.problem(str(path))
    if why:
        raise InventoryError(f"bad inventory path: {why}")
    from repro.resources import inventory_names, locate_inventory

    p = locate_inventory(path)  # a path, or a name: ./inventories/NAME, then $REPRO_INVENTORIES or repro's own
    if not p.exists():
        import difflib

        close = difflib.get_close_matches(p.name, inventory_names(), n=1)
        raise InventoryError(f"{path}: no such inventory",
                             [Diagnostic("no such file or directory", Location(str(path)),
                                         hint=(f"did you mean {close[0]}? " if close else "")
                                         + "an inventory is an Ansible inventory file or directory, or the name "
                                         f"of one (known: {', '.join(inventory_names()) or 'none'})")])
    _check_sources(p)
    return inventory_from_listing(_listing(p, list_timeout() if timeout is None else timeout), p)


MAX_INVENTORY_BYTES = 16 << 20  # per file: far beyond any real inventory, far below what would fill memory
MAX_INVENTORY_ENTRIES = 10_000


def _check_sources(path: Path) -> None:
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
