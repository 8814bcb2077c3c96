"""Compatibility rules: check a resolved stack against repro's sourced table (compat.yaml). Pure.

Each finding is an error (cannot work), a warning (works only with a source build, is unverified or
deprecated) or a note, with the reason and the public source it rests on.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator

from repro.manifest import frameworks
from repro.manifest.findings import (  # noqa: F401  (re-exported: compat is where callers look)
    ERROR,
    NOTE,
    RULE_FRAMEWORK,
    RULES,
    SEVERITIES,
    WARNING,
    Finding,
    _f,
    _row,
    _rows_within,
    _source,
    rule,
    table,
)
from repro.manifest.frameworks import FRAMEWORKS
from repro.manifest.loader import FieldPath
from repro.manifest.resolve import LoadedStack
from repro.manifest.schema import Stack
from repro.manifest.versions import at_least, in_any_line, in_release_line, major_minor, parse_version


@rule(framework="tensorflow")
def tensorflow_python(s: Stack) -> Iterator[Finding]:
    tf = s.tensorflow.version
    row = _row(table()["tensorflow_builds"], "tf", tf)
    if row is None:
        yield _f(WARNING, "tf-known", f"TensorFlow {tf} is not in repro's table of tested builds; "
                 "its Python/CUDA/cuDNN requirements are unchecked", ("tensorflow", "version"), "tf_table")
        return
    if not in_any_line(s.python, row["python"]):
        sev = WARNING if s.tensorflow.build == "source" else ERROR
        yield _f(sev, "tf-python", f"TensorFlow {tf} supports Python {', '.join(row['python'])}; "
                 f"there is no official wheel for Python {s.python}", ("python",), row["source"])


@rule(framework="tensorflow")
def tensorflow_cuda(s: Stack) -> Iterator[Finding]:
    if not s.gpu or not s.cuda:
        return
    tf = s.tensorflow.version
    row = _row(table()["tensorflow_builds"], "tf", tf)
    if row is None:
        return
    built = row["cuda"]
    source_build = s.tensorflow.build == "source"
    if int(built.split(".")[0]) < 11:
        ok = major_minor(s.cuda) == built
        why = (f"TensorFlow {tf}'s official binaries target CUDA {built} and load its libraries by exact "
               f"version (libcudart.so.{built})")
    else:
        ok = parse_version(s.cuda)[:1] == parse_version(built)[:1]
        why = f"TensorFlow {tf}'s official binaries are built against CUDA {built}"
    if not ok:
        if source_build:
            yield _f(WARNING, "tf-cuda", f"{why}, so this CUDA {s.cuda} stack implies a TensorFlow source build "
                     "(tensorflow.build: source): the wheel must come from your wheelhouse, and this "
                     "combination was never tested by TensorFlow", ("cuda",), row["source"])
        else:
            yield _f(ERROR, "tf-cuda", f"{why}; the official wheel will not load CUDA {s.cuda}. Pin CUDA {built}, "
                     "or build TensorFlow yourself and set tensorflow.build: source", ("cuda",), row["source"])
    elif parse_version(s.cuda)[:2] < parse_version(built)[:2]:
        yield _f(WARNING, "tf-cuda", f"CUDA {s.cuda} is older than the {built} TensorFlow {tf} was built with; "
                 "libraries may lack symbols it needs", ("cuda",), "cuda_minor_compat")
    elif parse_version(s.cuda)[:2] > parse_version(built)[:2]:
        yield _f(NOTE, "tf-cuda", f"CUDA {s.cuda} is newer than the {built} TensorFlow {tf} was tested with; "
                 "it runs through CUDA minor version compatibility", ("cuda",), "cuda_minor_compat")
    if s.cudnn:
        want = row["cudnn"]
        have = parse_version(s.cudnn)
        need = parse_version(want)
        if have[:1] != need[:1] or have[1:2] < need[1:2]:
            sev = WARNING if source_build else ERROR
            yield _f(sev, "tf-cudnn", f"TensorFlow {tf} was built with cuDNN {want}: it requires the same major "
                     f"version and a minor at least as new at run time, found {s.cudnn}", ("cudnn",), "tf_cudnn_check")


@rule
def cuda_driver(s: Stack) -> Iterator[Finding]:
    if not s.cuda or not s.driver:
        return
    rows = table()["cuda_drivers"]
    cuda = parse_version(s.cuda)
    candidates = [r for r in rows if parse_version(r["cuda"])[: len(cuda)] == cuda]
    if not candidates:  # e.g. 11.4.5: the nearest lower release of the same line
        candidates = [r for r in rows if parse_version(r["cuda"])[:2] == cuda[:2] and parse_version(r["cuda"]) <= cuda]
    if not candidates:
        yield _f(WARNING, "cuda-driver", f"CUDA {s.cuda} is not in repro's driver table; the minimum driver "
                 "is unchecked", ("cuda",), "cuda_drivers")
        return
    need = min(candidates, key=lambda r: parse_version(r["driver"])) if len(cuda) < 3 else candidates[-1]
    if parse_version(s.driver) >= parse_version(need["driver"]):
        return
    family = next((r for r in table()["cuda_minor_compat"] if r["major"] == cuda[0]), None)
    if family and parse_version(s.driver) >= parse_version(family["driver"]):
        yield _f(WARNING, "cuda-driver", f"CUDA {s.cuda} wants driver >= {need['driver']}; driver {s.driver} runs it "
                 f"only through minor version compatibility (CUDA {cuda[0]}.x on >= {family['driver']}), with a "
                 "limited feature set; code that JIT-compiles PTX may fail", ("driver",), "cuda_minor_compat")
        return
    extra = ""
    if family:
        extra = f" (minor version compatibility needs >= {family['driver']} for CUDA {cuda[0]}.x)"
    yield _f(ERROR, "cuda-driver", f"CUDA {s.cuda} needs NVIDIA driver >= {need['driver']}, "
             f"but the hosts' driver is {s.driver}{extra}", ("driver",), "cuda_drivers")


@rule
def cudnn_cuda(s: Stack) -> Iterator[Finding]:
    if not s.cuda or not s.cudnn:
        return
    rows = _rows_within(table()["cudnn_cuda"], "cudnn", s.cudnn)
    if not rows:
        yield _f(WARNING, "cudnn-cuda", f"cuDNN {s.cudnn} is not in repro's table; its CUDA support is unchecked",
                 ("cudnn",), "cudnn_archive")
        return
    if any(in_any_line(s.cuda, row["cuda"]) for row in rows):
        return  # a release of this line was published for this CUDA; apt picks it
    cudas = list(dict.fromkeys(c for row in rows for c in row["cuda"]))
    sev = ERROR if any(row.get("verified", True) for row in rows) else WARNING
    notes = "; ".join(row["note"] for row in rows if row.get("note"))
    yield _f(sev, "cudnn-cuda", f"cuDNN {s.cudnn} was published for CUDA {', '.join(cudas)}, not for CUDA {s.cuda}"
             + (f" ({notes})" if notes else ""), ("cudnn",), rows[0]["source"])


@rule
def nccl_cuda(s: Stack) -> Iterator[Finding]:
    if not s.cuda or not s.nccl:
        return
    for bad in table()["nccl_unverified"]:
        if in_release_line(s.nccl, bad["nccl"]):
            yield _f(WARNING, "nccl-release", f"NCCL {s.nccl}: {bad['note']}; the image build will fail unless "
                     "you provide that package", ("nccl",), "cuda_images")
            return
    row = _row(table()["nccl_cuda"], "nccl", s.nccl)
    if row is None:
        yield _f(NOTE, "nccl-cuda", f"NCCL {s.nccl} is not in repro's table of published builds; check that NVIDIA "
                 f"publishes libnccl2 {s.nccl}+cuda{major_minor(s.cuda)}", ("nccl",), "cuda_images")
        return
    if not in_any_line(s.cuda, row["cuda"]):
        sev = ERROR if row.get("verified", True) else WARNING
        yield _f(sev, "nccl-cuda", f"NCCL {s.nccl} was published for CUDA {', '.join(row['cuda'])}, not CUDA {s.cuda}",
                 ("nccl",), row["source"])


def _horovod_row(s: Stack) -> dict | None:
    if s.horovod is None or s.horovod.commit:  # a source commit is no release: the release rows do not hold it
        return None
    return _row(table()["horovod"], "horovod", s.horovod.version)


def _horovod_tf_fixes(s: Stack) -> Iterator[Finding]:
    """Findings from Horovod's CHANGELOG: a later release fixed working with this TensorFlow."""
    hv, tf = s.horovod.version, s.tensorflow.version
    broken = [f for f in table()["horovod_tf_fixes"] if at_least(tf, f["tf"]) and not at_least(hv, f["fixed_in"])]
    for severity in (ERROR, WARNING):
        rows = sorted((f for f in broken if f["severity"] == severity), key=lambda f: parse_version(f["fixed_in"]))
        if not rows:
            continue
        newest = rows[-1]
        others = "".join(f"; {f['fixed_in']}: \"{f['what']}\" (#{f['pr']})" for f in reversed(rows[:-1]))
        verdict = "does not work with" if severity == ERROR else "has a documented problem with"
        yield _f(severity, "horovod-tf", f"Horovod {hv} {verdict} TensorFlow {tf}: Horovod {newest['fixed_in']} "
                 f"fixed it (\"{newest['what']}\", horovod/horovod#{newest['pr']}){others}. "
                 f"Use Horovod >= {newest['fixed_in']}", ("horovod", "version"), newest["source"])
        if severity == ERROR:
            return


