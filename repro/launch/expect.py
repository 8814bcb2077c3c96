"""The path NCCL must take on a sweep (docs/fabric.md): the stack's `expect`, with the inventory's
`repro_expect_inter_node` / `repro_expect_intra_node` (a cluster knows its fabric, whichever stack runs on it).

Both must hold: a run that took another path is a failed run naming the path it took (repro.launch.collect).
Refused at plan time, with one line naming the file and line: an inventory's expectation on a CPU stack (no NCCL
runs there), hosts of one sweep expecting different paths, and a stack and an inventory that expect different
ones (no run could meet both).
"""

from __future__ import annotations

from pathlib import Path

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.hosts.inventory_files import InventoryFiles

VARIABLES = {"inter_node": "repro_expect_inter_node", "intra_node": "repro_expect_intra_node"}


def _where(inventory: Inventory, host: Host, var: str) -> str:
    found = InventoryFiles(Path(inventory.path)).variable(host.name, var, host.groups, host.vars.get(var)) \
        if inventory.path else None
    return f"{found or inventory.path or 'inventory'}: {var}"


def sweep_expectation(stack_expect: dict[str, str | None] | None, *, gpu: bool, stack: str, inventory: Inventory,
                      hosts: list[Host]) -> dict[str, str]:
    """The paths a sweep's runs must take: the stack's and the inventory's (of the sweep's `hosts`); InputError
    (one line, at the inventory's file and line) where they cannot be asked for or disagree."""
    wanted = {k: v for k, v in (stack_expect or {}).items() if v}
    for key, var in VARIABLES.items():
        declared = [(h, h.vars[var]) for h in hosts if h.vars.get(var)]
        if not declared:
            continue
        host, value = declared[0]
        if not gpu:
            raise InputError(f"{_where(inventory, host, var)}: the path NCCL must take, but stack {stack} is a CPU "
                             "stack (no NCCL runs there)", hint=f"remove {var}, or run a GPU stack")
        other = next(((h, v) for h, v in declared if v != value), None)
        if other is not None:
            raise InputError(f"{_where(inventory, other[0], var)}: {other[1]} on {other[0].name}, but {value} on "
                             f"{host.name}: the hosts of one sweep must expect one path")
        if wanted.get(key, value) != value:
            raise InputError(f"{_where(inventory, host, var)}: {value}, but stack {stack} expects "
                             f"{key}: {wanted[key]}: no run can take both paths")
        wanted[key] = value
    return wanted
