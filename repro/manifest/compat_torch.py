"""Compatibility rules of PyTorch stacks: PyTorch <-> Python <-> CUDA variant <-> cuDNN <-> NCCL <-> driver, and
Horovod on PyTorch (pure). Registered into repro.manifest.compat's rule list for PyTorch stacks (the pytorch
plug-in's compat_module); the facts live in compat.yaml (torch_builds, torch_nccl_unverified, torch_index,
torch_debian, horovod_torch), each row with its source.

A PyTorch CUDA wheel brings its own CUDA runtime, cuDNN and NCCL (the nvidia-*-cu* pip packages it depends
on): what the wheel bundles is what PyTorch uses, and the host only needs a driver new enough for the
variant's CUDA. `bundled(stack)` says what a stack's wheel brings, for `repro show` and the checks below.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from repro.manifest.findings import ERROR, NOTE, WARNING, Finding, _f, _row, _source, rule, table
from repro.manifest.schema import Stack
from repro.manifest.versions import at_least, in_any_line, in_release_line, major_minor, parse_version


def variant_cuda(variant: str | None) -> str | None:
    """The CUDA release of a wheel variant: cu124 -> '12.4', cu130 -> '13.0', cpu -> None."""
    if not variant or not variant.startswith("cu") or not variant[2:].isdigit():
        return None
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def _torch_row(s: Stack) -> dict | None:
    return _row(table()["torch_builds"], "torch", s.pytorch.version)


def bundled(stack: Stack) -> dict[str, Any]:
    """What the stack's PyTorch wheel brings, from the compatibility table: {cuda, cudnn, nccl, nccl_verified,
    source}; {} for a TensorFlow stack. CPU wheels bring no CUDA libraries."""
    p = stack.pytorch
    if p is None:
        return {}
    out: dict[str, Any] = {"variant": p.variant, "cuda": variant_cuda(p.variant)}
    row = _torch_row(stack)
    if p.source == "debian" or out["cuda"] is None or row is None:
        return out
    out["cudnn"] = (row.get("cudnn") or {}).get(p.variant)
    nccl = (row.get("nccl") or {}).get(p.variant)
    verified = nccl is not None
    if nccl is None:
        nccl = next((r["nccl"] for r in table()["torch_nccl_unverified"] if in_release_line(p.version, r["torch"])),
                    None)
    out.update({"nccl": nccl, "nccl_verified": verified if nccl else None, "source": _source(row["source"])})
    return out


@rule(framework="pytorch")
def torch_known(s: Stack) -> Iterator[Finding]:
    if s.pytorch.source == "debian":
        return
    row = _torch_row(s)
    if row is None:
        yield _f(WARNING, "torch-known", f"PyTorch {s.pytorch.version} is not in repro's table of releases; its "
                 "Python, CUDA and library requirements are unchecked", ("pytorch", "version"), "torch_release")
        return
    if not in_any_line(s.python, row["python"]):
        yield _f(ERROR, "torch-python", f"PyTorch {s.pytorch.version} supports Python {', '.join(row['python'])}; "
                 f"there is no wheel for Python {s.python}", ("python",), row["source"])


@rule(framework="pytorch")
def torch_debian(s: Stack) -> Iterator[Finding]:
    p = s.pytorch
    if p.source != "debian":
        return
    key = f"{s.os.distro}{s.os.version}"
    row = next((r for r in table()["torch_debian"] if r["os"] == key), None)
    if row is None:
        yield _f(ERROR, "torch-debian", f"{key} has no python3-torch in repro's table; use pytorch.source: pip",
                 ("pytorch", "source"), "distro_packages")
    elif not in_release_line(row["torch"], p.version) and not in_release_line(p.version, row["torch"]):
        yield _f(ERROR, "torch-debian", f"{key}'s archive holds python3-torch {row['torch']}, not {p.version}",
                 ("pytorch", "version"), row["source"])
    if s.gpu:
        yield _f(ERROR, "torch-debian", "Debian's python3-torch is a CPU build: a GPU stack needs pytorch.source: pip "
                 "with a CUDA variant", ("pytorch", "source"), "distro_packages")


@rule(framework="pytorch")
def torch_variant(s: Stack) -> Iterator[Finding]:
    p = s.pytorch
    if p.source != "pip":
        return
    cuda = variant_cuda(p.variant)
    if s.gpu and cuda is None:
        yield _f(ERROR, "torch-variant", f"a GPU stack with the {p.variant} PyTorch wheel: the benchmark would not "
                 f"use the GPUs; set pytorch.variant to cu{(s.cuda or '').replace('.', '')[:3]} or leave it derived",
                 ("pytorch", "variant"), "torch_previous")
        return
    if not s.gpu and cuda is not None:
        yield _f(WARNING, "torch-variant", f"a CPU stack with the {p.variant} wheel: it runs on CPUs but brings "
                 "gigabytes of CUDA libraries; the cpu variant is the CPU build", ("pytorch", "variant"),
                 "torch_previous")
    row = _torch_row(s)
    if cuda is None or row is None:
        return
    if p.variant not in (*row["stable"], *row["experimental"]):
        built = ", ".join([*row["stable"], *row["experimental"]])
        yield _f(ERROR, "torch-cuda", f"PyTorch {p.version} has no {p.variant} wheels (built for {built})",
                 ("pytorch", "variant"), row["source"])
        return
    if p.variant in row["experimental"]:
        yield _f(NOTE, "torch-cuda", f"{p.variant} is an experimental CUDA build of PyTorch {p.version}",
                 ("pytorch", "variant"), row["source"])
    if s.cuda and major_minor(s.cuda) != cuda:
        yield _f(WARNING, "torch-cuda", f"the {p.variant} wheel brings its own CUDA {cuda} runtime; the image's "
                 f"CUDA {s.cuda} toolkit is not what PyTorch uses", ("cuda",), "torch_cuda_runtime")
    if not p.index_url:
        index = table()["torch_index"]
        yield _f(WARNING, "torch-index", f"no pytorch.index_url: PyPI's torch {p.version} is one CUDA build, which "
                 f"may not be {p.variant}; the {p.variant} wheels are at {index['url'].format(variant=p.variant)}",
                 ("pytorch",), index["source"])


@rule(framework="pytorch")
def torch_driver(s: Stack) -> Iterator[Finding]:
    """The driver must run the CUDA the wheel brings (its variant), not only the image's toolkit."""
    cuda = variant_cuda(s.pytorch.variant)
    if cuda is None or not s.driver:
        return
    family = next((r for r in table()["cuda_minor_compat"] if r["major"] == parse_version(cuda)[0]), None)
    exact = [r["driver"] for r in table()["cuda_drivers"] if in_release_line(r["cuda"], cuda)]
    need = min(exact, key=parse_version) if exact else None
    if family and not at_least(s.driver, family["driver"]):
        yield _f(ERROR, "torch-driver", f"the {s.pytorch.variant} PyTorch wheel needs a driver >= {family['driver']} "
                 f"(CUDA {cuda.split('.')[0]}.x minor version compatibility); the hosts' driver is {s.driver}",
                 ("driver",), "cuda_minor_compat")
    elif need and not at_least(s.driver, need):
        yield _f(NOTE, "torch-driver", f"CUDA {cuda} wants driver >= {need}; driver {s.driver} runs the "
                 f"{s.pytorch.variant} wheel through minor version compatibility", ("driver",), "cuda_minor_compat")


