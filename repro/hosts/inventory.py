"""Ansible inventories as repro sees them: an ordered set of hosts with address, SSH and slots.

The inventory is read by Ansible itself (`ansible-inventory --list`), so INI, YAML, group_vars and
host_vars all work as they do for the playbooks. The variables repro reads are listed in
docs/design.md ("Inventory contract"). Every one is checked here, where it enters, against its kind
in repro.inputs (repro.hosts.inventory_vars); a bad value is an InventoryError located in the inventory's files
(file:line:column). Running ansible-inventory itself, bounded, is repro.hosts.inventory_listing's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro import inputs
from repro.errors import Diagnostic, InventoryError, Location
from repro.hosts.inventory_listing import check_sources, list_inventory, list_timeout
from repro.hosts.inventory_vars import Problems, checked_vars, show

WORKERS_GROUP = "workers"
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
MAX_HOSTS = 10_000


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


def _host(problems: Problems, name: str, hv: dict[str, Any]) -> Host | None:
    before = len(problems.diagnostics)
    v = checked_vars(problems, name, hv)
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
    problems = Problems(p, _groups_of_hosts(raw))
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
    check_sources(p)
    return inventory_from_listing(list_inventory(p, list_timeout() if timeout is None else timeout), p)