@rule(framework="tensorflow")
def horovod_tensorflow(s: Stack) -> Iterator[Finding]:
    if s.horovod is None:
        return
    row = _horovod_row(s)
    hv, tf = s.horovod.version, s.tensorflow.version
    if row is None:
        if s.horovod.commit:
            yield _f(WARNING, "horovod-commit", f"Horovod from commit {s.horovod.commit[:12]} is no release; its "
                     "TensorFlow support is unchecked", ("horovod", "commit"), "horovod_tags")
            return
        yield _f(WARNING, "horovod-known", f"Horovod {hv} is not in repro's table; its TensorFlow and Python "
                 "support is unchecked", ("horovod", "version"), "horovod_tags")
        return
    note = f" ({row['note']})" if row.get("note") else ""
    if not at_least(tf, row["tf_min"]):
        yield _f(ERROR, "horovod-tf", f"Horovod {hv} requires TensorFlow >= {row['tf_min']}, found {tf}{note}",
                 ("horovod", "version"), row["source"])
        return
    fixes = list(_horovod_tf_fixes(s))
    yield from fixes
    if any(f.severity == ERROR for f in fixes):
        return
    breaks = row.get("tf_breaks")
    if breaks and at_least(tf, breaks):
        k3 = table()["horovod_keras3"]
        if any(p.replace(" ", "").startswith("tf-keras") or p.startswith("tf_keras") for p in s.packages.pip):
            yield _f(WARNING, "horovod-keras3", f"TensorFlow {tf} with Horovod {hv} works only through the pinned "
                     "tf-keras (Keras 2); untested by Horovod", ("tensorflow", "version"), k3["issue"])
        else:
            yield _f(ERROR, "horovod-keras3", f"{k3['note']} Found TensorFlow {tf} with Horovod {hv}.",
                     ("tensorflow", "version"), k3["issue"])
        return
    if parse_version(tf)[:2] > parse_version(row["tf_tested_max"]):
        yield _f(WARNING, "horovod-tf", f"Horovod {hv}'s CI covered TensorFlow up to {row['tf_tested_max']}; "
                 f"TensorFlow {tf} is untested with it{note}", ("tensorflow", "version"), row["source"])


