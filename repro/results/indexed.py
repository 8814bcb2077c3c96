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
from typing import TYPE_CHECKING, Any

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


def brief(record: RunRecord) -> str:
    """The brief of a record, as JSON text (the module's docstring says what it holds)."""
    from repro.results import hardware, metrics, steady

    def dump(model: Any) -> str | None:
        return None if model is None else json.dumps(model.model_dump(mode="json"), sort_keys=True)

    known = {
        "throughput": [metrics.throughput(record, m) for m in MODES],
        "samples": [metrics.sample_count(record, m) for m in MODES],
        "issues": [[[i.kind, i.rank, i.text, i.steady_from, i.fixed] for i in steady.issues(record, m)]
                   for m in MODES],
        "source": metrics.source(record), "stored_warmup": metrics.stored_warmup(record),
        "hardware": [list(p) for p in hardware.parts(record)], "provenance": provenance_key(record),
    }
    return json.dumps({
        "id": record.id, "created": record.created, "status": record.status, "failure": record.failure,
        "origin": record.origin, "runtime": record.runtime, "duration_s": record.duration_s,
        "stack": [record.stack.name, record.stack.hash, record.stack.image_hash, record.stack.file],
        "settings": dump(record.settings), "sweep": dump(record.sweep),
        "hosts": json.dumps([h.model_dump(mode="json") for h in record.hosts], sort_keys=True),
        "published": dump(record.published), "conditions": dump(record.conditions), "fabric": dump(record.fabric),
        "known": known,
    }, separators=(",", ":"))


@lru_cache(maxsize=4096)
def _model(kind: str, text: str) -> Any:
    """A small model from its JSON, once per distinct text: thousands of runs share a few settings."""
    from repro.results import record as rec

    data = json.loads(text)
    if kind == "hosts":
        return tuple(rec.HostRef.model_validate(h) for h in data)
    return {"settings": rec.Settings, "sweep": rec.SweepRef}[kind].model_validate(data)


def _known(data: dict[str, Any]) -> dict[Any, Any]:
    from repro.results.steady import Issue

    out: dict[Any, Any] = {"source": data["source"], "stored_warmup": data["stored_warmup"],
                           "hardware": tuple(tuple(p) for p in data["hardware"]), "provenance": data["provenance"]}
    for i, mode in enumerate(MODES):
        out["throughput", mode] = data["throughput"][i]
        out["samples", mode] = data["samples"][i]
        out["issues", mode] = tuple(Issue(*issue) for issue in data["issues"][i])
    return out


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

    __slots__ = ("_brief", "_load", "_record", "created", "duration_s", "failure", "hosts", "id", "origin",
                 "runtime", "settings", "stack", "status", "sweep")

    def __init__(self, text: str, load: Callable[[], RunRecord]) -> None:
        data = json.loads(text)
        super().__init__(_known(data["known"]))
        self._brief, self._load, self._record = data, load, None
        self.id, self.created, self.status = data["id"], data["created"], data["status"]
        self.failure, self.origin, self.runtime = data["failure"], data["origin"], data["runtime"]
        self.duration_s = data["duration_s"]
        self.stack = IndexedStack(self, *data["stack"])
        self.settings = _model("settings", data["settings"])
        self.sweep = _model("sweep", data["sweep"]) if data["sweep"] is not None else None
        self.hosts = list(_model("hosts", data["hosts"]))

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
        value = self._brief.get(name)
        if isinstance(value, str):
            from repro.results import record as rec

            field = {"conditions": rec.Conditions, "published": rec.Published, "fabric": rec.Fabric}[name]
            value = self._brief[name] = field.model_validate(json.loads(value))
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.record, name)

    def __repr__(self) -> str:
        return f"IndexedRun({self.id!r}, stack={self.stack.name!r}, status={self.status!r})"
