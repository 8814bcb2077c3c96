"""The software found in an image or on a host, and the one check of it against a stack (pure).

`repro up` probes the image it built, the `host` runtime probes each host's own installation; both turn
what they found into a `Software` value and ask `mismatches(stack, software, where=...)` what differs.
Every difference reads "component: pinned X, found Y".
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Where = Literal["image", "host"]


class Software(BaseModel):
    """Versions found (None: not found or not importable; the *_error fields say why)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    os: str | None = None  # "debian 12"
    python: str | None = None
    executable: str | None = None
    tensorflow: str | None = None
    tensorflow_error: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)  # installed Python distributions (normalised names)
    horovod: str | None = None
    horovod_error: str | None = None
    horovod_built: dict[str, bool | None] = Field(default_factory=dict)  # tensorflow, mpi, gloo, nccl
    mpi: str | None = None  # "openmpi 4.1.4"
    mpi_error: str | None = None
    cuda: str | None = None
    cudnn: str | None = None
    nccl: str | None = None
    ofed: str | None = None
    sshd_port: int | None = None
    ssh_host_keys: list[str] = Field(default_factory=list)


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


def _built(flag: bool | None, what: str) -> str:
    return "unknown" if flag is None else f"{what} built in" if flag else f"{what} not built in"


def _versions(stack, sw: Software, where: Where) -> list[str]:
    out: list[str] = []

    def version(component: str, pinned: str | None, found: str | None, error: str | None = None) -> None:
        if pinned and not same(pinned, found):
            out.append(f"{component}: pinned {pinned}, found {found or (error and f'none ({error})') or 'none'}")

    # a host's python only has to match the release line (3.11 for 3.11.2); an image's likewise
    version("python", ".".join(stack.python.split(".")[:2]) if where == "host" else stack.python, sw.python)
    version("tensorflow", stack.tensorflow.version, sw.tensorflow, sw.tensorflow_error)
    if sw.tensorflow and sw.tensorflow_error and not stack.gpu:
        out.append(f"tensorflow: pinned {stack.tensorflow.version}, found it does not import "
                   f"({sw.tensorflow_error[:200]})")
    pinned_package = stack.tensorflow.package if stack.tensorflow.build == "binary" else None
    if where == "image" and pinned_package and normal_name(pinned_package) not in sw.packages:
        others = [f"{k}=={x}" for k, x in sw.packages.items()
                  if k in ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel")]
        out.append(f"tensorflow package: pinned {pinned_package}, found {', '.join(others) or 'none'}")
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
    if sw.horovod is None:
        return []
    out: list[str] = []
    flags = sw.horovod_built
    if where == "image" and flags.get("tensorflow") is not True:
        out.append(f"horovod tensorflow: pinned built in, found {_built(flags.get('tensorflow'), 'TensorFlow')}")
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
    if where == "image":
        if sw.sshd_port != stack.container.ssh_port:
            out.append(f"sshd port: pinned {stack.container.ssh_port}, found {sw.sshd_port or 'none'}")
        if not sw.ssh_host_keys:
            out.append("sshd host keys: pinned present, found none")
    return out


def from_host_probe(found: dict) -> Software:
    """The `host` runtime's probe output (JSON: python, executable, tensorflow[_error], horovod[_error],
    horovod_built, mpi = `mpirun --version`'s first line or mpi_error) as Software."""
    text = str(found.get("mpi") or "")
    m = re.search(r"\(Open MPI\)\s+(\S+)", text)
    mpi = f"openmpi {m.group(1)}" if m else (text.strip() or None)
    built = found.get("horovod_built") if isinstance(found.get("horovod_built"), dict) else {}
    return Software(
        python=found.get("python"), executable=found.get("executable"), tensorflow=found.get("tensorflow"),
        tensorflow_error=found.get("tensorflow_error"), horovod=found.get("horovod"),
        horovod_error=found.get("horovod_error"),
        horovod_built={k: (None if v is None else bool(v)) for k, v in built.items()}, mpi=mpi,
        mpi_error=found.get("mpi_error"))
