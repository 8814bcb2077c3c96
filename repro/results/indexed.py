"""A run as the store's index holds it: what a comparison or a results table needs of a record, without its file.

When the index reads a record file (repro.results.index), it keeps a `brief` of it beside the summary: the
record's small parts (id, stack's name and hash, settings, sweep, hosts, conditions, ...) and its figures
computed once by the functions that define them (images/sec and step counts under both warm-up windows, the
warm-up issues, where the figure comes from, the hardware it names, a digest of its provenance). An
`IndexedRun` stands for the record: its small parts come from the brief, its figures answer the memos of
repro.results.metrics, steady and hardware (repro.results.memo.Known), and any other attribute (a manifest,
ranks, facts, a lock: provenance) parses the record file then, once. A comparison of 5,000 runs a side so parses
only the few records whose provenance it prints.

The brief is written with the summary and dropped with it, so it is never staler than the index; the index is
rebuilt when the code that computes it changes (repro.results.index.SUMMARY_MODULES).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from repro.results.memo import MISSING, Known, Memo

if TYPE_CHECKING:
    from repro.results.conditions import Conditions
    from repro.results.fabric import Fabric
    from repro.results.record import Published, RunRecord

_MEMO = Memo()
MODES = ("fixed", "auto")  # repro.results.steady.MODES, spelt here so that reading a brief needs no numpy


def provenance_key(record: RunRecord) -> str:
    """A digest of what a record says it ran (manifest, image lock, host software, reported software): two runs
    with the same key print the same provenance, so a comparison reads one record per key."""
    return _MEMO.get(record, "provenance", lambda: _provenance_key(record))


def _provenance_key(record: RunRecord) -> str:
    parts = [record.stack.manifest, record.image.model_dump(mode="json") if record.image is not None else None,
             {h: s.model_dump(mode="json") for h, s in record.host_software.items()}, record.software]
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


# The index's columns of a brief, beside the summary's (id, created, stack, status, origin, failure and the fixed
# window's images/sec are the summary's own): JSON texts for the parts, plain values for the figures.
BRIEF_COLUMNS = ("b_settings", "b_sweep", "b_hosts", "b_hardware", "b_issues", "b_published", "b_conditions",
                 "b_fabric", "b_ips_auto", "b_samples_fixed", "b_samples_auto", "b_source", "b_stored_warmup",
                 "b_provenance", "b_runtime", "b_duration_s", "b_image_hash", "b_file")
Brief = tuple[Any, ...]  # the values of BRIEF_COLUMNS


def brief(record: RunRecord) -> Brief:
    """The brief of a record, as the values of BRIEF_COLUMNS (the module's docstring says what it holds)."""
    from repro.results import hardware, metrics, steady

    def dump(model: Any) -> str | None:
        return None if model is None else json.dumps(model.model_dump(mode="json"), sort_keys=True)

    issues = [[[i.kind, i.rank, i.text, i.steady_from, i.fixed] for i in steady.issues(record, m)] for m in MODES]
    return (dump(record.settings), dump(record.sweep),
            json.dumps([h.model_dump(mode="json") for h in record.hosts], sort_keys=True),
            json.dumps([list(p) for p in hardware.parts(record)]), json.dumps(issues) if any(issues) else None,
            dump(record.published), dump(record.conditions), dump(record.fabric),
            metrics.throughput(record, steady.AUTO), metrics.sample_count(record, steady.FIXED),
            metrics.sample_count(record, steady.AUTO), metrics.source(record), metrics.stored_warmup(record),
            provenance_key(record), record.runtime, record.duration_s, record.stack.image_hash, record.stack.file)


@lru_cache(maxsize=4096)
def _model(kind: str, text: str) -> Any:
    """A part from its JSON, once per distinct text: thousands of runs share a few settings, hosts, hardware."""
    from repro.results import record as rec

    data = json.loads(text)
    if kind == "hosts":
        return tuple(rec.HostRef.model_validate(h) for h in data)
    if kind == "hardware":
        return tuple(tuple(p) for p in data)
    if kind == "sweep":  # the dump of a validated SweepRef (plain fields): constructed, not validated again
        return rec.SweepRef.model_construct(**data)
    return rec.Settings.model_validate(data)


@lru_cache(maxsize=4096)
def _issues(text: str | None) -> tuple[tuple[Any, ...], ...]:
    """The warm-up issues of a run under each window (steady.Issue), from the brief's JSON."""
    if text is None:
        return ((),) * len(MODES)
    from repro.results.steady import Issue  # numpy: only for a run with warm-up issues

    return tuple(tuple(Issue(*fields) for fields in mode) for mode in json.loads(text))


class Listed(Protocol):
    """What the index lists of a run (repro.results.summary.Summary has it)."""

    id: str
    created: str
    stack: str
    stack_hash: str
    status: str
    origin: str
    failure: str | None
    images_per_sec: float | None


class IndexedStack:
    """A run's stack: name, hash, image hash and file from the brief; the manifest from the record file."""

    __slots__ = ("_run", "file", "hash", "image_hash", "name")

    def __init__(self, run: IndexedRun, name: str, hash: str, image_hash: str | None, file: str | None) -> None:
        self._run, self.name, self.hash, self.image_hash, self.file = run, name, hash, image_hash, file

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._run.record.stack, name)


