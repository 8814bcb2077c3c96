"""A stack manifest from the software a host or an image has now (pure): what `repro capture` writes.

The probe (repro.launch.runtimes.host.HOST_PROBE on a host, repro.image.verify.PROBE in an image) gives a
`Software`; `manifest_from(sw, ...)` turns it into manifest data that `repro validate` accepts, and says where
each value came from (comments in the written file). A value the software cannot tell (the MPI of a host
without mpirun, the driver of an image) is filled with what repro's table derives, and the comment says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from repro.errors import InputError
from repro.inputs import shown
from repro.manifest.findings import table
from repro.manifest.frameworks import FRAMEWORKS
from repro.manifest.software import Software, framework_found
from repro.manifest.versions import parse_version

DISTROS = ("ubuntu", "debian", "centos", "rockylinux")
_SAFE_NAME = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
# what a probed version may be before it goes into a manifest (3.13.0rc1, 2.11.0+cu130, 580.95.05, 24.04)
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_~-]{0,79}")


@dataclass(frozen=True)
class Captured:
    """Manifest data captured from software, with one line per value saying where it came from."""

    data: dict[str, Any]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_yaml(self, header: str) -> str:
        """The manifest file: a header, where the values came from, then the data."""
        lines = [f"# {comment(header)}", *(f"#   {comment(n)}" for n in self.notes)]
        body = yaml.safe_dump(self.data, sort_keys=False, default_flow_style=None, width=110)
        return "\n".join(lines) + "\n" + body


def comment(text: str) -> str:
    """Text as one line of a YAML comment: a line break (or any character that is not printable) written as its
    escape, so that nothing a probe or a flag says can end the comment and start YAML."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def checked_version(what: str, value: str) -> str:
    """`value` when it is a version that can go into a manifest as it is; InputError naming `what` otherwise."""
    if not _VERSION.fullmatch(value):
        raise InputError(f"{what}: {shown(value)} is not a version (letters, digits and . + _ ~ - only)")
    return value


def _os(sw: Software, override: str | None) -> dict[str, str]:
    text = override.replace(":", " ") if override else (sw.os or "")
    distro, _, version = text.strip().partition(" ")
    if distro not in DISTROS or not version:
        raise InputError(f"repro stacks describe {', '.join(DISTROS)} images; this one is "
                         f"{text.strip() or 'unknown (no /etc/os-release)'}",
                         hint="say which image the stack should build with --os DISTRO:VERSION, e.g. --os ubuntu:24.04")
    return {"distro": distro, "version": checked_version("--os" if override else "os (/etc/os-release)", version)}


def _mpi(sw: Software, os_key: str, notes: list[str]) -> dict[str, str]:
    impl, _, version = (sw.mpi or "").partition(" ")
    if impl in ("openmpi", "mvapich2") and version and all(part.isdigit() for part in version.split(".")):
        notes.append(f"mpi: {sw.mpi} (mpirun --version)")
        return {"implementation": impl, "version": version}
    distro = next((r for r in table()["distro_packages"] if r["os"] == os_key), {})
    version = distro.get("openmpi", "4.1.6")
    notes.append(f"mpi: {sw.mpi or 'no mpirun'} found; Open MPI {version} is {os_key}'s own (repro's table)")
    return {"implementation": "openmpi", "version": version}


def _framework(sw: Software, choice: str | None) -> str:
    present = [name for name, version in framework_found(sw).items() if version]
    if choice:
        if choice not in present:
            raise InputError(f"--framework {choice}: not importable here (found: {', '.join(present) or 'none'})")
        return choice
    if len(present) != 1:
        errors = [f"{name}: {part.error}" for name, part in sw.frameworks.items() if part.error]
        found = " and ".join(present) or "no framework (" + " or ".join(FRAMEWORKS.names()) + ")"
        raise InputError(f"a stack pins one framework; found {found}"
                         + (f" ({'; '.join(errors)})" if errors and not present else ""),
                         hint=f"choose one with --framework {'|'.join(FRAMEWORKS.names())}" if present else
                         "capture with the Python that has your framework (--python PATH)")
    return present[0]


def driver(sw: Software, cuda: str, notes: list[str]) -> str:
    """The driver a captured GPU stack pins: the one nvidia-smi found, else the minimum for its CUDA."""
    if sw.driver:
        notes.append(f"driver: {sw.driver} (nvidia-smi)")
        return checked_version("driver (nvidia-smi)", sw.driver)
    family = next((r for r in table()["cuda_minor_compat"] if r["major"] == parse_version(cuda)[0]), None)
    if family is None:
        raise InputError(f"no driver found (nvidia-smi) and repro knows no minimum driver for CUDA {cuda}",
                         hint="add driver: to the written stack")
    notes.append(f"driver: none found here; {family['driver']} is the minimum for CUDA {cuda.split('.')[0]}.x "
                 "(minor version compatibility)")
    return str(family["driver"])


def manifest_from(sw: Software, *, framework: str | None = None, os: str | None = None,
                  description: str = "") -> Captured:
    """Manifest data for the software `sw` holds; InputError when it cannot make a valid stack of it."""
    notes: list[str] = []
    data: dict[str, Any] = {}
    if description:
        data["description"] = description
    data["os"] = _os(sw, os)
    notes.append(f"os: {data['os']['distro']} {data['os']['version']}" + (" (--os)" if os else " (/etc/os-release)"))
    chosen = _framework(sw, framework)
    data["mpi"] = _mpi(sw, f"{data['os']['distro']}{data['os']['version']}", notes)
    if not sw.python:
        raise InputError("the probe found no Python version")
    data["python"] = ".".join(checked_version("python", sw.python).split(".")[:2])
    notes.append(f"python: {sw.python}" + (f" ({sw.executable})" if sw.executable else ""))
    FRAMEWORKS.get(chosen).capture(sw, data, notes)
    built = sw.horovod_built
    if sw.horovod and built.get(chosen) is False:
        notes.append(f"horovod: {sw.horovod} is installed but not built for {chosen}: left out")
    elif sw.horovod:
        horovod: dict[str, Any] = {"version": checked_version("horovod.__version__", sw.horovod)}
        horovod.update({f"with_{k}": bool(built[k]) for k in ("mpi", "gloo") if built.get(k) is not None})
        if data.get("cuda") and built.get("nccl"):
            horovod["gpu_operations"] = "NCCL"
        data["horovod"] = horovod
        notes.append(f"horovod: {sw.horovod}, built with " + (", ".join(k for k, v in built.items() if v) or "?"))
    order = ("description", "os", "driver", "cuda", "mpi", "python", *FRAMEWORKS.names(), "horovod", "benchmark")
    return Captured({k: data[k] for k in order if k in data}, tuple(notes))


def file_name(text: str) -> str:
    """A stack name from free text (a host name, an image tag): letters, digits, '.', '_', '-'."""
    name = "".join(c if c in _SAFE_NAME else "-" for c in text).strip("-._")[:80]
    return name or "captured"
