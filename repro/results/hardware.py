"""What one run's record tells of the hardware it ran on (pure): GPU models, interconnects, systems.

repro.compare.align.hardware gathers these over a side; the store's index keeps them per run
(repro.results.indexed), so a comparison does not parse every record to learn them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro.results.memo import Memo

if TYPE_CHECKING:
    from repro.results.provenance import HostFacts
    from repro.results.record import RunRecord

Parts = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]  # GPU models, interconnects, systems; sorted
_MEMO = Memo()


def gpu_model(device: str) -> str:
    """The model in a rank's device string: 'GPU:0 Tesla V100-SXM2-16GB' -> 'Tesla V100-SXM2-16GB', 'CPU' -> 'CPU'."""
    text = device.strip()
    head, _, rest = text.partition(" ")
    if head.upper().startswith("GPU") and rest.strip():
        return rest.strip()
    return text


def link(host: HostFacts) -> str | None:
    """'infiniband 100 Gb/s' from a host's MPI/NCCL interface and its kind."""
    iface = host.interface
    if not iface.name:
        return None
    kind = next((i.kind for i in host.interfaces if i.name == iface.name), None)
    gbps = iface.link_gbps
    return f"{kind or iface.name}" + (f" {gbps:g} Gb/s" if gbps is not None else "")


def parts(record: RunRecord) -> Parts:
    """The GPU models (ranks' devices, hosts' facts, declared hardware), interconnects (the hosts' MPI/NCCL
    interface, or declared) and systems (a published figure's, or settings.extra's) one run names."""
    return _MEMO.get(record, "hardware", lambda: _parts(record))


def _parts(record: RunRecord) -> Parts:
    gpus: set[str] = {gpu_model(rank.device) for rank in record.ranks if rank.device}
    nets: set[str] = set()
    systems: set[str] = set()
    if record.hardware is not None:
        gpus |= {record.hardware.gpu} if record.hardware.gpu else set()
        nets |= {record.hardware.interconnect} if record.hardware.interconnect else set()
    for host in record.facts.values():
        gpus |= {g.name for g in host.gpus if g.name}
        found = link(host)
        if found:
            nets.add(found)
    if record.published is not None and record.published.system:
        systems.add(record.published.system)
    elif isinstance(record.settings.extra.get("system"), str):
        systems.add(record.settings.extra["system"])
    return tuple(sorted(gpus)), tuple(sorted(nets)), tuple(sorted(systems))
