"""What changed between the two sides (pure): manifest diff, lock diff, software, compared settings, hardware.

Manifests (``record.stack.manifest``, the resolved stack) and locks (``record.lock``, what was found in
the image) are flattened to dotted paths and compared value by value, so "1.35x faster" can be printed
next to "tensorflow.version: 1.10.0 → 1.14.0" and "benchmark.xla: false → true". ``record.software``
(the versions a run reported, or an imported log showed: TensorFlow 1.15, NCCL 2.4.8) is diffed the
same way, so imported runs without a manifest still say what changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare.align import Change, format_value
from repro.results.indexed import provenance_key
from repro.results.record import RunRecord

LABELS = frozenset({"name", "description"})  # a stack's labels are not content (see canonical.py)

# Manifest paths worth naming in the one-line headline, with their short labels.
HEADLINE_PATHS = (
    ("tensorflow.version", "TensorFlow"), ("pytorch.version", "PyTorch"), ("pytorch.variant", "PyTorch build"),
    ("horovod.version", "Horovod"), ("cuda", "CUDA"), ("cudnn", "cuDNN"),
    ("nccl", "NCCL"), ("mpi.version", "MPI"), ("python", "Python"), ("os.version", "OS"),
)
HEADLINE_SOFTWARE = (("tensorflow", "TensorFlow"), ("horovod", "Horovod"), ("nccl", "NCCL"),
                     ("cuda_runtime", "CUDA"), ("python", "Python"))
HEADLINE_SETTINGS = {"xla": "XLA", "precision": "precision", "data_format": "data format", "batch_per_worker": "batch",
                     "backend": "controller", "model": "model", "workload": "workload", "data": "data"}


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as {dotted.path: leaf}; lists stay leaves (as compact JSON)."""
    out: dict[str, Any] = {}
    if isinstance(data, Mapping):
        if not data and prefix:
            out[prefix] = "{}"
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(data, (list, tuple)):
        out[prefix] = json.dumps(list(data), sort_keys=True, default=str)
    else:
        out[prefix] = data
    return out


def _side_values(flats: Sequence[dict[str, Any]], path: str) -> frozenset:
    return frozenset(f.get(path, None) for f in flats)


def diff_flat(old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]], *,
              skip: frozenset[str] = frozenset()) -> tuple[Change, ...]:
    """Paths whose values differ between the sides. A side with several values shows them as a | b."""
    if not old or not new:
        return ()
    paths = sorted({p for f in (*old, *new) for p in f} - skip)
    out = []
    for path in paths:
        a, b = _side_values(old, path), _side_values(new, path)
        if a == b:  # the same (or varying the same way within each side): not a difference between the sides
            continue
        out.append(Change(path, next(iter(a)) if len(a) == 1 else a, next(iter(b)) if len(b) == 1 else b))
    return tuple(out)