@rule(framework="pytorch")
def torch_libraries(s: Stack) -> Iterator[Finding]:
    """A pinned cuDNN or NCCL on a PyTorch stack is a system library; PyTorch uses the ones its wheel brings."""
    have = bundled(s)
    for name in ("cudnn", "nccl"):
        pinned, wheel = getattr(s, name), have.get(name)
        if not pinned or not wheel or in_release_line(wheel, pinned):
            continue
        verified = name == "cudnn" or have.get("nccl_verified")
        yield _f(WARNING, f"torch-{name}", f"PyTorch {s.pytorch.version} ({s.pytorch.variant}) uses the "
                 f"{name} {wheel} its wheel brings{'' if verified else ' (unverified)'}; the pinned {pinned} is "
                 "only the image's system library", (name,), have.get("source", "torch_release"))


@rule(framework="pytorch")
def horovod_torch(s: Stack) -> Iterator[Finding]:
    h, p = s.horovod, s.pytorch
    if h is None:
        return
    if h.commit:
        yield _f(WARNING, "horovod-commit", f"Horovod from commit {h.commit[:12]} is unreleased; repro verified "
                 "Horovod's main branch (with horovod#3998) only against PyTorch 2.13 on CPU", ("horovod", "commit"),
                 "horovod_3998")
        return
    for row in table()["horovod_torch"]:
        if (in_release_line(h.version, row["horovod"]) or not at_least(h.version, row["horovod"])) and \
                at_least(p.version, row["torch_breaks"]):
            yield _f(ERROR, "horovod-torch", f"{row['note']}; found PyTorch {p.version}. The fix ({row['fix']}) is "
                     "unreleased: pin horovod.commit to a commit that has it", ("horovod", "version"), row["source"])
