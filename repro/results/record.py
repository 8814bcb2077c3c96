"""RunRecord: one benchmark point (one repeat) with everything needed to trust and reproduce it.

Records are immutable and keep the raw samples (per-step times per rank); every figure (images/sec,
speedup, efficiency) is derived from them in repro.results.metrics. The exceptions are figures another
program printed: a published table's (``published``) and an imported log's own summary
(``reported_images_per_sec``, e.g. tf_cnn_benchmarks' ``total images/sec``), which metrics use as the run's
figure while the samples give its spread.

In imported records a setting the log does not show is None (unknown), never a default.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from repro.errors import ResultsError
from repro.manifest.software import Software, from_host_probe
from repro.results.conditions import Conditions
from repro.results.fabric import Fabric
from repro.results.provenance import FACTS_FORMAT, LOCK_FORMAT, HostFacts, ImageLock, SlurmJob

# 1: lock and facts as plain JSON; 2: the batch job as `slurm` (a SlurmJob) or `batch` (another scheduler's dict);
# 3: the settings in TensorFlow's words (xla, Horovod's backend; PyTorch's backend in extra.dist_backend) and the
# software found with flat per-framework fields. All are read and migrated by parse_record.
SCHEMA_VERSION = 4


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
    # steps (from the first, warm-up steps included) before the step times became steady, as detected by
    # repro.results.steady; None: no steady state found, or a record from before detection existed
    detected_warmup: int | None = None


class Comm(_Frozen):
    """Who ran a point's collectives, and over what: horovod (its controller), torch.distributed (its backend)."""

    library: str  # horovod, torch.distributed, or a plug-in framework's (Framework.comm_library)
    backend: str | None = None  # mpi, gloo, nccl; None: the library's own choice, not known


class Settings(_Frozen):
    """The settings that define a benchmark point (what runs are aligned on when compared)."""

    workload: str
    model: str | None = None
    batch_per_worker: int | None = None
    global_batch: int | None = None
    precision: Literal["fp32", "fp16", "bf16"] | None = None  # None: not a setting of this workload, or not known
    # the framework compiles the step: TensorFlow's XLA, PyTorch's torch.compile (each plug-in's compile_meaning);
    # the programs' flag is --xla. None: not a setting of this workload, or not known
    compile: bool | None = None
    data_format: str | None = None
    data: str | None = None  # synthetic, real, a directory, or an imported log's data set name; None: n/a or unknown
    workers: int = 1
    hosts: int | None = 1  # None: unknown
    scaling: Literal["weak", "strong"] | None = None
    threads: int | None = None  # intra-op threads per worker (CPU runs)
    warmup_steps: int | None = None
    steps: int | None = None
    comm: Comm | None = None  # None: no collectives (the probe), or not known
    extra: dict[str, Any] = Field(default_factory=dict)  # workload-specific settings

    @model_validator(mode="before")
    @classmethod
    def _tensorflow_words(cls, data: Any) -> Any:
        # Settings(xla=..., backend=...): the words of schema 3, of the --xla flag and of Horovod's --backends
        if isinstance(data, dict) and ("xla" in data or "backend" in data):
            data = dict(data)
            xla, backend = data.pop("xla", None), data.pop("backend", None)
            data.setdefault("compile", xla)
            if backend is not None and data.get("comm") is None:
                data["comm"] = {"library": "horovod", "backend": backend}
        return data

    @property
    def xla(self) -> bool | None:
        """`compile`, by the name of the programs' --xla flag."""
        return self.compile

    @property
    def backend(self) -> str | None:
        """Horovod's controller (mpi or gloo) as --backends chose it; None where Horovod does not run the point."""
        return self.comm.backend if self.comm is not None and self.comm.library == "horovod" else None

    def shown(self) -> dict[str, Any]:
        """The settings as `results show` prints them: in the programs' words (xla, Horovod's backend, extra's
        dist_backend), as every schema before 4 stored them, so that a store prints as it always has."""
        data = {("xla" if k == "compile" else k): v for k, v in self.model_dump(mode="json").items()}
        data["backend"] = self.backend
        return {k: data[k] for k in SHOWN_ORDER}

    def key(self, *, without: tuple[str, ...] = ()) -> tuple:
        """A hashable identity of the point, optionally ignoring some fields."""
        data = self.model_dump(exclude=set(without) | {"extra", "warmup_steps", "steps", "comm"})
        comm = None if self.comm is None or "comm" in without else (self.comm.library, self.comm.backend)
        extra = tuple(sorted((k, str(v)) for k, v in self.extra.items()))
        return (*sorted(data.items()), ("comm", comm), extra)


