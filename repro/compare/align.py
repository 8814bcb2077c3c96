"""Aligning two selections on their settings (pure).

Records are matched on the settings that define a benchmark point: workload, model, per-worker batch,
precision, XLA, data format, data, workers, hosts, scaling mode, threads, controller and any
workload-specific setting (``settings.extra``). A setting that is constant on each side but differs
between the sides (all OLD runs xla=false, all NEW runs xla=true) is what is being compared: it is not
a key, and it is reported as a change. ``workers`` is always a key (a 4-worker run is not compared
with an 8-worker one); ``hosts`` is a key unless it is such a constant difference, which is a
hardware difference (see hardware()).

Points present on one side only are returned, never dropped.

A setting recorded as None is unknown (an imported log did not show it). Unknown never matches a known
value, so a point whose precision is unknown is not paired with an fp16 one; where unknown settings are
what the sides differ in, or are unknown on both sides of a pair, the alignment says so in its notes
instead of pairing on a guess silently.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from repro.errors import ResultsError
from repro.results.hardware import parts as hardware_parts
from repro.results.record import RunRecord, Settings
from repro.secrets import is_redacted
from repro.workloads.catalog import kind_of

# Settings fields a point is aligned on, in display order. global_batch follows from batch x workers.
FIELDS = ("workload", "model", "batch_per_worker", "precision", "xla", "data_format", "data", "workers", "hosts",
          "scaling", "threads", "backend")
ALWAYS_KEYS = frozenset({"workers"})
THROUGHPUT = "throughput"  # the kind of workloads that measure items per second


def kind(workload: str) -> str:
    """The comparison a workload gets: its spec's kind ('throughput', 'allreduce', 'tta', ...)."""
    return kind_of(workload)


def setting(settings: Settings, name: str) -> Any:
    """A settings value by alignment name (``extra.<key>`` for workload-specific settings)."""
    if name.startswith("extra."):
        return settings.extra.get(name[len("extra."):])
    return getattr(settings, name)


def setting_names(records: Sequence[RunRecord]) -> list[str]:
    extra = sorted({k for s in _distinct_settings(records) for k in s.extra})
    return [*FIELDS, *(f"extra.{k}" for k in extra)]


@dataclass(frozen=True)
class Change:
    """One value that differs between the sides: a setting, a manifest field, a lock entry, hardware."""

    path: str
    old: Any
    new: Any

    def render(self) -> str:
        if is_redacted(self.old) or is_redacted(self.new):
            return f"{self.path} changed (value redacted)"
        return f"{self.path}: {format_value(self.old)} → {format_value(self.new)}"


def format_value(value: Any) -> str:
    """A value as YAML would write it: false/true, (none) for missing, a | b for several."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "(none)"
    if isinstance(value, (set, frozenset, tuple)) and not isinstance(value, str):
        return " | ".join(sorted(format_value(v) for v in value)) or "(none)"
    return str(value)


Key = tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Group:
    """The records of one side at one aligned point."""

    key: Key
    records: tuple[RunRecord, ...]

    @property
    def settings(self) -> Settings:
        return self.records[0].settings

    @property
    def workload(self) -> str:
        return self.settings.workload


@dataclass(frozen=True)
class Pair:
    """An aligned point: OLD's and NEW's records at the same key."""

    key: Key
    old: Group
    new: Group


@dataclass(frozen=True)
class Alignment:
    """How two selections line up: the keys used, what was compared, pairs, and one-sided points."""

    keys: tuple[str, ...]
    compared: tuple[Change, ...]
    pairs: tuple[Pair, ...]
    old_only: tuple[Group, ...]
    new_only: tuple[Group, ...]
    notes: tuple[str, ...] = ()


def _distinct_settings(records: Sequence[RunRecord]) -> list[Settings]:
    """Each settings object once: runs read from the store's index share one per distinct settings."""
    return list({id(r.settings): r.settings for r in records}.values())


def _values(settings: Sequence[Settings], name: str) -> set:
    return {_hashable(setting(s, name)) for s in settings}


