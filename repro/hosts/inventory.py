"""Ansible inventories as repro sees them: an ordered set of hosts with address, SSH and slots.

The inventory is read by Ansible itself (`ansible-inventory --list`), so INI, YAML, group_vars and
host_vars all work as they do for the playbooks. The variables repro reads are listed in
docs/design.md ("Inventory contract").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from repro.errors import BackendUnavailable, Diagnostic, InventoryError, Location

WORKERS_GROUP = "workers"
DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"


@dataclass(frozen=True)
class Host:
    """One host of an inventory, with what repro needs to reach and use it."""

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
    vars: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


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


def _ansible_inventory() -> str:
    exe = shutil.which("ansible-inventory") or str(Path(sys.executable).with_name("ansible-inventory"))
    if not Path(exe).exists():
        raise BackendUnavailable("ansible-inventory not found", hint="install repro's dependencies (ansible-core)")
    return exe


def _raw(path: Path) -> dict[str, Any]:
    env = {**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "true", "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_DEPRECATION_WARNINGS": "false"}
    proc = subprocess.run([_ansible_inventory(), "-i", str(path), "--list"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise InventoryError(f"{path}: Ansible cannot read this inventory",
                             [Diagnostic(" ".join(lines[-3:]) or "ansible-inventory failed", Location(str(path)))])
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise InventoryError(f"{path}: ansible-inventory printed no inventory") from None


def _ordered_hosts(raw: dict[str, Any]) -> list[str]:
    if WORKERS_GROUP in raw and raw[WORKERS_GROUP].get("hosts"):
        return list(raw[WORKERS_GROUP]["hosts"])
    seen: list[str] = []

    def walk(group: str, depth: int = 0) -> None:
        if depth > 50 or group not in raw:
            return
        for h in raw[group].get("hosts", []):
            if h not in seen:
                seen.append(h)
        for child in raw[group].get("children", []):
            walk(child, depth + 1)

    walk("all")
    return seen


def _locate(path: Path, host: str, var: str) -> Location:
    """Line of `var` under `host` in a YAML inventory, when repro can find it (else just the file)."""
    from repro.errors import ManifestError
    from repro.manifest.loader import load

    files = [path] if path.is_file() else sorted(path.glob("*.y*ml")) + sorted(path.glob("host_vars/*.y*ml"))
    for f in files:
        try:
            doc = load(f)
        except ManifestError:
            continue
        for p, loc in doc.keys.items():
            if p[-1] == var and (host in p or f.stem == host):
                return loc
    return Location(str(path))


def _int(path: Path, host: str, hv: dict[str, Any], var: str, default: int, minimum: int) -> int:
    value = hv.get(var, default)
    try:
        number = int(value)
        if isinstance(value, bool) or (str(number) != str(value).strip() and not isinstance(value, int)):
            raise ValueError
    except (TypeError, ValueError):
        number = None
    if number is None or number < minimum:
        raise InventoryError(f"{path}: bad value for {var} of host {host}",
                             [Diagnostic(f"{var} must be a whole number >= {minimum}", _locate(path, host, var),
                                         f"{host}.{var}", f"an integer >= {minimum}", repr(value))])
    return number


def _host(path: Path, name: str, hv: dict[str, Any]) -> Host:
    local = hv.get("ansible_connection") == "local"
    gpus = _int(path, name, hv, "repro_gpus", 0, 0)
    known = hv.get("repro_known_hosts")
    return Host(
        name=name,
        address=str(hv.get("ansible_host", "127.0.0.1" if local else name)),
        port=_int(path, name, hv, "ansible_port", 22, 1),
        user=hv.get("ansible_user"),
        key_file=hv.get("ansible_ssh_private_key_file"),
        known_hosts=str(Path(known).expanduser()) if known else None,
        local=local,
        slots=_int(path, name, hv, "repro_slots", gpus or 1, 1),
        gpus=gpus,
        docker_host=str(hv.get("repro_docker_host", DEFAULT_DOCKER_HOST)),
        interface=str(hv.get("repro_interface", "lo" if local else "eth0")),
        python=str(hv.get("repro_python", sys.executable if local else "python3")),
        registry=hv.get("repro_registry"),
        dataset_dir=hv.get("repro_dataset_dir"),
        vars=dict(hv),
    )


def load_inventory(path: str | Path) -> Inventory:
    """Read an Ansible inventory file or directory into the hosts repro will use."""
    p = Path(path)
    if not p.exists():
        raise InventoryError(f"{path}: no such inventory",
                             [Diagnostic("no such file or directory", Location(str(path)))],
                             hint="an inventory is an Ansible inventory file or directory, e.g. inventories/localhost")
    raw = _raw(p)
    names = _ordered_hosts(raw)
    if not names:
        raise InventoryError(f"{path}: the inventory has no hosts",
                             [Diagnostic("no hosts (put them in group 'workers')", Location(str(path)))])
    hostvars = raw.get("_meta", {}).get("hostvars", {})
    return Inventory(str(path), tuple(_host(p, n, hostvars.get(n, {})) for n in names))
