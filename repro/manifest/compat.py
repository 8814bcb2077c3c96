"""Compatibility rules: check a resolved stack against repro's sourced table (compat.yaml). Pure.

Each finding is an error (cannot work), a warning (works only with a source build, is unverified or
deprecated) or a note, with the reason and the public source it rests on. The rules here check the software's
versions against each other (TensorFlow, CUDA and the driver, cuDNN, NCCL, Horovod); those on what it runs on
and in (OFED, GPUDirect, the base image, NCCL's environment, Open MPI, the distribution) are
repro.manifest.compat_platform's.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator

from repro.manifest import compat_platform, frameworks
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

# The modules of the built-in rules, in the order their findings are listed (within a severity)
RULE_MODULES = (__name__, compat_platform.__name__)


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
    # a plug-in's own module's rules first (as when compat imported PyTorch's), then the built-in modules' in
    # RULE_MODULES order: the order findings are listed in (a stable sort keeps each module's own order)
    rank = {name: i for i, name in enumerate(RULE_MODULES)}
    mine.sort(key=lambda fn: rank.get(fn.__module__, -1))
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