def _distinct(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for item in items:
        seen.setdefault(json.dumps(item, sort_keys=True, default=str), item)
    return list(seen.values())


def manifest_diff(old: Sequence[RunRecord], new: Sequence[RunRecord]) -> tuple[Change, ...]:
    """Differences of the resolved manifests (labels left out); empty when a side has none recorded."""
    a = _distinct([flatten(r.stack.manifest) for r in old if r.stack.manifest])
    b = _distinct([flatten(r.stack.manifest) for r in new if r.stack.manifest])
    return diff_flat(a, b, skip=LABELS)


def found_software(record: RunRecord) -> dict[str, Any]:
    """What was found where the ranks ran: the image's lock, or the software on each host (host runtime)."""
    if record.image is not None:
        return record.image.model_dump(mode="json")
    if record.host_software:
        other = _other_frameworks(record)
        hosts = {}
        for host, sw in record.host_software.items():
            found = sw.model_dump(mode="json", exclude_none=True)
            kept = {name: part for name, part in (found.pop("frameworks", None) or {}).items() if name not in other}
            hosts[host] = {**found, **({"frameworks": kept} if kept else {})}
        return {"runtime": "host", "hosts": hosts}
    return {}


def _other_frameworks(record: RunRecord) -> set[str]:
    """The frameworks the record's stack does not pin (Software.frameworks' keys): the host probe imports only the
    pinned one (earlier records found the others too), so they are no difference between two runs of a stack."""
    from repro.manifest.frameworks import FRAMEWORKS

    manifest = record.stack.manifest
    if not manifest:
        return set()
    pinned = [name for name in FRAMEWORKS.names() if manifest.get(name) is not None] or ["tensorflow"]
    return {name for name in FRAMEWORKS.names() if name not in pinned}


def lock_diff(old: Sequence[RunRecord], new: Sequence[RunRecord]) -> tuple[Change, ...]:
    """Differences of what was found in the images or on the hosts, whatever keys it holds."""
    a = _distinct([flatten(found_software(r)) for r in old if found_software(r)])
    b = _distinct([flatten(found_software(r)) for r in new if found_software(r)])
    return diff_flat(a, b)


def software_diff(old: Sequence[RunRecord], new: Sequence[RunRecord]) -> tuple[Change, ...]:
    """Differences of the software versions the runs reported (record.software), where both sides have some."""
    a = _distinct([flatten(r.software) for r in old if r.software])
    b = _distinct([flatten(r.software) for r in new if r.software])
    return diff_flat(a, b)


@dataclass(frozen=True)
class Changes:
    """Everything that differs between OLD and NEW, for the report's header."""

    manifest: tuple[Change, ...]
    lock: tuple[Change, ...]
    settings: tuple[Change, ...]
    hardware: tuple[Change, ...]
    software: tuple[Change, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.manifest or self.lock or self.settings or self.hardware or self.software)

    def headline(self) -> str:
        """One line for people: 'TensorFlow 1.10.0 → 1.14.0, XLA off → on'."""
        parts = []
        by_path = {c.path: c for c in self.manifest}
        for path, label in HEADLINE_PATHS:
            if path in by_path:
                c = by_path[path]
                parts.append(f"{label} {format_value(c.old)} → {format_value(c.new)}")
        named = {label for path, label in HEADLINE_PATHS if path in by_path}
        software = {c.path: c for c in self.software}
        for path, label in HEADLINE_SOFTWARE:
            if path in software and label not in named:
                parts.append(f"{label} {format_value(software[path].old)} → {format_value(software[path].new)}")
        for c in self.settings:
            label = HEADLINE_SETTINGS.get(c.path, c.path.removeprefix("extra."))
            if isinstance(c.old, bool) and isinstance(c.new, bool):
                parts.append(f"{label} {'on' if c.old else 'off'} → {'on' if c.new else 'off'}")
            else:
                parts.append(f"{label} {format_value(c.old)} → {format_value(c.new)}")
        if "benchmark.xla" in by_path and not any(c.path == "xla" for c in self.settings):
            c = by_path["benchmark.xla"]
            parts.append(f"XLA {'on' if c.old else 'off'} → {'on' if c.new else 'off'}")
        for c in self.hardware:
            parts.append(f"{c.path} {format_value(c.old)} → {format_value(c.new)}")
        return ", ".join(parts)


def one_per_provenance(records: Sequence[RunRecord]) -> list[RunRecord]:
    """The first record of each distinct provenance (repro.results.indexed.provenance_key): the manifests, locks
    and software of the others are the same, so only these are read whole."""
    first: dict[str, RunRecord] = {}
    for r in records:
        first.setdefault(provenance_key(r), r)
    return list(first.values())


def changes(old: Sequence[RunRecord], new: Sequence[RunRecord], settings: Sequence[Change],
            hardware: Sequence[Change]) -> Changes:
    """Collect every kind of difference between the sides."""
    old, new = one_per_provenance(old), one_per_provenance(new)
    return Changes(manifest_diff(old, new), lock_diff(old, new), tuple(settings), tuple(hardware),
                   software_diff(old, new))
