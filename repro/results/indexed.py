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

from repro.results.memo import Known, Memo

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


class IndexedRun(Known):
    """A stored run read from the index (the module's docstring); the record file is parsed only when an attribute
    the brief does not hold is asked for."""

    __slots__ = ("_load", "_parts", "_record", "created", "duration_s", "failure", "hosts", "id", "origin",
                 "runtime", "settings", "stack", "status", "sweep")

    def __init__(self, summary: Listed, row: Brief, load: Callable[[], RunRecord]) -> None:
        (settings, sweep, hosts, hardware, issues, published, conditions, fabric, ips_auto, samples_fixed,
         samples_auto, source, stored_warmup, provenance, runtime, duration_s, image_hash, file) = row
        fixed, auto = _issues(issues)
        super().__init__({("throughput", "fixed"): summary.images_per_sec, ("throughput", "auto"): ips_auto,
                          ("samples", "fixed"): samples_fixed, ("samples", "auto"): samples_auto,
                          ("issues", "fixed"): fixed, ("issues", "auto"): auto, "source": source,
                          "stored_warmup": stored_warmup, "hardware": _model("hardware", hardware),
                          "provenance": provenance})
        self._load, self._record = load, None
        self._parts = {"published": published, "conditions": conditions, "fabric": fabric}
        self.id, self.created, self.status = summary.id, summary.created, summary.status
        self.failure, self.origin, self.runtime, self.duration_s = summary.failure, summary.origin, runtime, duration_s
        self.stack = IndexedStack(self, summary.stack, summary.stack_hash, image_hash, file)
        self.settings = _model("settings", settings)
        self.sweep = _model("sweep", sweep) if sweep is not None else None
        self.hosts = list(_model("hosts", hosts))

    @property
    def record(self) -> RunRecord:
        """The whole record, parsed from its file on first use."""
        if self._record is None:
            self._record = self._load()
        return self._record

    @property
    def conditions(self) -> Conditions | None:
        return self._part("conditions")

    @property
    def published(self) -> Published | None:
        return self._part("published")

    @property
    def fabric(self) -> Fabric | None:
        return self._part("fabric")

    def _part(self, name: str) -> Any:
        """A part the brief holds as JSON, made a model on first use (None when the record has none)."""
        value = self._parts[name]
        if isinstance(value, str):
            from repro.results import record as rec

            field = {"conditions": rec.Conditions, "published": rec.Published, "fabric": rec.Fabric}[name]
            value = self._parts[name] = field.model_validate(json.loads(value))
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.record, name)

    def __repr__(self) -> str:
        return f"IndexedRun({self.id!r}, stack={self.stack.name!r}, status={self.status!r})"
