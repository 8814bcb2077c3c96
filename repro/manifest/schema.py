"""The stack manifest schema: what a stack pins, validated once at the edge.

Past this module code handles frozen `Stack` objects, never raw dicts. Derived fields (base image,
TensorFlow package) are filled in by repro.manifest.derive, not here.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

_DOTTED = re.compile(r"^\d+(\.\d+){0,3}$")
_OFED = re.compile(r"^\d+\.\d+-\d+(\.\d+){0,4}$")
_NCCL = re.compile(r"^\d+\.\d+\.\d+(-\d+)?$")


def _as_text(value: object) -> object:
    # YAML gives `driver: 440` as an int; a version is text.
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    return value


def _checker(pattern: re.Pattern[str], example: str):
    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"malformed version '{value}': expected something like {example}")
        return value

    return check


Version = Annotated[str, BeforeValidator(_as_text), AfterValidator(_checker(_DOTTED, "10.0 or 9.1.85"))]
OfedVersion = Annotated[str, BeforeValidator(_as_text), AfterValidator(_checker(_OFED, "4.7-3 or 4.7-3.2.9.0"))]
NcclVersion = Annotated[str, BeforeValidator(_as_text), AfterValidator(_checker(_NCCL, "2.5.6 or 2.5.6-1"))]
EnvName = Annotated[str, AfterValidator(_checker(re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$"), "NCCL_DEBUG"))]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class OS(_Model):
    """Operating system of the image (and, for bare-metal runs, of the hosts)."""

    distro: Literal["ubuntu", "debian", "centos", "rockylinux"] = Field(
        description="ubuntu, debian, centos or rockylinux"
    )
    version: Version = Field(description="Distribution release, e.g. 18.04 or 12")


class MPI(_Model):
    """MPI implementation built into the image."""

    implementation: Literal["openmpi", "mvapich2"] = "openmpi"
    version: Version = Field(description="MPI version, e.g. 4.0.0")


class TensorFlow(_Model):
    """TensorFlow as installed in the image."""

    version: Version = Field(description="TensorFlow version, e.g. 1.14.0 or 2.15.1")
    package: str | None = Field(
        None, description="pip package; derived: tensorflow-gpu (GPU, TF 1.x), tensorflow (GPU, 2.x), tensorflow-cpu"
    )
    build: Literal["binary", "source"] = Field(
        "binary",
        description="binary: the official wheel from the index; source: a wheel you built, taken from the wheelhouse",
    )


class Horovod(_Model):
    """Horovod version and build options (HOROVOD_* build variables)."""

    version: Version = Field(description="Horovod version, e.g. 0.28.1")
    gpu_operations: Literal["NCCL", "MPI"] | None = Field(None, description="GPU stacks only: HOROVOD_GPU_OPERATIONS")
    with_mpi: bool = True
    with_gloo: bool = True


class Packages(_Model):
    """Extra packages installed into the image."""

    apt: list[str] = Field(default_factory=list)
    pip: list[str] = Field(default_factory=list)


class Container(_Model):
    """How the stack's container is reached by the multi-node launch (seed 003's `sshd -p 50000`)."""

    ssh_port: int = Field(50000, ge=1, le=65535)


class Benchmark(_Model):
    """Defaults for `repro bench` with this stack; every one can be overridden on the command line."""

    workload: Literal["cnn", "tf_cnn_benchmarks", "allreduce", "tta"] = "cnn"
    model: str = "resnet50"
    batch_size: int = Field(64, ge=1, description="per-worker batch size")
    warmup_steps: int = Field(10, ge=0)
    steps: int = Field(100, ge=1, description="measured steps after warm-up")
    xla: bool = False
    fp16: bool = False
    data_format: Literal["NCHW", "NHWC"] | None = Field(None, description="derived: NCHW on GPU, NHWC on CPU")


class Stack(_Model):
    """A pinned software stack: OS, GPU libraries, MPI, Python, TensorFlow, Horovod and run settings."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=80)
    description: str = ""
    os: OS
    base_image: str | None = Field(None, description="derived from CUDA/cuDNN/OS when absent")
    driver: Version | None = Field(None, description="minimum NVIDIA driver on the hosts (GPU stacks)")
    cuda: Version | None = None
    cudnn: Version | None = None
    nccl: NcclVersion | None = None
    mpi: MPI
    ofed: OfedVersion | None = Field(None, description="Mellanox OFED user space in the image")
    gpudirect: str | None = Field(None, description="GPUDirect RDMA peer-memory module version on the hosts")
    python: Version = Field(description="Python version in the image, e.g. 3.11 or 2.7")
    tensorflow: TensorFlow
    horovod: Horovod
    packages: Packages = Field(default_factory=Packages)
    env: dict[EnvName, str] = Field(default_factory=dict, description="NCCL_*, HOROVOD_*, OMPI_MCA_* at launch")
    container: Container = Field(default_factory=Container)
    benchmark: Benchmark = Field(default_factory=Benchmark)

    @property
    def gpu(self) -> bool:
        """A GPU stack is one that pins CUDA."""
        return self.cuda is not None

    @model_validator(mode="after")
    def _gpu_fields_go_together(self) -> Stack:
        gpu_only = {"driver": self.driver, "cudnn": self.cudnn, "nccl": self.nccl, "gpudirect": self.gpudirect}
        if self.cuda is None:
            present = [k for k, v in gpu_only.items() if v is not None]
            if self.horovod.gpu_operations is not None:
                present.append("horovod.gpu_operations")
            if present:
                raise PydanticCustomError(
                    "gpu_fields",
                    "GPU-only field on a CPU stack (set `cuda` for a GPU stack, or remove it)",
                    {"fields": present},
                )
        else:
            missing = [k for k in ("driver", "cudnn", "nccl") if getattr(self, k) is None]
            if missing:
                raise PydanticCustomError(
                    "gpu_fields", "a GPU stack (one that pins cuda) must also pin this", {"fields": missing}
                )
        return self


# Accepted in a manifest file but consumed by the resolver, never part of a Stack.
RESOLVER_KEYS = frozenset({"extends"})


def json_schema() -> dict:
    """JSON Schema of a manifest file, for editors' YAML completion."""
    schema = Stack.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "repro stack manifest"
    schema["properties"]["extends"] = {
        "type": "string",
        "description": "another manifest (path relative to this file) whose fields this one overrides",
    }
    # name defaults to the file name, so it is not required in the file itself
    schema["required"] = [r for r in schema.get("required", []) if r != "name"]
    return schema