# the order schema 3 stored the settings in (results show prints them so)
SHOWN_ORDER = ("workload", "model", "batch_per_worker", "global_batch", "precision", "xla", "data_format", "data",
               "workers", "hosts", "scaling", "threads", "warmup_steps", "steps", "backend", "extra")


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
    # interleaved A/B sweeps (`repro bench --stack A --stack B`): the runs of every stack at the same point and
    # repeat ran back to back on the same hosts; `pair` names that group so that compare can pair them
    pair: str | None = None
    inventory: str | None = None  # the inventory file the sweep ran on, as given (for the commands repro suggests)


class Published(_Frozen):
    """A figure copied from a paper or table rather than measured here (repro import --table)."""

    images_per_sec: float
    top1: float | None = None
    top5: float | None = None
    source: str = ""
    system: str = ""
    note: str = ""


class Hardware(_Frozen):
    """Hardware a run declares rather than measured facts show (imported logs, published tables)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    gpu: str | None = None  # GPU model, e.g. "Tesla V100-SXM2-16GB"
    interconnect: str | None = None


# A scheduler's typed part of a BatchJob (`detail`), by scheduler name; a scheduler without one keeps a plain
# mapping there. One registration per scheduler that has a model.
JOB_DETAILS: dict[str, type[BaseModel]] = {"slurm": SlurmJob}


class BatchJob(_Frozen):
    """The batch job that ran a point (a batch scheduler's): what every scheduler has, and its own part.

    `script` is what was submitted (a job script, a manifest), secrets redacted; `detail` is the scheduler's typed
    part (a JOB_DETAILS model: Slurm's SlurmJob) or, for a scheduler without a model, a mapping.
    """

    scheduler: str
    id: str  # the batch system's name for the job (a Slurm job id, a TrainJob's name)
    nodes: list[str] = Field(default_factory=list)  # the nodes it ran on, as the batch system names them
    state: str | None = None  # its end state, in the batch system's words (COMPLETED, TIMEOUT, ok, failed, ...)
    script: str = ""
    detail: Any = None

    @model_validator(mode="before")
    @classmethod
    def _typed_detail(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("detail"), dict) and data.get("scheduler") in JOB_DETAILS:
            data = {**data, "detail": JOB_DETAILS[data["scheduler"]].model_validate(data["detail"])}
        return data


class RunRecord(_Frozen):
    """One measured (or imported) benchmark point."""

    schema_version: int = SCHEMA_VERSION
    id: str
    created: str
    status: Literal["ok", "failed"]
    failure: str | None = None
    origin: Literal["bench", "import", "published"] = "bench"
    stack: StackRef
    image: ImageLock | None = None  # the lock of the image the ranks ran in (docker and other container runtimes)
    host_software: dict[str, Software] = Field(default_factory=dict)  # per host, for the host runtime
    sweep: SweepRef | None = None
    settings: Settings
    runtime: str = "host"  # a runtime's name (docker, host, ...), or imported
    hosts: list[HostRef] = Field(default_factory=list)
    ranks: list[RankResult] = Field(default_factory=list)
    facts: dict[str, HostFacts] = Field(default_factory=dict)  # per host, as `repro prepare` gathered them
    hardware: Hardware | None = None
    batch: BatchJob | None = None  # the batch job that ran the point (a batch scheduler's); None: run directly
    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    resolved: dict[str, Any] = Field(default_factory=dict)  # every setting as the workload reported it ran
    software: dict[str, Any] = Field(default_factory=dict)
    world: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)
    published: Published | None = None
    reported_images_per_sec: float | None = Field(default=None, gt=0)  # the program's own summary figure
    duration_s: float | None = None
    log_tail: str = ""
    # load, other work, steal, clocks (and GPUs') sampled on every host before, through and after the run
    # (repro.results.conditions); None: not sampled (older records, imports, batch schedulers)
    conditions: Conditions | None = None
    # the path NCCL took (GPU runs: its INFO lines per rank, parsed by repro.results.nccl); None: no NCCL ran or
    # a record from before. Added within schema 3: absent from the JSON while None, so older records and their
    # outputs stay byte for byte the same.
    fabric: Fabric | None = None

    @model_serializer(mode="wrap")
    def _without_absent_fabric(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if isinstance(data, dict) and data.get("fabric", 0) is None:
            del data["fabric"]
        return data


class RecordError(ResultsError):
    """A record document that cannot be turned into a RunRecord."""


class NewerSchemaError(RecordError):
    """A record written by a newer repro (its schema_version is above the one this repro reads)."""


class InvalidRecordError(RecordError):
    """A record document that is not a valid RunRecord of a schema version this repro reads."""


def _migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: `lock` became `image` (an image lock) or `host_software` (the host runtime's probe), and
    facts became typed per-host HostFacts, with declared hardware (imports) moved to `hardware`."""
    out = dict(data)
    lock = out.pop("lock", None)
    if isinstance(lock, dict) and lock.get("format") == LOCK_FORMAT:
        out["image"] = lock
    elif isinstance(lock, dict) and lock.get("runtime") == "host" and isinstance(lock.get("hosts"), dict):
        out["host_software"] = {h: from_host_probe(v).model_dump() for h, v in lock["hosts"].items()
                                if isinstance(v, dict)}
    facts = out.get("facts") or {}
    out["facts"] = {k: v for k, v in facts.items() if isinstance(v, dict) and v.get("format") == FACTS_FORMAT}
    declared = {k: v for k, v in facts.items() if not isinstance(v, dict) and v is not None}
    if declared:
        out["hardware"] = {k: str(v) for k, v in declared.items()}
    out["schema_version"] = 2
    return out


def _migrate_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 -> 3: the Slurm job (`slurm`) or another scheduler's job (`batch`, a mapping) became one generic
    BatchJob in `batch`, the scheduler's own fields kept whole as its `detail`."""
    out = dict(data)
    slurm, batch = out.pop("slurm", None), out.pop("batch", None)
    if isinstance(slurm, dict):
        detail = {k: v for k, v in slurm.items() if k != "script"}
        out["batch"] = {"scheduler": "slurm", "id": str(slurm.get("job_id", "")), "nodes": slurm.get("nodes") or [],
                        "state": slurm.get("state"), "script": slurm.get("script") or "", "detail": detail}
    elif isinstance(batch, dict):
        detail = {k: v for k, v in batch.items() if k not in ("scheduler", "manifest")}
        out["batch"] = {"scheduler": str(batch.get("scheduler") or "unknown"), "id": str(batch.get("name") or ""),
                        "nodes": batch.get("nodes") or [], "state": batch.get("state"),
                        "script": batch.get("manifest") or "", "detail": detail}
    out["schema_version"] = 3
    return out


# the workloads schema 3 ran on PyTorch: their backend was torch.distributed's (extra.dist_backend), never Horovod's
_V3_TORCH_WORKLOADS = ("torch_cnn", "torch_allreduce", "torch_tta")


def _migrate_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 3 -> 4, framework-neutral: `xla` became `compile`; Horovod's `backend` and a PyTorch point's
    extra.dist_backend became `comm` {library, backend}; the software found (`host_software`) names each framework
    in `frameworks` {name: {version, error, build}} (Software reads schema 3's flat fields)."""
    out = dict(data)
    settings = dict(out.get("settings") or {})
    if "xla" in settings:
        settings["compile"] = settings.pop("xla")
    backend = settings.pop("backend", None)
    if settings.get("workload") in _V3_TORCH_WORKLOADS:
        asked = (settings.get("extra") or {}).get("dist_backend")
        ran = (out.get("resolved") or {}).get("dist_backend")
        chosen = asked if asked not in (None, "auto") else ran
        settings["comm"] = {"library": "torch.distributed", "backend": chosen if isinstance(chosen, str) else None}
    elif backend is not None:  # Horovod's controller, but for imported PyTorch DDP benchmark logs (torch's backend)
        torch_ddp = (settings.get("extra") or {}).get("program") == "torch_ddp_benchmark"
        settings["comm"] = {"library": "torch.distributed" if torch_ddp else "horovod", "backend": backend}
    out["settings"] = settings
    out["schema_version"] = 4
    return out


MIGRATIONS = {1: _migrate_v1, 2: _migrate_v2, 3: _migrate_v3}


def parse_record(data: Any, where: str | None = None) -> RunRecord:
    """The one way from a record's JSON document to a RunRecord: schema-version check, migration of older
    schemas (the files are never rewritten), validation.

    NewerSchemaError for a newer schema, InvalidRecordError for anything else that is not a record; `where`
    (the file), when given, starts the message.
    """
    at = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise InvalidRecordError(f"{at}not a record (a JSON {type(data).__name__}, expected an object)")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidRecordError(f"{at}not a record (no schema_version)")
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(f"{at}record schema version {version} is newer than this repro reads "
                               f"({SCHEMA_VERSION})", hint="upgrade repro to read it")
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise InvalidRecordError(f"{at}record schema version {version} is not supported")
        data = MIGRATIONS[version](data)
        version = data["schema_version"]
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InvalidRecordError(f"{at}invalid record: {field + ': ' if field else ''}{first['msg']}") from None


def new_id(now: datetime | None = None) -> str:
    """A sortable, collision-safe record id: 20261122T031500Z-1f3a9c2e."""
    now = now or datetime.now(timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(4)


def now_iso() -> str:
    """The current UTC time as ISO 8601."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