@rule(framework="tensorflow")
def tensorflow_package(s: Stack) -> Iterator[Finding]:
    """The pip package (as written or derived) exists for this TensorFlow and, on a GPU stack, uses the GPU."""
    package, tf = (s.tensorflow.package or "").split("[")[0].lower().replace("_", "-"), s.tensorflow.version
    for row in table()["tensorflow_packages"]:
        if row["package"] != package:
            continue
        if "removed" in row and at_least(tf, row["removed"]):
            yield _f(ERROR, "tf-package", f"there is no {package} {tf}: {row['note']}; use tensorflow",
                     ("tensorflow", "package"), row["source"])
        elif s.gpu and row.get("gpu_from") == "never":
            yield _f(ERROR, "tf-package", f"{package} on a GPU stack: {row['note']}, so the benchmark would not use "
                     "the GPUs; use tensorflow (or tensorflow-gpu for TF 1.x)", ("tensorflow", "package"),
                     row["source"])
        elif s.gpu and row.get("gpu_from") not in (None, "never") and not at_least(tf, row["gpu_from"]):
            yield _f(ERROR, "tf-package", f"{package} {tf} on a GPU stack: {row['note']}",
                     ("tensorflow", "package"), row["source"])


@rule
def horovod_python(s: Stack) -> Iterator[Finding]:
    row = _horovod_row(s)
    if row is None or in_any_line(s.python, row["python"]):
        return
    hv = s.horovod.version
    supported = ", ".join(row["python"])
    py = parse_version(s.python)[:2]
    same_major = [parse_version(p.split("-")[0])[:2] for p in row["python"] if parse_version(p)[:1] == py[:1]]
    if not same_major:
        yield _f(ERROR, "horovod-python", f"Horovod {hv} does not support Python {s.python} (supported: {supported})"
                 + (f"; {row['note']}" if row.get("note") else ""), ("python",), row["source"])
    elif py < min(same_major):
        yield _f(ERROR, "horovod-python", f"Horovod {hv} needs Python >= {'.'.join(map(str, min(same_major)))}, "
                 f"found {s.python}", ("python",), row["source"])
    else:
        sev = NOTE if row.get("python_untested_ok") else WARNING
        yield _f(sev, "horovod-python", f"Horovod {hv}'s CI covered Python {supported}; Python {s.python} is "
                 "untested by Horovod", ("python",), row["source"])


