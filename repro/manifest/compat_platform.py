"""Compatibility rules on what a stack's software runs on and in (pure): the hosts' MLNX_OFED and GPUDirect module,
the base image it builds FROM, NCCL's environment variables, known Open MPI issues and the distribution's Python.

Registered with `@rule` like repro.manifest.compat's; compat lists their findings after its own (RULE_MODULES).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from repro.manifest.findings import ERROR, NOTE, WARNING, Finding, _f, _row, rule, table
from repro.manifest.schema import Stack
from repro.manifest.versions import in_any_line, in_release_line, major_minor, parse_version


def _os_key(s: Stack) -> str:
    return f"{s.os.distro}{s.os.version}"


@rule
def ofed_os(s: Stack) -> Iterator[Finding]:
    if not s.ofed:
        return
    row = _row(table()["ofed_os"], "ofed", s.ofed)
    if row is None:
        yield _f(WARNING, "ofed-os", f"MLNX_OFED {s.ofed} is not in repro's table; its supported distributions "
                 "are unchecked", ("ofed",), "ofed_docs")
        return
    if _os_key(s) not in row["os"]:
        sev = ERROR if row.get("verified", True) else WARNING
        yield _f(sev, "ofed-os", f"MLNX_OFED {s.ofed} is built for {', '.join(row['os'])}, not {_os_key(s)}",
                 ("ofed",), row["source"])
    elif not row.get("verified", True):
        yield _f(NOTE, "ofed-os", f"MLNX_OFED {s.ofed} for {_os_key(s)} rests on third-party evidence only",
                 ("ofed",), row["source"])


@rule
def gpudirect_module(s: Stack) -> Iterator[Finding]:
    if not s.driver:
        return
    g = table()["gpudirect"]
    new = parse_version(s.driver)[:1] >= parse_version(g["driver_switch"])
    module = g["after"] if new else g["before"]
    if new and s.gpudirect:
        yield _f(WARNING, "gpudirect", f"driver {s.driver} (R{g['driver_switch']}+) ships {g['after']}; the separate "
                 f"{g['before']} {s.gpudirect} is deprecated ({g['note']})", ("gpudirect",), g["source"])
    else:
        yield _f(NOTE, "gpudirect", f"GPUDirect RDMA on these hosts uses the {module} kernel module "
                 f"(driver {s.driver})", ("driver",), g["source"])


# nvidia/cuda tags: <cuda>-[cudnn[N]-]{base|runtime|devel}-<os><version> (compat-facts §5)
_CUDA_TAG = re.compile(r"(?P<cuda>[0-9]+(?:\.[0-9]+){1,2})-(?:cudnn(?P<cudnn>[0-9]*)-)?(?:base|runtime|devel)-"
                       r"(?P<os>[a-z]+[0-9.]+)", re.ASCII)
_CUDA_REPOSITORIES = ("nvidia/cuda", "docker.io/nvidia/cuda", "nvcr.io/nvidia/cuda")


def nvidia_cuda_tag(image: str) -> re.Match[str] | None:
    """The parts of an nvidia/cuda image tag (cuda, cudnn, os), or None for any other image."""
    repository, _, tag = image.partition(":")
    if repository not in _CUDA_REPOSITORIES:
        return None
    return _CUDA_TAG.fullmatch(tag.split("@")[0])


@rule
def base_image_tag(s: Stack) -> Iterator[Finding]:
    """Checks the image the stack builds FROM as derived (nvidia/cuda:12.2.0-... for `cuda: "12.2"`)."""
    if not s.cuda or not s.base_image:
        return
    tag = nvidia_cuda_tag(s.base_image)
    if tag is None:
        return
    t = table()
    cuda, os_key = tag["cuda"], tag["os"]
    if not in_release_line(cuda, major_minor(s.cuda)) or os_key != _os_key(s):
        yield _f(WARNING, "base-image", f"{s.base_image} holds CUDA {cuda} on {os_key}, but the stack pins CUDA "
                 f"{s.cuda} on {_os_key(s)}", ("base_image",), "cuda_images")
    row = _row(t["cuda_image_os"], "cuda", cuda)
    if row is not None and os_key not in row["os"]:
        yield _f(ERROR, "base-image", f"nvidia/cuda publishes no CUDA {major_minor(cuda)} image for {os_key} "
                 f"(available: {', '.join(row['os'])})", ("os",), "cuda_images")
        return
    eol = t["cuda_image_eol"]
    if in_any_line(cuda, eol["cuda"]):
        yield _f(WARNING, "base-image", f"{s.base_image} (CUDA {cuda}) is past end of life: {eol['note']}; provide "
                 "it from a local registry or mirror, or build it from NVIDIA's published Dockerfiles",
                 ("base_image",), eol["source"])
    elif in_any_line(cuda, t["cuda_image_unverified"]["cuda"]):
        yield _f(NOTE, "base-image", f"{s.base_image}: {t['cuda_image_unverified']['note']}", ("base_image",),
                 "cuda_images")
    image_tag = s.base_image.partition(":")[2]
    for shipped in t["cuda_image_cudnn"]:
        if image_tag.startswith(shipped["tag"]) and s.cudnn and not in_release_line(shipped["cudnn"], s.cudnn):
            yield _f(NOTE, "base-image", f"{s.base_image} ships cuDNN {shipped['cudnn']}; the image installs the "
                     f"pinned cuDNN {s.cudnn} over it", ("cudnn",), "cuda_images")


@rule
def nccl_env(s: Stack) -> Iterator[Finding]:
    for entry in table()["nccl_env"]:
        name = entry["name"]
        if name not in s.env:
            continue
        if not s.nccl:
            yield _f(NOTE, "nccl-env", f"{name} set on a stack without NCCL has no effect", ("env", name))
            continue
        if "removed" in entry and parse_version(s.nccl) >= parse_version(entry["removed"]):
            why = entry.get("note", f"removed in {entry['removed']}")
            yield _f(WARNING, "nccl-env", f"{name} is ignored by NCCL {s.nccl} ({why}); use {entry['use']}",
                     ("env", name), entry["source"])
        if "since" in entry and parse_version(s.nccl) < parse_version(entry["since"]):
            yield _f(WARNING, "nccl-env", f"{name} does not exist before NCCL {entry['since']}; NCCL {s.nccl} ignores "
                     "it", ("env", name), entry["source"])


@rule
def openmpi_known_issues(s: Stack) -> Iterator[Finding]:
    if s.mpi.implementation != "openmpi":
        return
    for entry in table()["openmpi"]:
        if in_release_line(s.mpi.version, entry["version"]):
            yield _f(entry["severity"], "openmpi", f"Open MPI {s.mpi.version}: {entry['note']}", ("mpi", "version"),
                     entry["source"])


@rule
def distro_python(s: Stack) -> Iterator[Finding]:
    row = next((r for r in table()["distro_packages"] if r["os"] == _os_key(s)), None)
    if row is None:
        yield _f(NOTE, "distro", f"{_os_key(s)} is not in repro's table of distribution packages",
                 ("os",), "distro_packages")
        return
    pythons = row["python"] if isinstance(row["python"], list) else [row["python"]]
    if not in_any_line(s.python, pythons):
        if s.os.distro == "debian":
            yield _f(ERROR, "distro-python", f"Debian {s.os.version} ships Python {', '.join(pythons)}; "
                     f"Python {s.python} would need a source build, which repro's images do not do",
                     ("python",), "distro_packages")
        else:
            yield _f(WARNING, "distro-python", f"{_os_key(s)} ships Python {', '.join(pythons)}; Python {s.python} "
                     "comes from the deadsnakes PPA, a third-party archive", ("python",), "distro_packages")
    if s.python.startswith("2."):
        yield _f(NOTE, "python2", "Python 2 reached end of life on 2020-01-01; new tools (and Horovod >= 0.20) "
                 "no longer support it", ("python",), "horovod_tags")
