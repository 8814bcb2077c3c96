"""`repro compare` as a plain function: two lists of records in, a Comparison out (pure).

    compare(old_records, new_records, Options()) -> Comparison

Steps: check the hardware, align on settings, compute figures per comparison kind (repro.compare.kind:
the built-in kinds of repro.compare.kinds and any kind registered later), collect what changed. Nothing here
names a kind. Renderers (render.py, plot.py) only render.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from repro.compare import align as _align
from repro.compare.align import Alignment, Change, Group, Hardware
from repro.compare.diff import Changes, changes
from repro.compare.fabric import fabric_lines
from repro.compare.kind import KINDS, KindRows, order
from repro.compare.options import Options
from repro.compare.programs import implementation_notes
from repro.compare.reference import ReferenceCheck
from repro.compare.reference import check as reference_check
from repro.compare.view import View
from repro.errors import ResultsError
from repro.results.record import RunRecord

# the sides' records in; the checked interleaved command, or None and why there is none
Suggest = Callable[[Sequence[RunRecord], Sequence[RunRecord]], tuple[str | None, str]]


@dataclass(frozen=True)
class SideInfo:
    """One side of the comparison as a whole."""

    label: str
    description: str
    stacks: tuple[str, ...]
    stack_hashes: tuple[str, ...]
    runs: int
    failed: int
    hardware: Hardware


@dataclass(frozen=True)
class OneSided:
    """A point found on one side only (listed, never dropped)."""

    side: str
    key: _align.Key
    runs: int
    failed: int

    def describe(self) -> str:
        shown = ", ".join(f"{k}={_align.format_value(v)}" for k, v in self.key if v is not None)
        return f"{shown} ({self.runs} runs, {self.failed} failed)"


@dataclass(frozen=True)
class Comparison:
    """Everything `repro compare` reports."""

    old: SideInfo
    new: SideInfo
    options: Options
    keys: tuple[str, ...]
    columns: tuple[str, ...]  # key fields that vary between points: what a table shows
    changes: Changes
    sections: dict[str, KindRows]  # every kind's part, by kind name, in registration order (plug-in kinds too)
    old_only: tuple[OneSided, ...]
    new_only: tuple[OneSided, ...]
    notes: tuple[str, ...] = ()
    interleave: str | None = None  # the interleaved `repro bench` that would settle an unpaired comparison
    fabric: tuple[str, ...] = ()  # "fabric differed (...): OLD NET/IB/GDRDMA on 16 of 16 ...; NEW ..." and NCCL notes
    reference: ReferenceCheck | None = None  # NEW against OLD as a reference (`--reference REF --within X`)

    def rows(self, kind: str) -> tuple[Any, ...]:
        """The compared rows of one kind (none when it had no point on both sides)."""
        part = self.sections.get(kind)
        return part.rows if part else ()

    def __getattr__(self, name: str) -> tuple[Any, ...]:
        """A registered kind's rows by its name (`c.throughput`, `c.ticks`); no kind is named here."""
        if name.startswith("_") or name not in KINDS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return self.rows(name)

    @property
    def view(self) -> View:
        """What the kinds see of this comparison (repro.compare.view)."""
        return View(self.keys, self.columns, self.options)

    @property
    def compared(self) -> bool:
        """Whether any point was measured on both sides."""
        return any(part.rows for part in self.sections.values())

    @property
    def regressions(self) -> tuple[Any, ...]:
        """The rows each kind's regression rule fails (`--fail-on-regression`): significantly worse beyond the
        threshold."""
        return tuple(r for name, part in self.sections.items() for r in KINDS.get(name).regressions(part))


def _one_sided(side: str, groups: Sequence[Group]) -> tuple[OneSided, ...]:
    return tuple(OneSided(side, g.key, sum(1 for r in g.records if r.status == "ok"),
                          sum(1 for r in g.records if r.status != "ok")) for g in groups)


def _side_info(label: str, description: str, records: Sequence[RunRecord]) -> SideInfo:
    return SideInfo(label, description, tuple(dict.fromkeys(r.stack.name for r in records)),
                    tuple(dict.fromkeys(r.stack.hash for r in records)), len(records),
                    sum(1 for r in records if r.status != "ok"), _align.hardware(records))


def check_hardware(old: Hardware, new: Hardware, allow: bool) -> tuple[Change, ...]:
    """The hardware differences; refused (ResultsError) unless allowed."""
    diffs = _align.hardware_changes(old, new)
    if diffs and not allow:
        raise ResultsError("OLD and NEW ran on different hardware: " + "; ".join(c.render() for c in diffs),
                           hint="a throughput ratio across hardware is not a software comparison; pass "
                           "--allow-different-hardware to compare anyway (the difference is then shown)")
    return diffs


def compare(old: Sequence[RunRecord], new: Sequence[RunRecord], options: Options | None = None, *,
            old_description: str = "", new_description: str = "", suggest: Suggest | None = None) -> Comparison:
    """Compare two sets of records point by point (see the module docstring); `suggest` gives the interleaved
    command for sides that did not run interleaved, checked (repro.pipeline.suggest), or why there is none."""
    options = options or Options()
    if not old or not new:
        raise ResultsError(f"nothing to compare: {'OLD' if not old else 'NEW'} has no runs")
    old_info = _side_info("OLD", old_description, old)
    new_info = _side_info("NEW", new_description, new)
    hw = check_hardware(old_info.hardware, new_info.hardware, options.allow_different_hardware)
    unknown = _align.unknown_hardware_note(hw)
    alignment: Alignment = _align.align(old, new, hosts_are_compared=any(c.path == "hosts" for c in hw))
    by_kind: dict[str, list[_align.Pair]] = {}
    for pair in alignment.pairs:
        by_kind.setdefault(_align.kind(pair.old.workload), []).append(pair)
    sections = {name: KINDS.get(name).compare(by_kind[name], old, new, options) for name in order(list(by_kind))}
    reference = (reference_check({name: by_kind[name] for name in order(list(by_kind))}, old, new, options)
                 if options.within is not None else None)
    notes = tuple(n for part in sections.values() for n in part.notes)
    settings_changes = tuple(c for c in alignment.compared if c.path != "hosts" or not hw)
    unpaired = any(KINDS.get(name).unpaired(part) for name, part in sections.items())
    interleave, why = suggest(old, new) if unpaired and suggest is not None else (None, "")
    lead = ("OLD and NEW did not run interleaved, so a change of the machine between them counts as a difference of "
            "the stacks")
    if interleave:
        notes = (*notes, f"{lead}; to compare them on the same machine states run: {interleave}")
    elif why:
        notes = (*notes, f"{lead}; no interleaved command is suggested: {why}")
    notes = (*notes, *implementation_notes(alignment.pairs))
    return Comparison(
        old=old_info, new=new_info, options=options, keys=alignment.keys,
        columns=_align.varying_keys(alignment),
        changes=changes(old, new, settings_changes, hw),
        sections=sections,
        old_only=_one_sided("OLD", alignment.old_only), new_only=_one_sided("NEW", alignment.new_only),
        notes=(*((unknown,) if unknown else ()), *alignment.notes, *notes), interleave=interleave,
        fabric=fabric_lines(alignment.pairs),
        reference=reference,
    )