@rule
def horovod_build(s: Stack) -> Iterator[Finding]:
    h = s.horovod
    if h is None:
        return
    row = _horovod_row(s)
    if not h.with_mpi and not h.with_gloo:
        yield _f(ERROR, "horovod-controller", "Horovod needs a controller: set with_mpi or with_gloo",
                 ("horovod",), "horovod_install")
    if h.with_gloo and row is not None and not row.get("gloo", True):
        yield _f(ERROR, "horovod-gloo", f"Horovod {h.version} has no Gloo support (HOROVOD_WITH_GLOO first "
                 "appeared in 0.17.0)", ("horovod", "with_gloo"), "horovod_tags")
    if s.gpu and h.gpu_operations is None:
        yield _f(WARNING, "horovod-gpu-ops", "GPU stack without horovod.gpu_operations: Horovod will reduce GPU "
                 "tensors through host memory; set gpu_operations: NCCL", ("horovod",), "horovod_install")
    if h.gpu_operations == "MPI":
        yield _f(NOTE, "horovod-gpu-ops", "HOROVOD_GPU_OPERATIONS=MPI is meant for a CUDA-aware MPI "
                 "(Open MPI --with-cuda, ideally over UCX)", ("horovod", "gpu_operations"), "horovod_install")
    if h.gpu_operations and parse_version(h.version) < (0, 20):
        yield _f(NOTE, "horovod-gpu-ops", f"Horovod {h.version} predates HOROVOD_GPU_OPERATIONS (0.20); the image "
                 f"sets HOROVOD_GPU_ALLREDUCE={h.gpu_operations} instead", ("horovod", "gpu_operations"),
                 "horovod_tags")


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


def derived_from(path: FieldPath) -> FieldPath | None:
    """A derived field is not in the file: the field it was derived from (a framework's derived fields: its
    section), or None for a field that is not derived."""
    if path == ("base_image",):
        return ("cuda",)
    if len(path) == 2 and path[0] in FRAMEWORKS and path[1] in FRAMEWORKS.get(path[0]).derived:
        return path[:1]
    return None


def check(loaded: LoadedStack) -> list[Finding]:
    """Every compatibility finding for a stack, located in its manifest files, errors first."""
    framework = frameworks.of(loaded.stack)
    if framework.compat_module:  # the framework's own rules register themselves when imported
        importlib.import_module(framework.compat_module)
    mine = [fn for fn in RULES if RULE_FRAMEWORK.get(fn, framework.name) == framework.name]
    # a plug-in's own module's rules first (as when compat imported PyTorch's): the order findings are listed in
    mine.sort(key=lambda fn: fn.__module__ == __name__)
    out: list[Finding] = []
    for fn in mine:
        for finding in fn(loaded.stack):
            path = finding.path
            if path not in loaded.keys and derived_from(path) is not None:
                path = derived_from(path)
            out.append(Finding(finding.severity, finding.rule, finding.message, finding.path, finding.source,
                               loaded.where(path)))
    order = {sev: i for i, sev in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order[f.severity])