# The figures a brief holds, by the argument repro.results.metrics, steady and hardware memoize them under: read
# from the run's row when asked, so that a run carries no dict of its own (10,000 of them make the collector work)
_FIGURES: dict[Any, Callable[[IndexedRun], Any]] = {
    ("throughput", "fixed"): lambda run: run._summary.images_per_sec,
    ("throughput", "auto"): lambda run: run._row[8],
    ("samples", "fixed"): lambda run: run._row[9],
    ("samples", "auto"): lambda run: run._row[10],
    "source": lambda run: run._row[11],
    "stored_warmup": lambda run: run._row[12],
    "provenance": lambda run: run._row[13],
    "hardware": lambda run: _model("hardware", run._row[3]),
    ("issues", "fixed"): lambda run: _issues(run._row[4])[0],
    ("issues", "auto"): lambda run: _issues(run._row[4])[1],
}


class IndexedRun(Known):
    """A stored run read from the index (the module's docstring); the record file is parsed only when an attribute
    the brief does not hold is asked for."""

    __slots__ = ("_conditions", "_fabric", "_load", "_published", "_record", "_row", "_summary", "created",
                 "duration_s", "failure", "hosts", "id", "origin", "runtime", "settings", "stack", "status", "sweep")

    def __init__(self, summary: Listed, row: Brief, load: Callable[[], RunRecord]) -> None:
        self._summary, self._row, self._load, self._record = summary, row, load, None
        self._published, self._conditions, self._fabric = row[5], row[6], row[7]
        self.id, self.created, self.status = summary.id, summary.created, summary.status
        self.failure, self.origin, self.runtime, self.duration_s = summary.failure, summary.origin, row[14], row[15]
        self.stack = IndexedStack(self, summary.stack, summary.stack_hash, row[16], row[17])
        self.settings = _model("settings", row[0])
        self.sweep = _model("sweep", row[1]) if row[1] is not None else None
        self.hosts = list(_model("hosts", row[2]))

    def figure(self, argument: Any) -> Any:
        get = _FIGURES.get(argument)
        return get(self) if get is not None else MISSING

    @property
    def record(self) -> RunRecord:
        """The whole record, parsed from its file on first use."""
        if self._record is None:
            self._record = self._load()
        return self._record

    # parts the brief holds as JSON (None when the record has none), made models on first use
    @property
    def conditions(self) -> Conditions | None:
        if isinstance(self._conditions, str):
            from repro.results.conditions import Conditions

            self._conditions = Conditions.model_validate(json.loads(self._conditions))
        return self._conditions

    @property
    def published(self) -> Published | None:
        if isinstance(self._published, str):
            from repro.results.record import Published

            self._published = Published.model_validate(json.loads(self._published))
        return self._published

    @property
    def fabric(self) -> Fabric | None:
        if isinstance(self._fabric, str):
            from repro.results.fabric import Fabric

            self._fabric = Fabric.model_validate(json.loads(self._fabric))
        return self._fabric

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.record, name)

    def __repr__(self) -> str:
        return f"IndexedRun({self.id!r}, stack={self.stack.name!r}, status={self.status!r})"
