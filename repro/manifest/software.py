"""The software found in an image or on a host, and the one check of it against a stack (pure).

`repro up` probes the image it built, the `host` runtime probes each host's own installation; both turn
what they found into a `Software` value and ask `mismatches(stack, software, where=...)` what differs.
Every difference reads "component: pinned X, found Y".
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from repro.manifest import frameworks
from repro.manifest.frameworks import FRAMEWORKS

Where = Literal["image", "host"]


class FrameworkFound(BaseModel):
    """One framework as a probe found it: its version (None: not found or not importable; `error` says why) and
    what its build reports (PyTorch: cuda, cudnn, nccl, backends), as its plug-in reads them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: str | None = None  # as the framework reports it: 2.15.1, 2.13.0+cpu
    error: str | None = None
    build: dict[str, Any] = Field(default_factory=dict)


class Software(BaseModel):
    """Versions found (None: not found or not importable; the *_error fields say why)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    os: str | None = None  # "debian 12"
    python: str | None = None
    executable: str | None = None
    frameworks: dict[str, FrameworkFound] = Field(default_factory=dict)  # by plug-in name (repro.manifest.frameworks)
    packages: dict[str, str] = Field(default_factory=dict)  # installed Python distributions (normalised names)
    horovod: str | None = None
    horovod_error: str | None = None
    horovod_built: dict[str, bool | None] = Field(default_factory=dict)  # tensorflow, pytorch, mpi, gloo, nccl
    mpi: str | None = None  # "openmpi 4.1.4"
    mpi_error: str | None = None
    cuda: str | None = None
    cudnn: str | None = None
    nccl: str | None = None
    ofed: str | None = None
    driver: str | None = None  # the NVIDIA driver (nvidia-smi), on a host
    sshd_port: int | None = None
    ssh_host_keys: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _schema3_fields(cls, data: Any) -> Any:
        # records before schema 4 (and their image locks' probes) hold one flat field per framework fact
        if not isinstance(data, dict) or not any(k in SCHEMA3_FIELDS for k in data):
            return data
        data, found = dict(data), dict(data.get("frameworks") or {})
        for key, (name, part) in SCHEMA3_FIELDS.items():
            value = data.pop(key, None)
            if value is None or value == {}:
                continue
            entry = dict(found.get(name) or {})
            if part in ("version", "error"):
                entry[part] = value
            else:
                entry["build"] = {**entry.get("build", {}), part: value}
            found[name] = entry
        data["frameworks"] = found
        return data

    def framework(self, name: str) -> FrameworkFound:
        """What was found of framework `name` (an empty FrameworkFound when nothing was)."""
        return self.frameworks.get(name) or FrameworkFound()


# Software's fields before schema 4: field -> (framework, version | error | a build fact)
SCHEMA3_FIELDS = {"tensorflow": ("tensorflow", "version"), "tensorflow_error": ("tensorflow", "error"),
                  "torch": ("pytorch", "version"), "torch_error": ("pytorch", "error"),
                  "torch_cuda": ("pytorch", "cuda"), "torch_cudnn": ("pytorch", "cudnn"),
                  "torch_nccl": ("pytorch", "nccl"), "torch_backends": ("pytorch", "backends")}


def release(text: str | None) -> tuple[int, ...]:
    """The leading numeric release of a version string: '7.6.5.32-1+cuda10.0' -> (7, 6, 5, 32)."""
    m = re.match(r"\s*([0-9]+(?:[.-][0-9]+)*)", text or "")
    return tuple(int(x) for x in re.split(r"[.-]", m.group(1))) if m else ()


def same(pinned: str, found: str | None) -> bool:
    """Whether `found` lies in the pinned release line (7.6.5 matches 7.6.5.32-1+cuda10.0)."""
    want = release(pinned)
    return bool(want) and release(found)[: len(want)] == want


def normal_name(name: str) -> str:
    """A Python distribution name as PEP 503 normalises it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def cudnn_text(value: object) -> str | None:
    """torch.backends.cudnn.version() as a version: 91300 -> '9.13.0' (cuDNN 9: M*10000+m*100+p), 8907 -> '8.9.7'
    (before 9: M*1000+m*100+p)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    major, rest = (value // 10000, value % 10000) if value >= 90000 else (value // 1000, value % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def nccl_text(value: object) -> str | None:
    """torch.cuda.nccl.version() as a version: (2, 27, 7) -> '2.27.7'; older releases return an int (21805 ->
    '2.18.5', 2708 -> '2.7.8')."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(x, int) for x in value):
        return ".".join(str(x) for x in value[:3])
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    major, rest = (value // 10000, value % 10000) if value >= 10000 else (value // 1000, value % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _built(flag: bool | None, what: str) -> str:
    return "unknown" if flag is None else f"{what} built in" if flag else f"{what} not built in"


def _versions(stack, sw: Software, where: Where) -> list[str]:
    out: list[str] = []

    def version(component: str, pinned: str | None, found: str | None, error: str | None = None) -> None:
        if pinned and not same(pinned, found):
            out.append(f"{component}: pinned {pinned}, found {found or (error and f'none ({error})') or 'none'}")

    # a host's python only has to match the release line (3.11 for 3.11.2); an image's likewise
    version("python", ".".join(stack.python.split(".")[:2]) if where == "host" else stack.python, sw.python)
    out += frameworks.of(stack).mismatches(stack, sw, where, None)
    if stack.horovod is not None:
        version("horovod", stack.horovod.version, sw.horovod, sw.horovod_error)
    found_impl, _, found_mpi = (sw.mpi or "").partition(" ")
    if found_impl != stack.mpi.implementation or not same(stack.mpi.version, found_mpi):
        what = sw.mpi or (f"none ({sw.mpi_error})" if sw.mpi_error else "none")
        out.append(f"mpi: pinned {stack.mpi.implementation} {stack.mpi.version}, found {what}")
    if stack.gpu and where == "image":
        version("cuda", stack.cuda, sw.cuda)
        version("cudnn", stack.cudnn, sw.cudnn)
        version("nccl", stack.nccl, sw.nccl)
        version("ofed", stack.ofed, sw.ofed)
    return out


def _horovod_build(stack, sw: Software, where: Where, backend: str | None) -> list[str]:
    if sw.horovod is None or stack.horovod is None:
        return []
    out: list[str] = []
    flags = sw.horovod_built
    framework = frameworks.of(stack)
    if where == "image" and flags.get(framework.name) is not True:
        found = _built(flags.get(framework.name), framework.title)
        out.append(f"horovod {framework.name}: pinned built in, found {found}")
    names = {"mpi": "MPI", "gloo": "Gloo", "nccl": "NCCL"}
    if where == "image":  # the image must be built exactly as pinned
        for key, pinned in (("mpi", stack.horovod.with_mpi), ("gloo", stack.horovod.with_gloo)):
            if flags.get(key) is not pinned:
                found = _built(flags.get(key), names[key])
                out.append(f"horovod with_{key}: pinned {str(pinned).lower()}, found {found}")
        if stack.horovod.gpu_operations == "NCCL" and flags.get("nccl") is not True:
            out.append(f"horovod gpu_operations: pinned NCCL, found {_built(flags.get('nccl'), 'NCCL')}")
    elif backend in ("mpi", "gloo") and flags.get(backend) is False:  # a host only needs the controller it runs
        out.append(f"horovod {backend} controller: needed by --backends {backend}, found "
                   f"{_built(False, names[backend])}")
    return out


def mismatches(stack, sw: Software, *, where: Where, backend: str | None = None) -> list[str]:
    """Every way `sw` differs from what `stack` pins, as 'component: pinned X, found Y'.

    where="image": the stack's image must hold exactly what it pins (OS, Horovod's build flags, GPU
    libraries, the container sshd); where="host": a host's own installation must match the versions
    and have the Horovod controller `backend` needs.
    """
    out: list[str] = []
    if where == "image":
        want = f"{stack.os.distro} {stack.os.version}"
        if sw.os != want:
            out.append(f"os: pinned {want}, found {sw.os or 'no /etc/os-release'}")
    out += _versions(stack, sw, where)
    out += _horovod_build(stack, sw, where, backend)
    out += frameworks.of(stack).backend_mismatches(sw, backend)
    if where == "image":
        if sw.sshd_port != stack.container.ssh_port:
            out.append(f"sshd port: pinned {stack.container.ssh_port}, found {sw.sshd_port or 'none'}")
        if not sw.ssh_host_keys:
            out.append("sshd host keys: pinned present, found none")
    return out


def from_host_probe(found: dict) -> Software:
    """The `host` runtime's probe output (JSON: python, executable, tensorflow[_error], horovod[_error],
    horovod_built, torch = {version, cuda, cudnn, nccl, backends} or {error}, mpi = `mpirun --version`'s first
    line or mpi_error) as Software."""
    text = str(found.get("mpi") or "")
    m = re.search(r"\(Open MPI\)\s+(\S+)", text)
    mpi = f"openmpi {m.group(1)}" if m else (text.strip() or None)
    built = found.get("horovod_built") if isinstance(found.get("horovod_built"), dict) else {}
    return Software(
        os=found.get("os") if isinstance(found.get("os"), str) else None,
        driver=found.get("driver") if isinstance(found.get("driver"), str) else None,
        python=found.get("python"), executable=found.get("executable"), horovod=found.get("horovod"),
        horovod_error=found.get("horovod_error"),
        horovod_built={k: (None if v is None else bool(v)) for k, v in built.items()}, mpi=mpi,
        mpi_error=found.get("mpi_error"), **framework_fields(found))


def framework_fields(found: dict) -> dict:
    """Every registered framework's part of a probe, as Software's `frameworks` (those the probe holds)."""
    parts = {name: framework.software(found) for name, framework in FRAMEWORKS.items()}
    return {"frameworks": {name: part for name, part in parts.items() if part is not None}}


def framework_found(sw: Software) -> dict[str, str | None]:
    """{framework: version found} for the frameworks found (the first registered, with None, when none was)."""
    found = {name: f.found(sw)[0] for name, f in FRAMEWORKS.items()}
    return {k: v for k, v in found.items() if v} or {next(iter(found)): None}
