"""Placement (pure): which hosts a point's workers run on, filled in inventory order up to each host's slots."""

from __future__ import annotations

from dataclasses import dataclass

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory


@dataclass(frozen=True)
class Placement:
    """How many workers run on one host."""

    host: Host
    ranks: int


def place(inventory: Inventory, workers: int) -> tuple[Placement, ...]:
    """Fill hosts in inventory order, each up to its slots (seed 003: -H 192.168.11.1:4,192.168.11.2:4)."""
    if workers > inventory.slots:
        raise InputError(f"{workers} workers do not fit the inventory {inventory.path}: "
                         f"{inventory.slots} slots on {len(inventory.hosts)} hosts",
                         hint="lower --workers, or raise repro_slots in the inventory")
    out, left = [], workers
    for host in inventory.hosts:
        if left == 0:
            break
        n = min(host.slots, left)
        out.append(Placement(host, n))
        left -= n
    return tuple(out)


def host_list(placement: tuple[Placement, ...], *, local_names: bool = False) -> str:
    """mpirun's -H value: addr:slots,addr:slots (localhost for a local single host)."""
    return ",".join(f"{'localhost' if local_names and p.host.local else p.host.address}:{p.ranks}"
                    for p in placement)
