"""What a run record carries about where it ran (typed, stored with the record, read back as models).

- `HostFacts`: what `repro prepare` gathered on a host (format repro.facts/1; parsed from the raw
  module output by repro.hosts.facts.normalise).
- `ImageLock`: what `repro up` verified inside a stack's image (format repro.lock/1), kept in the store
  under locks/ and in every record of a run in that image.
- `SlurmJob`: the Slurm job that ran a point under `repro bench --scheduler slurm` (id, partition, nodes,
  Slurm version, srun's MPI plugins, the job script as submitted, secrets redacted, and its end state).

Records are read back as these models, never as raw dicts (record schema 2; see repro.results.record).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FACTS_FORMAT = "repro.facts/1"
LOCK_FORMAT = "repro.lock/1"


# ------------------------------------------------------------------ host facts


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class OS(_Model):
    id: str | None = None
    version: str | None = None
    name: str | None = None


class CPU(_Model):
    model: str | None = None
    sockets: int | None = None
    cores: int | None = None
    threads: int | None = None


class Interface(_Model):
    name: str
    kind: str | None = None  # ether, infiniband, loopback, none
    driver_kind: str | None = None  # `ip -d` info_kind: veth, dummy, bridge ... (null for plain hardware NICs)
    mac: str | None = None
    mtu: int | None = None
    state: str | None = None  # operstate: up, down, unknown (dummy and loopback interfaces that are up)
    up: bool = False  # administratively up (flag UP)
    speed_mbps: int | None = None
    mode: str | None = None
    addresses: list[str] = Field(default_factory=list)


class Link(_Model):
    name: str
    present: bool = False
    kind: str | None = None
    state: str | None = None
    up: bool = False
    mtu: int | None = None
    addresses: list[str] = Field(default_factory=list)
    link_gbps: float | None = None
    link_gbps_source: Literal["sysfs", "infiniband", "inventory"] | None = None


class PCI(_Model):
    mellanox: list[str] = Field(default_factory=list)
    nvidia: list[str] = Field(default_factory=list)


class GPU(_Model):
    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_mib: int | None = None
    sm_clock_mhz: int | None = None
    max_sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    max_mem_clock_mhz: int | None = None
    power_limit_w: float | None = None


class Nvidia(_Model):
    driver: str | None = None
    cuda: str | None = None
    topology: str | None = None


class IBPort(_Model):
    device: str
    port: int
    state: str | None = None
    phys_state: str | None = None
    rate_gbps: float | None = None
    link_layer: str | None = None


class Infiniband(_Model):
    ofed: str | None = None
    ports: list[IBPort] = Field(default_factory=list)


class Docker(_Model):
    installed: bool = False
    client: str | None = None
    server: str | None = None
    reachable: bool = False
    runtimes: list[str] = Field(default_factory=list)
    default_runtime: str | None = None
    error: str | None = None


class Dataset(_Model):
    path: str
    exists: bool = False
    mountpoint: str | None = None
    source: str | None = None
    fstype: str | None = None
    read_only: bool | None = None


class CheckOutput(_Model):
    status: Literal["ok", "error", "timeout", "absent"]
    rc: int | None = None
    output: str = ""


class HostFacts(_Model):
    """Everything repro knows about one host after `repro prepare`; see the module docstring."""

    format: str = FACTS_FORMAT
    host: str
    address: str | None = None
    gathered_at: str | None = None
    hostname: str | None = None
    hostname_address: str | None = None  # what the hostname resolves to on the host itself
    os: OS = Field(default_factory=OS)
    kernel: str | None = None
    arch: str | None = None
    cpu: CPU = Field(default_factory=CPU)
    memory_bytes: int | None = None
    interfaces: list[Interface] = Field(default_factory=list)
    interface: Link
    pci: PCI = Field(default_factory=PCI)
    gpus: list[GPU] = Field(default_factory=list)
    nvidia: Nvidia = Field(default_factory=Nvidia)
    infiniband: Infiniband = Field(default_factory=Infiniband)
    kernel_modules_readable: bool = False
    peer_memory: list[str] = Field(default_factory=list)
    docker: Docker = Field(default_factory=Docker)
    dataset: Dataset | None = None
    checks: dict[str, CheckOutput] = Field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The JSON form the store keeps."""
        return self.model_dump(mode="json")


