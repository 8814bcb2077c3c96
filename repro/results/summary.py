"""What the store's index keeps of one record file: its `Summary` (the columns queries filter on and the run's
figure), or, for a file that cannot be read, why (`Broken`).

Figures come from repro.results.metrics, never recomputed here; a change of this module, the record schema or
the metrics rebuilds every index (repro.results.index.SUMMARY_MODULES).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # listing from the index needs neither pydantic nor numpy
    from repro.results.record import RunRecord


class Summary(NamedTuple):
    """What the index keeps of one record: enough to list, filter and find it without parsing the file.

    A named tuple, not a dataclass: a listing of the whole store makes one per record, and a tuple is
    built several times faster.
    """

    path: str  # relative to the store's runs/ directory: "<stack-hash>/<record-id>.json"
    id: str
    created: str
    stack: str
    stack_hash: str
    status: str
    origin: str
    workload: str
    model: str | None
    batch_per_worker: int | None
    precision: str
    workers: int
    hosts: int
    sweep_id: str | None
    sweep_point: str | None
    sweep_repeat: int | None
    images_per_sec: float | None
    failure: str | None

    @property
    def dir(self) -> str:
        """The directory under runs/ the file is in (the stack hash it was stored under)."""
        return self.path.split("/", 1)[0]

    def identity(self) -> tuple:
        """The fields a query selects on: a loaded record must still have these to be the one listed."""
        return (self.id, self.stack, self.stack_hash, self.status, self.origin, self.workload, self.model,
                self.batch_per_worker, self.precision, self.workers, self.hosts, self.sweep_id, self.sweep_point,
                self.sweep_repeat)


COLUMNS = Summary._fields[1:]  # every field but path (kept as dir, name)


def summarize(path: str, record: RunRecord) -> Summary:
    """The summary of one record; figures come from repro.results.metrics, never recomputed here."""
    from repro.results.metrics import throughput

    s, sweep = record.settings, record.sweep
    return Summary(path, record.id, record.created, record.stack.name, record.stack.hash, record.status,
                   record.origin, s.workload, s.model, s.batch_per_worker, s.precision, s.workers, s.hosts,
                   sweep.id if sweep else None, sweep.point if sweep else None, sweep.repeat if sweep else None,
                   throughput(record), record.failure)


SQLITE_INT = (-(2**63), 2**63 - 1)


def columns(path: str, record: RunRecord) -> tuple:
    """(error, newer, *summary columns, *brief) of a parsed record; a record whose summary SQLite cannot hold (an
    integer beyond 64 bits, a number that is not finite where a count is expected) is kept as unusable,
    with the field named, so that one bad record never breaks the index for the others. The brief
    (repro.results.indexed) is None where it cannot be made: the record is then read from its file."""
    try:
        summary = summarize(path, record)
    except (ArithmeticError, ValueError, TypeError) as exc:
        return unusable(f"unusable record: its figures cannot be computed ({type(exc).__name__}: {exc})"[:300])
    for field_name, value in zip(Summary._fields, summary, strict=True):
        if isinstance(value, int) and not SQLITE_INT[0] <= value <= SQLITE_INT[1]:
            shown = f"a number of {len(str(abs(value)))} digits" if abs(value) >= 10**30 else str(value)
            return unusable(f"unusable record: {field_name} is {shown}, beyond what repro can index")
    from repro.results.indexed import BRIEF_COLUMNS, brief

    try:
        texts: tuple = brief(record)
    except (ArithmeticError, ValueError, TypeError):
        texts = (None,) * len(BRIEF_COLUMNS)
    return (None, 0, *summary[1:], *texts)


def unusable(reason: str, newer: bool = False) -> tuple:
    """(error, newer, *summary columns, *brief) of a record file that cannot be used: the reason, and no columns."""
    from repro.results.indexed import BRIEF_COLUMNS

    return (reason, int(newer), *([None] * (len(COLUMNS) + len(BRIEF_COLUMNS))))


@dataclass(frozen=True)
class Broken:
    """A record file the index could not read."""

    path: str  # relative to runs/
    reason: str
    newer: bool  # written by a newer repro
