"""RunRecord: one benchmark point (one repeat) with everything needed to trust and reproduce it.

Records are immutable and keep the raw samples (per-step times per rank); every figure (images/sec,
speedup, efficiency) is derived from them in repro.results.metrics, never stored as the truth.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from repro.errors import ResultsError

SCHEMA_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HostRef(_Frozen):
    """An inventory host as used by a run."""

    name: str
    address: str
    slots: int = 1
    gpus: int = 0


class RankResult(_Frozen):
    """What one worker process measured."""

    rank: int
    local_rank: int = 0
    host: str = ""  # inventory host name the rank ran on ("" when unknown)
    hostname: str = ""
    addresses: list[str] = Field(default_factory=list)
    device: str = "CPU"
    warmup_times: list[float] = Field(default_factory=list)
    step_times: list[float] = Field(default_factory=list)
    items_per_step: int = 0


class Settings(_Frozen):
    """The settings that define a benchmark point (what runs are aligned on when compared)."""

    workload: str
    model: str | None = None
    batch_per_worker: int | None = None
    global_batch: int | None = None
    precision: Literal["fp32", "fp16"] = "fp32"
    xla: bool = False
    data_format: str | None = None
    data: str = "synthetic"
    workers: int = 1
    hosts: int = 1
    scaling: Literal["weak", "strong"] | None = None
    threads: int | None = None  # intra-op threads per worker (CPU runs)
    warmup_steps: int | None = None
    steps: int | None = None
    backend: str | None = None  # controller: mpi or gloo
    extra: dict[str, Any] = Field(default_factory=dict)  # workload-specific settings

    def key(self, *, without: tuple[str, ...] = ()) -> tuple:
        """A hashable identity of the point, optionally ignoring some fields."""
        data = self.model_dump(exclude=set(without) | {"extra", "warmup_steps", "steps"})
        extra = tuple(sorted((k, str(v)) for k, v in self.extra.items()))
        return (*sorted(data.items()), extra)


class StackRef(_Frozen):
    """The stack a run used, resolved: name, content hash, and the manifest itself."""

    name: str
    hash: str
    image_hash: str | None = None
    file: str | None = None
    manifest: dict[str, Any] = Field(default_factory=dict)


class SweepRef(_Frozen):
    """Where a record sits in a sweep, so --resume knows what is done."""

    id: str
    point: str  # stable key of the point's settings within the sweep
    repeat: int = 0


class Published(_Frozen):
    """A figure copied from a paper or table rather than measured here (repro import --table)."""

    images_per_sec: float
    top1: float | None = None
    top5: float | None = None
    source: str = ""
    system: str = ""
    note: str = ""


class RunRecord(_Frozen):
    """One measured (or imported) benchmark point."""

    schema_version: int = SCHEMA_VERSION
    id: str
    created: str
    status: Literal["ok", "failed"]
    failure: str | None = None
    origin: Literal["bench", "import", "published"] = "bench"
    stack: StackRef
    lock: dict[str, Any] | None = None
    sweep: SweepRef | None = None
    settings: Settings
    runtime: str = "host"  # docker | host | imported
    hosts: list[HostRef] = Field(default_factory=list)
    ranks: list[RankResult] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    software: dict[str, Any] = Field(default_factory=dict)
    world: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    published: Published | None = None
    duration_s: float | None = None
    log_tail: str = ""


class RecordError(ResultsError):
    """A record document that cannot be turned into a RunRecord."""


class NewerSchemaError(RecordError):
    """A record written by a newer repro (its schema_version is above the one this repro reads)."""


class InvalidRecordError(RecordError):
    """A record document that is not a valid RunRecord of a schema version this repro reads."""


def parse_record(data: Any) -> RunRecord:
    """The one way from a record's JSON document to a RunRecord: schema-version check, then validation."""
    if not isinstance(data, dict):
        raise InvalidRecordError(f"not a record (a JSON {type(data).__name__}, expected an object)")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise NewerSchemaError(f"record schema version {version} is newer than this repro reads "
                               f"({SCHEMA_VERSION})", hint="upgrade repro to read it")
    if version != SCHEMA_VERSION:
        raise InvalidRecordError(f"record schema version {version!r}, this repro reads {SCHEMA_VERSION}")
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidRecordError(f"invalid record: {where + ': ' if where else ''}{first['msg']}") from None


def new_id(now: datetime | None = None) -> str:
    """A sortable, collision-safe record id: 20261122T031500Z-1f3a9c2e."""
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(4)


def now_iso() -> str:
    """The current UTC time as ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|PASS|KEY|CREDENTIAL|AUTH)", re.IGNORECASE)
_SECRET_VALUE = re.compile(r"(://[^:/@\s]+:)([^@\s]+)(@)")  # user:password@ in URLs
REDACTED = "<redacted>"


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """The environment with secrets (tokens, passwords, keys, URL credentials) replaced."""
    out = {}
    for name, value in env.items():
        if _SECRET_NAME.search(name) and not name.endswith(("_FILE", "_PATH", "_DIR")):
            out[name] = REDACTED
        else:
            out[name] = _SECRET_VALUE.sub(rf"\1{REDACTED}\3", value)
    return out


def redact_argv(argv: list[str]) -> list[str]:
    """An argv with `-x NAME=VALUE` secrets and URL credentials redacted."""
    out = []
    for arg in argv:
        if "=" in arg:
            name, value = arg.split("=", 1)
            arg = f"{name}={redact_env({name.lstrip('-'): value})[name.lstrip('-')]}"
        out.append(_SECRET_VALUE.sub(rf"\1{REDACTED}\3", arg))
    return out