def _hashable(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return repr(value)
    return value


def _order(value: Any) -> tuple:
    """Numbers in numeric order, then text, then None: so 2 workers sort before 16."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, value, "")
    if value is None:
        return (2, 0, "")
    return (1, 0, str(value))


def _sort_key(key: Key) -> tuple:
    return tuple(_order(v) for _, v in key)


def align(old: Sequence[RunRecord], new: Sequence[RunRecord], *, hosts_are_compared: bool = False) -> Alignment:
    """Match OLD's and NEW's records point by point (see the module docstring)."""
    if not old or not new:
        raise ResultsError("nothing to compare: one side has no runs")
    old_kinds = {kind(r.settings.workload) for r in old}
    new_kinds = {kind(r.settings.workload) for r in new}
    if not old_kinds & new_kinds:
        raise ResultsError(f"OLD holds {', '.join(sorted(old_kinds))} runs and NEW holds "
                           f"{', '.join(sorted(new_kinds))} runs: there is nothing in common to compare")
    compared: list[Change] = []
    keys: list[str] = []
    old_settings, new_settings = _distinct_settings(old), _distinct_settings(new)
    for name in setting_names([*old, *new]):
        a, b = _values(old_settings, name), _values(new_settings, name)
        constant_difference = len(a) == 1 and len(b) == 1 and a != b
        if constant_difference and name not in ALWAYS_KEYS and (name != "hosts" or hosts_are_compared):
            old_value, new_value = next(iter(a)), next(iter(b))
            if name in UNKNOWABLE:
                old_value, new_value = _shown(old_value), _shown(new_value)
            compared.append(Change(name, old_value, new_value))
        else:
            keys.append(name)

    known: dict[int, Key] = {}  # by settings object (each alive, so no id is reused while aligning)

    def key_of(record: RunRecord) -> Key:
        key = known.get(id(record.settings))
        if key is None:
            key = known[id(record.settings)] = tuple((name, _hashable(setting(record.settings, name)))
                                                     for name in keys)
        return key

    def grouped(records: Sequence[RunRecord]) -> dict[Key, list[RunRecord]]:
        out: dict[Key, list[RunRecord]] = defaultdict(list)
        for r in records:
            out[key_of(r)].append(r)
        return out

    a, b = grouped(old), grouped(new)
    pairs = [Pair(k, Group(k, tuple(a[k])), Group(k, tuple(b[k]))) for k in sorted(a.keys() & b.keys(), key=_sort_key)]
    old_only = [Group(k, tuple(a[k])) for k in sorted(a.keys() - b.keys(), key=_sort_key)]
    new_only = [Group(k, tuple(b[k])) for k in sorted(b.keys() - a.keys(), key=_sort_key)]
    imported = any(r.origin != "bench" for r in (*old, *new))  # bench records know every setting
    notes = _unknown_notes(keys, compared, pairs, old_only, new_only) if imported else ()
    return Alignment(tuple(keys), tuple(compared), tuple(pairs), tuple(old_only), tuple(new_only), notes)


UNKNOWN = "unknown"
# settings an imported log may not show (None = unknown); elsewhere None means "not applicable"
UNKNOWABLE = frozenset({"model", "batch_per_worker", "precision", "xla", "data", "hosts"})


def _shown(value: Any) -> Any:
    """A compared setting's value for display: None is an unknown setting."""
    return UNKNOWN if value is None else value


def _only_unknown_differs(a: Key, b: Key, i: int) -> bool:
    """Whether keys a and b are equal but at position i, where a is unknown and b is not."""
    return a[i][1] is None and b[i][1] is not None and \
        all(x == y for j, (x, y) in enumerate(zip(a, b, strict=True)) if j != i)


def _unknown_notes(keys: Sequence[str], compared: Sequence[Change], pairs: Sequence[Pair],
                   old_only: Sequence[Group], new_only: Sequence[Group]) -> tuple[str, ...]:
    """What the alignment could not know: settings unknown on a side, or on both sides of a pair."""
    notes = []
    for c in compared:
        side = "OLD" if c.old == UNKNOWN else "NEW" if c.new == UNKNOWN else None
        if side:
            notes.append(f"{c.path} is unknown on {side} (its logs do not show it): the sides are compared "
                         f"as if it were what changed; state it with `repro import --set` to be sure")
    for i, name in enumerate(keys):
        if name not in UNKNOWABLE:
            continue
        both = sum(1 for p in pairs if p.key[i][1] is None)
        if both:
            notes.append(f"{name} is unknown on both sides of {both} paired point{'s' if both > 1 else ''}: "
                         "they are paired on the other settings and may differ in it")
        alone = sum(1 for g, others in ((g, new_only) for g in old_only) if any(
            _only_unknown_differs(g.key, h.key, i) for h in others))
        alone += sum(1 for g in new_only if any(_only_unknown_differs(g.key, h.key, i) for h in old_only))
        if alone:
            notes.append(f"{name} is unknown for {alone} point{'s' if alone > 1 else ''} that would otherwise pair "
                         "with a point of the other side: an unknown setting is never matched with a known one "
                         "(state it with `repro import --set`)")
    return tuple(notes)


def varying_keys(alignment: Alignment) -> tuple[str, ...]:
    """Key fields whose value differs between points: the columns a table needs."""
    groups = [p.old for p in alignment.pairs] + list(alignment.old_only) + list(alignment.new_only)
    out = []
    for i, name in enumerate(alignment.keys):
        if len({g.key[i][1] for g in groups}) > 1:
            out.append(name)
    return tuple(out)


# -- hardware ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hardware:
    """What one side ran on, as far as the records tell: GPU models, interconnects, systems, host counts."""

    gpus: tuple[str, ...] = ()
    interconnects: tuple[str, ...] = ()
    systems: tuple[str, ...] = ()
    hosts: tuple[int, ...] = ()
    unnamed: bool = False  # every record imported and none names a device or system: unknown hardware

    def describe(self) -> str:
        parts = []
        if self.gpus:
            parts.append(" + ".join(self.gpus))
        if self.interconnects:
            parts.append(" + ".join(self.interconnects))
        if self.systems:
            parts.append("system " + " + ".join(self.systems))
        if self.hosts:
            parts.append(f"{'/'.join(str(h) for h in self.hosts)} host{'s' if max(self.hosts) > 1 else ''}")
        return ", ".join(parts) or "unknown"


def hardware(records: Sequence[RunRecord]) -> Hardware:
    """The hardware of a side: GPU models from the ranks' device strings and the hosts' facts (or the declared
    hardware of imported figures), interconnects from the hosts' facts (the MPI/NCCL interface's kind and
    link speed) or the declared interconnect, systems from published figures, host counts."""
    gpus: set[str] = set()
    nets: set[str] = set()
    systems: set[str] = set()
    for r in records:  # each run's part as the store's index keeps it (repro.results.hardware)
        run_gpus, run_nets, run_systems = hardware_parts(r)
        gpus.update(run_gpus)
        nets.update(run_nets)
        systems.update(run_systems)
    hosts = {r.settings.hosts for r in records if r.settings.hosts is not None}  # unknown hosts: not a count
    unnamed = bool(records) and not gpus and not systems and all(r.origin == "import" for r in records)
    return Hardware(tuple(sorted(gpus)), tuple(sorted(nets)), tuple(sorted(systems)), tuple(sorted(hosts)), unnamed)


def _norm(name: str) -> str:
    return re.sub(r"\s+", "", name.lower()).replace("nvidia", "").replace("tesla", "")


def _covers(a: Sequence[str], b: Sequence[str]) -> bool:
    """Every name of `a` is matched on `b` by one containing the other: 'P100' (a published table)
    and 'Tesla P100-PCIE-16GB' (a device string) are the same GPU model."""
    return all(any(_norm(x) in _norm(y) or _norm(y) in _norm(x) for y in b) for x in a)


UNKNOWN_DEVICE = "unknown (no device named in the records)"


def hardware_changes(old: Hardware, new: Hardware) -> tuple[Change, ...]:
    """Differences between two sides' hardware, where both sides tell, and the devices where a side does
    not tell (an imported log without device lines: not known to be the same hardware, even when the other
    side does not tell either); host counts only
    when each side ran on one count and the counts differ (a scaling sweep over 1..N hosts is aligned)."""
    out = []
    for name, a, b in (("gpu", old.gpus, new.gpus), ("interconnect", old.interconnects, new.interconnects),
                       ("system", old.systems, new.systems)):
        if a and b and not (_covers(a, b) and _covers(b, a)):
            out.append(Change(name, " + ".join(a), " + ".join(b)))
        elif name == "gpu" and bool(a) != bool(b):  # a side that names no device: not known to be the same
            out.append(Change(name, " + ".join(a) or UNKNOWN_DEVICE, " + ".join(b) or UNKNOWN_DEVICE))
        elif name == "gpu" and not a and not b and (old.unnamed or new.unnamed):  # an imported side names none
            out.append(Change(name, UNKNOWN_DEVICE if old.unnamed else " + ".join(old.systems) or "(none named)",
                              UNKNOWN_DEVICE if new.unnamed else " + ".join(new.systems) or "(none named)"))
    if len(old.hosts) == 1 and len(new.hosts) == 1 and old.hosts != new.hosts:
        out.append(Change("hosts", old.hosts[0], new.hosts[0]))
    return tuple(out)


def unknown_hardware_note(changes: Sequence[Change]) -> str | None:
    """The comparison's note naming the sides whose records name no device (counted as different hardware)."""
    sides = [side for c in changes if c.path == "gpu"
             for side, value in (("OLD", c.old), ("NEW", c.new)) if value == UNKNOWN_DEVICE]
    if not sides:
        return None
    who = " and ".join(sides)
    return (f"unknown hardware: {who} name{'' if len(sides) > 1 else 's'} no device (an imported log without "
            "device lines), so the sides are not known to have run on the same hardware and count as different")


def pair_id(record: RunRecord) -> str | None:
    """The id an interleaved sweep gives both runs of one A/B pair (SweepRef.pair); None when not paired."""
    return record.sweep.pair if record.sweep is not None else None
