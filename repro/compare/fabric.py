"""Why two runs may differ beyond software: the path NCCL took on each side, and the NCCL each loaded (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from repro.compare import align as _align
from repro.results.fabric import Fabric, difference
from repro.results.record import RunRecord


def _fabric(records: Sequence[RunRecord]) -> Fabric | None:
    return next((r.fabric for r in records if r.fabric is not None and r.fabric.lines), None)


def reported_nccl(record: RunRecord) -> str | None:
    """The NCCL the framework reports for a run (torch.cuda.nccl.version() as locked or probed), if known."""
    for software in record.host_software.values():
        bundled = next((f.build["nccl"] for f in software.frameworks.values() if f.build.get("nccl")), None)
        if bundled:
            return bundled
    if record.image is not None:  # a lock's versions: the framework's own key (torch_nccl)
        return next((v for k, v in record.image.versions.items() if k.endswith("_nccl") and v), None)
    return None


def loaded_nccl_notes(side: str, records: Sequence[RunRecord]) -> list[str]:
    """'OLD loaded NCCL 2.14.3, the stack pins 2.19.3' for each way a side's loaded NCCL differs from what it
    was meant to run (the stack's pin) or what the framework says it runs."""
    fabric = _fabric(records)
    if fabric is None or not fabric.version:
        return []
    loaded = fabric.version.split("+", 1)[0]
    record = next(r for r in records if r.fabric is fabric)
    out = []
    pinned = record.stack.manifest.get("nccl")
    if isinstance(pinned, str) and pinned and not loaded.startswith(pinned.split("-", 1)[0]):
        out.append(f"{side} loaded NCCL {fabric.version}, the stack pins {pinned}")
    reported = reported_nccl(record)
    if reported and reported != loaded:
        out.append(f"{side} loaded NCCL {fabric.version}, the framework reports {reported}")
    return out


def fabric_lines(pairs: Sequence[_align.Pair]) -> tuple[str, ...]:
    """One line per aligned point whose OLD and NEW runs took different paths, then the loaded-NCCL notes."""
    out: list[str] = []
    for pair in pairs:
        changed = difference(_fabric(pair.old.records), _fabric(pair.new.records))
        if changed:
            point = ", ".join(f"{k}={_align.format_value(v)}" for k, v in pair.key if v is not None)
            out.append(f"fabric differed ({point}): " + "; ".join(changed))
    for side, records in (("OLD", [r for p in pairs for r in p.old.records]),
                          ("NEW", [r for p in pairs for r in p.new.records])):
        out.extend(dict.fromkeys(loaded_nccl_notes(side, records)))
    return tuple(out)