# ------------------------------------------------------------------ the image lock


class _Open(BaseModel):
    # a lock written by a newer repro may hold more fields: keep them rather than drop provenance
    model_config = ConfigDict(frozen=True, extra="allow")


class LockStack(_Open):
    name: str
    hash: str
    image_hash: str | None = None
    file: str | None = None


class BaseRecipe(_Open):
    """How the image's base came to be: the engine's (rebuilt false), or an end-of-life nvidia/cuda base repro
    rebuilt from a recipe (rebuilt true: recipe, recipe_key, the tag it replaces, pinned keys, ... kept as written)."""

    rebuilt: bool = False
    image: str | None = None
    id: str | None = None
    recipe: str | None = None
    tag: str | None = None


class LockRecipe(_Open):
    """What the image was built from: the rendered Dockerfile, and the rebuilt base's, for `repro archive`."""

    dockerfile: str | None = None
    base_dockerfile: str | None = None


class LockImage(_Open):
    tag: str
    key: str | None = None
    id: str
    repo_digests: list[str] = Field(default_factory=list)
    size: int | None = None
    created: str | None = None
    base_image: str | None = None
    base_image_id: str | None = None
    context_files: dict[str, str] = Field(default_factory=dict)
    build_args: dict[str, str] = Field(default_factory=dict)
    base: BaseRecipe | None = None


class LockSshd(_Open):
    port: int
    host_keys: list[str] = Field(default_factory=list)


class LockBuild(_Open):
    log: str | None = None
    built: bool = False
    seconds: float | None = None
    started: str | None = None
    finished: str | None = None


class ImageLock(_Open):
    """What `repro up` verified inside a stack's image: the provenance of every run in it."""

    format: str = LOCK_FORMAT
    repro_version: str | None = None
    stack: LockStack
    image: LockImage
    versions: dict[str, str | None] = Field(default_factory=dict)
    horovod_build: dict[str, bool | None] = Field(default_factory=dict)
    pip_freeze: list[str] = Field(default_factory=list)
    libraries: list[Any] = Field(default_factory=list)
    sshd: LockSshd
    environment: dict[str, Any] = Field(default_factory=dict)
    build: LockBuild = Field(default_factory=LockBuild)
    recipe: LockRecipe | None = None
    verified_at: str | None = None

    @property
    def tag(self) -> str:
        return self.image.tag

    @property
    def image_id(self) -> str:
        return self.image.id

    def known_hosts(self, addresses: list[str]) -> str:
        """known_hosts text for the image's sshd on each address ([addr]:port keytype key)."""
        lines = []
        for address in addresses:
            name = address if self.sshd.port == 22 else f"[{address}]:{self.sshd.port}"
            for key in self.sshd.host_keys:
                parts = key.split()
                if len(parts) >= 2:
                    lines.append(f"{name} {parts[0]} {parts[1]}")
        return "\n".join(lines) + ("\n" if lines else "")


# ------------------------------------------------------------------ the batch job


class SlurmJob(_Model):
    """The Slurm job that ran one point (`repro bench --scheduler slurm`), as Slurm reported it."""

    job_id: str
    job_name: str | None = None
    cluster: str | None = None
    partition: str | None = None
    account: str | None = None
    nodes: list[str] = Field(default_factory=list)  # the allocated nodes, expanded (h1, h2)
    node_list: str | None = None  # as Slurm writes it (h[1-2])
    state: str | None = None  # COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ...
    reason: str | None = None  # NonZeroExitCode, TimeLimit, NodeDown, ...
    exit_code: str | None = None  # Slurm's CODE:SIGNAL
    time_limit: str | None = None
    submit_time: str | None = None
    start_time: str | None = None
    end_time: str | None = None
    submit_host: str | None = None  # the host sbatch ran on
    submit_command: list[str] = Field(default_factory=list)
    slurm_version: str | None = None
    mpi_plugins: list[str] = Field(default_factory=list)  # `srun --mpi=list`
    pmi: str | None = None  # the plugin the ranks were wired up with (srun --mpi=...), for the srun launcher
    failed_nodes: list[str] = Field(default_factory=list)  # nodes Slurm found dead under the job
