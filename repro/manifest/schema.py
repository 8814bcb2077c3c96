"""The stack manifest schema: what a stack pins, validated once at the edge.

Past this module code handles frozen `Stack` objects, never raw dicts. Derived fields (base image,
TensorFlow package) are filled in by repro.manifest.derive, not here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError

from repro import inputs
from repro.inputs import Kind
from repro.manifest import frameworks
from repro.manifest.frameworks import FRAMEWORKS
from repro.workloads import catalog

MAX_BATCH = 1 << 20
MAX_STEPS = 10_000_000


def _as_text(value: object) -> object:
    # YAML gives `driver: 440` as an int; a version is text. (The loader never yields floats: `10.10`
    # stays the text "10.10".) Integers the loader let through are at most 40 digits long.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return str(value)
    return value


def _version(kind: Kind, example: str):
    """A version field: text checked against `kind`; a bare YAML number is taken as its text."""
    schema = {"anyOf": [kind.json_schema(), {"type": "number", "minimum": 0}],
              "examples": [example]}
    return Annotated[str, BeforeValidator(_as_text), AfterValidator(kind.check), WithJsonSchema(schema)]


def _text(kind: Kind):
    """A text field checked against `kind` at the input boundary."""
    return Annotated[str, AfterValidator(kind.check), WithJsonSchema(kind.json_schema())]


Version = _version(inputs.VERSION, "2.15.1")
OfedVersion = _version(inputs.OFED_VERSION, "4.7-3.2.9.0")
NcclVersion = _version(inputs.NCCL_VERSION, "2.5.6")
ModuleVersion = _version(inputs.MODULE_VERSION, "1.0-8")
EnvName = _text(inputs.ENV_NAME)
EnvValue = Annotated[str, BeforeValidator(_as_text), AfterValidator(inputs.TEXT.check),
                     WithJsonSchema({"anyOf": [inputs.TEXT.json_schema(), {"type": "integer", "minimum": 0}]})]
PipRequirement = _text(inputs.PIP_REQUIREMENT)
PipProject = _text(inputs.PIP_PROJECT)
AptPackage = _text(inputs.APT_PACKAGE)
ImageReference = _text(inputs.IMAGE_REFERENCE)
StackName = _text(inputs.STACK_NAME)
Description = _text(inputs.DESCRIPTION)

# The built-in workloads, from their one list (plain data: importing it imports no workload program). A
# workload's models and framework come from its spec, imported when a stack names the workload.
WorkloadName = Literal[tuple(catalog.BUILTIN)]  # type: ignore[valid-type]


class _KnownModel:
    """A model some built-in workload knows. Checked against the stack's workload first (one spec imported),
    against every workload's models only when that fails; the editor schema's enum lists them all."""

    @staticmethod
    def check(value: str, info: ValidationInfo) -> str:
        workload = info.data.get("workload")  # validated before the model (declared first)
        if workload is not None and value in catalog.spec_of(workload).models:
            return value
        known = catalog.all_models()
        if value not in known:
            expected = ", ".join(repr(m) for m in known[:-1]) + f" or {known[-1]!r}"
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
        return value

    def __get_pydantic_json_schema__(self, core: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {**handler(core), "enum": list(catalog.all_models())}


_MODEL = _KnownModel()
Model = Annotated[str, AfterValidator(_MODEL.check), _MODEL]


class _Model(BaseModel):
    # No whitespace stripping: a value is taken as written, so the editor schema and repro agree on it.
    model_config = ConfigDict(extra="forbid", frozen=True)


class OS(_Model):
    """Operating system of the image (and, for bare-metal runs, of the hosts)."""

    distro: Literal["ubuntu", "debian", "centos", "rockylinux"] = Field(
        description="Linux distribution of the image: ubuntu, debian, centos or rockylinux")
    version: Version = Field(description="distribution release, e.g. 18.04 or 12 (write it quoted)")


class MPI(_Model):
    """MPI implementation built into the image."""

    implementation: Literal["openmpi", "mvapich2"] = Field("openmpi", description="openmpi or mvapich2")
    version: Version = Field(description="MPI version, e.g. 4.0.0")


class TensorFlow(_Model):
    """TensorFlow as installed in the image."""

    version: Version = Field(description="TensorFlow version, e.g. 1.14.0 or 2.15.1")
    package: PipProject | None = Field(
        None, description="pip package; derived: tensorflow-gpu (GPU, TF 1.x), tensorflow (GPU, 2.x), tensorflow-cpu")
    build: Literal["binary", "source"] = Field(
        "binary",
        description="binary: the official wheel from the index; source: a wheel you built, taken from the wheelhouse")


def _no_credentials(value: str) -> str:
    # An index URL lands in the rendered recipe and the lock: a user:token@ in it would be written to disk.
    netloc = value.split("://", 1)[-1].split("/", 1)[0]
    if "@" in netloc:
        raise PydanticCustomError("url_credentials", "an index URL must not hold credentials (user:token@); "
                                  "give them to pip through its own configuration (netrc, keyring) instead")
    return value


IndexUrl = Annotated[str, AfterValidator(inputs.URL.check), AfterValidator(_no_credentials),
                     WithJsonSchema(inputs.URL.json_schema())]
Commit = Annotated[str, Field(pattern="^[0-9a-f]{40}$", description="a full 40-hex-digit git commit")]


class PyTorch(_Model):
    """PyTorch as installed in the image (or found on a host)."""

    version: Version = Field(description="PyTorch version, e.g. 2.13.0 (the local label, +cpu or +cu124, is "
                             "the variant)")
    package: PipProject | None = Field(None, description="pip project; derived: torch (Debian: python3-torch)")
    source: Literal["pip", "debian"] = Field(
        "pip", description="pip: a wheel (from the index_url, PyPI or the wheelhouse); debian: Debian's "
        "python3-torch package")
    variant: Annotated[str, Field(pattern="^(cpu|cu[0-9]{3,4})$")] | None = Field(
        None, description="the wheel's build; derived: cpu for a CPU stack, cu<major><minor> from cuda")
    index_url: IndexUrl | None = Field(
        None, description="extra pip index holding the variant's wheels, e.g. https://download.pytorch.org/whl/cu124"
        " (never credentials)")


class Horovod(_Model):
    """Horovod version and build options (HOROVOD_* build variables)."""

    version: Version = Field(description="Horovod version, e.g. 0.28.1")
    commit: Commit | None = Field(
        None, description="build Horovod from this commit of github.com/horovod/horovod (e.g. main with the C++17 "
        "fix for torch >= 2.1) instead of the release")
    gpu_operations: Literal["NCCL", "MPI"] | None = Field(
        None, description="GPU stacks only: HOROVOD_GPU_OPERATIONS, NCCL or MPI")
    with_mpi: bool = Field(True, description="build with the MPI controller (HOROVOD_WITH_MPI)")
    with_gloo: bool = Field(True, description="build with the Gloo controller (HOROVOD_WITH_GLOO)")


class Packages(_Model):
    """Extra packages installed into the image."""

    apt: list[AptPackage] = Field(default_factory=list, max_length=200,
                                  description="Debian/Ubuntu packages, e.g. libnuma1 or curl=7.88.1-10")
    pip: list[PipRequirement] = Field(default_factory=list, max_length=200,
                                      description="pip requirements without markers, e.g. six==1.16.0")


# The paths NCCL can take (repro.results.fabric derives them from NCCL's log; docs/fabric.md).
InterNodePath = Literal["rdma-gdr", "rdma", "socket", "plugin"]
IntraNodePath = Literal["p2p", "shm", "p2p-indirect", "nvls"]


class Expect(_Model):
    """The path NCCL must take (GPU stacks): a run that took another is a failed run naming the path it took."""

    inter_node: InterNodePath | None = Field(None, description="between nodes: rdma-gdr (RDMA with GPUDirect), rdma, "
                                             "socket (TCP) or plugin (a net plugin without GPUDirect)")
    intra_node: IntraNodePath | None = Field(None, description="inside a node: p2p, shm, p2p-indirect or nvls")


class Container(_Model):
    """How the stack's container is reached by the multi-node launch (seed 003's `sshd -p 50000`)."""

    ssh_port: int = Field(50000, ge=1, le=65535, description="port of the container's sshd for mpirun")


class Benchmark(_Model):
    """Defaults for `repro bench` with this stack; every one can be overridden on the command line."""

    workload: WorkloadName = Field(
        "cnn", description="cnn (throughput), allreduce (all-reduce sweep) or tta (time to accuracy): the "
        "stack's framework picks the program (torch_cnn, torch_allreduce, torch_tta: older names of their PyTorch "
        "programs); tf_cnn_benchmarks on TensorFlow; lm (transformer training) on PyTorch; probe (no framework)")
    model: Model = Field("resnet50", description="the model to train, one the workload knows: cnn its ResNets, "
                         "Inception-v3 and VGGs; tta also digits_cnn; tf_cnn_benchmarks its own model names")
    batch_size: int = Field(64, ge=1, le=MAX_BATCH, description="per-worker batch size")
    warmup_steps: int = Field(10, ge=0, le=MAX_STEPS, description="steps run before measuring")
    steps: int = Field(100, ge=1, le=MAX_STEPS, description="measured steps after warm-up")
    xla: bool = Field(False, description="compile with XLA")
    fp16: bool = Field(False, description="mixed precision (fp16) instead of fp32")
    precision: Literal["fp32", "fp16", "bf16"] | None = Field(
        None, description="the precision, where fp16 does not say it (bf16 for lm on GPUs); overrides fp16")
    data_format: Literal["NCHW", "NHWC"] | None = Field(None, description="derived: NCHW on GPU, NHWC on CPU")

    @model_validator(mode="after")
    def _model_fits_workload(self) -> Benchmark:
        known = catalog.spec_of(self.workload).models
        if known and self.model not in known:
            raise PydanticCustomError("model_workload", "workload {workload} has no model {model}; it knows: {known}",
                                      {"workload": self.workload, "model": self.model, "known": ", ".join(known)})
        return self


class Stack(_Model):
    """A pinned software stack: OS, GPU libraries, MPI, Python, one framework (TensorFlow or PyTorch), Horovod
    (optional) and run settings."""

    name: StackName = Field(description="label of the stack; defaults to the file name without .yaml")
    description: Description = Field("", description="one line saying what the stack is")
    os: OS = Field(description="operating system of the image")
    base_image: ImageReference | None = Field(
        None, description="image to build FROM; derived: nvidia/cuda:<cuda>-cudnn<N>-devel-<os> for GPU stacks, "
        "<distro>:<version> for CPU stacks")
    driver: Version | None = Field(None, description="minimum NVIDIA driver on the hosts (GPU stacks), e.g. 440.33.01")
    cuda: Version | None = Field(None, description="CUDA toolkit; setting it makes a GPU stack, e.g. 10.0 or 12.2.2")
    cudnn: Version | None = Field(None, description="cuDNN (GPU stacks), e.g. 7.6.5")
    nccl: NcclVersion | None = Field(None, description="NCCL (GPU stacks), e.g. 2.5.6")
    mpi: MPI = Field(description="MPI implementation and version in the image")
    ofed: OfedVersion | None = Field(None, description="Mellanox OFED user space in the image, e.g. 4.7-3.2.9.0")
    gpudirect: ModuleVersion | None = Field(
        None, description="GPUDirect RDMA peer-memory module version on the hosts, e.g. 1.0-8")
    python: Version = Field(description="Python version in the image, e.g. 3.11 or 2.7")
    tensorflow: TensorFlow | None = Field(
        None, description="TensorFlow version, package and build (a stack pins tensorflow or pytorch)")
    pytorch: PyTorch | None = Field(
        None, description="PyTorch version, package, source and variant (a stack pins tensorflow or pytorch)")
    horovod: Horovod | None = Field(None, description="Horovod version and build options (optional)")
    packages: Packages = Field(default_factory=Packages, description="extra apt and pip packages in the image")
    env: dict[EnvName, EnvValue] = Field(default_factory=dict, max_length=500,
                                         description="launch environment: NCCL_*, HOROVOD_*, OMPI_MCA_*; "
                                         "`NAME: null` in a stack that extends another removes an inherited one")
    container: Container = Field(default_factory=Container, description="the container's sshd")
    expect: Expect | None = Field(None, description="the path NCCL must take (GPU stacks), e.g. {inter_node: "
                                  "rdma-gdr, intra_node: p2p}; a run that took another path fails")
    benchmark: Benchmark = Field(default_factory=Benchmark, description="defaults for `repro bench`")

    @property
    def gpu(self) -> bool:
        """A GPU stack is one that pins CUDA."""
        return self.cuda is not None

    @property
    def framework(self) -> str:
        """The name of the one framework the stack pins (its plug-in: repro.manifest.frameworks.of)."""
        return frameworks.of(self).name

    @model_validator(mode="before")
    @classmethod
    def _framework_default_workload(cls, data: object) -> object:
        # benchmark.workload defaults to the pinned framework's own default (cnn for TensorFlow)
        if isinstance(data, dict):
            named = [n for n in FRAMEWORKS.names() if data.get(n) is not None]
            bench = data.get("benchmark")
            if len(named) == 1 and (bench is None or (isinstance(bench, dict) and "workload" not in bench)):
                default = FRAMEWORKS.get(named[0]).default_workload
                if default != Benchmark.model_fields["workload"].default:
                    data = {**data, "benchmark": {**(bench or {}), "workload": default}}
        return data

    @model_validator(mode="after")
    def _one_framework(self) -> Stack:
        pinned = frameworks.pinned(self)
        if len(pinned) != 1:
            extra = " (a stack that extends another drops the inherited one with `tensorflow: null`)" if pinned else ""
            raise PydanticCustomError(
                "framework", "a stack pins exactly one framework, {known}; found {found}" + extra,
                {"found": " and ".join(pinned) or "neither", "fields": pinned,
                 "known": " or ".join(FRAMEWORKS.names())})
        spec = catalog.spec_of(self.benchmark.workload)
        if spec.frameworks and pinned[0] not in spec.frameworks:
            raise PydanticCustomError(
                "workload_framework", "workload {workload} runs on {wants}, but this stack pins {found}",
                {"workload": self.benchmark.workload, "wants": " or ".join(spec.frameworks), "found": pinned[0],
                 "fields": ["benchmark.workload"]})
        known = spec.program(pinned[0]).models if spec.frameworks else spec.models
        if known and self.benchmark.model not in known:  # a family's program for this framework knows fewer
            raise PydanticCustomError(
                "workload_framework", "workload {workload} on {found} has no model {model}; it knows: {known}",
                {"workload": self.benchmark.workload, "found": pinned[0], "model": self.benchmark.model,
                 "known": ", ".join(known), "fields": ["benchmark.model"]})
        return self

    @model_validator(mode="after")
    def _gpu_fields_go_together(self) -> Stack:
        gpu_only = {"driver": self.driver, "cudnn": self.cudnn, "nccl": self.nccl, "gpudirect": self.gpudirect,
                    "expect": self.expect}  # no NCCL runs on a CPU stack: a path it must take cannot be met
        if self.cuda is None:
            present = [k for k, v in gpu_only.items() if v is not None]
            if self.horovod is not None and self.horovod.gpu_operations is not None:
                present.append("horovod.gpu_operations")
            if present:
                raise PydanticCustomError(
                    "gpu_fields",
                    "GPU-only field on a CPU stack (set `cuda` for a GPU stack, or remove it)",
                    {"fields": present},
                )
        else:
            # a PyTorch wheel brings its own cuDNN and NCCL: pinning the image's system copies is optional there
            required = ("driver", *frameworks.of(self).gpu_libraries)
            missing = [k for k in required if getattr(self, k) is None]
            if missing:
                raise PydanticCustomError(
                    "gpu_fields", "a GPU stack (one that pins cuda) must also pin this", {"fields": missing}
                )
        return self


# Accepted in a manifest file but consumed by the resolver, never part of a Stack.
RESOLVER_KEYS = frozenset({"extends"})



_PLUGIN_SECTIONS: set[str] = set()  # Stack fields added for plug-in frameworks (sync_sections)


def sync_sections() -> type[Stack]:
    """Stack with a section field for every registered framework: the built-ins' are declared above, a plug-in's
    (a framework registered at run time) is its plug-in's section model, None when a stack leaves it out."""
    from pydantic.fields import FieldInfo

    wanted = {n for n in FRAMEWORKS.names() if n in _PLUGIN_SECTIONS or n not in Stack.model_fields}
    if wanted == _PLUGIN_SECTIONS:
        return Stack
    for name in _PLUGIN_SECTIONS - wanted:
        del Stack.__pydantic_fields__[name]
    for name in wanted - _PLUGIN_SECTIONS:
        framework = FRAMEWORKS.get(name)
        Stack.__pydantic_fields__[name] = FieldInfo.from_annotated_attribute(
            framework.section | None, None)  # type: ignore[arg-type]
    _PLUGIN_SECTIONS.clear()
    _PLUGIN_SECTIONS.update(wanted)
    # pydantic builds a model's validator from its fields once: rebuilt when the registered frameworks change
    Stack.model_rebuild(force=True)
    return Stack


def plugin_sections() -> frozenset[str]:
    """The Stack fields of plug-in frameworks (left out of a stack's hash while unset, as later fields are)."""
    return frozenset(_PLUGIN_SECTIONS)
