"""Verify a built image against its stack: run a probe inside it, compare what it found with the pins.

The probe is a Python 2/3 script run in a throw-away container (no network, removed afterwards). It
prints one `REPRO_PROBE <json>` line: /etc/os-release, Python, TensorFlow, PyTorch (its version, CUDA, cuDNN,
NCCL and torch.distributed backends), Horovod and its build flags
(`horovodrun --check-build`), MPI, NCCL/cuDNN/CUDA/OFED versions, `pip freeze`, the sshd host keys.
Parsing and comparing are pure: `parse_probe` reads the line once into an `ImageProbe` (from the JSON, by
`found_versions`, `horovod_flags`, `software`), and `mismatches` compares that with the stack.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repro.errors import ImageError, VerificationError
from repro.image.render import CHECK_BUILD_FILE
from repro.manifest.frameworks import FRAMEWORKS
from repro.manifest.software import Software, normal_name
from repro.manifest.software import mismatches as software_mismatches

if TYPE_CHECKING:
    import docker

    from repro.manifest.schema import Stack

PROBE = r'''
from __future__ import print_function
import glob, json, os, platform, re, subprocess, sys
CHECK_BUILD_FILE = "@CHECK_BUILD_FILE@"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except (IOError, OSError):
        return None


def header(paths, names):
    for path in paths:
        text = read(path) or ""
        nums = [re.search(r"#define\s+" + n + r"\s+(\d+)", text) for n in names]
        if all(nums):
            return ".".join(m.group(1) for m in nums)
    return None


def dpkg(pattern):
    r = run(["dpkg-query", "-W", "-f", "${Package}=${Version}\n", pattern])
    out = {}
    for line in (r["out"] if r and r["rc"] == 0 else "").splitlines():
        name, _, version = line.partition("=")
        if version:
            out[name] = version
    return out


def start(argv):
    try:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError:
        return None


def finish(proc):
    if proc is None:
        return None
    out = proc.communicate()[0].decode("utf-8", "replace")
    return {"rc": proc.returncode, "out": out}


def run(argv):
    return finish(start(argv))


# `horovodrun --check-build` imports TensorFlow in five subprocesses (a minute on a small machine): the
# image ran it right after installing Horovod and kept its output; older images run it now, meanwhile.
recorded = read(CHECK_BUILD_FILE)
check_build = None if recorded else start(["horovodrun", "--check-build"])
p = {"os_release": {}, "python": platform.python_version(), "python_executable": sys.executable}
for line in (read("/etc/os-release") or "").splitlines():
    key, _, value = line.partition("=")
    if value:
        p["os_release"][key] = value.strip().strip('"')
try:
    import tensorflow as tf
    p["tensorflow"] = {"version": tf.__version__, "cuda": bool(tf.test.is_built_with_cuda())}
    info = getattr(getattr(tf, "sysconfig", None), "get_build_info", None)
    if info:
        p["tensorflow"]["build_info"] = dict((k, str(v)) for k, v in info().items())
except Exception as exc:
    p["tensorflow"] = {"error": repr(exc)}
try:
    import torch
    p["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda}
    try:
        p["torch"]["cudnn"] = torch.backends.cudnn.version()
    except Exception as exc:
        p["torch"]["cudnn_error"] = repr(exc)
    if torch.version.cuda:
        try:
            p["torch"]["nccl"] = torch.cuda.nccl.version()
        except Exception as exc:
            p["torch"]["nccl_error"] = repr(exc)
    import torch.distributed as dist
    p["torch"]["backends"] = dict((n, bool(getattr(dist, "is_" + n + "_available")()))
                                  for n in ("gloo", "mpi", "nccl")) if dist.is_available() else {}
except Exception as exc:
    p["torch"] = {"error": repr(exc)}
p["horovod_check_build"] = {"rc": 0, "out": recorded, "recorded": True} if recorded else finish(check_build)
try:
    import horovod
    p["horovod"] = {"version": horovod.__version__}
    try:  # the library's own answer, live (cheap: the framework is imported already)
        # Horovod's binding of the first framework the image holds (probe key -> binding module)
        bindings = (("tensorflow", "horovod.tensorflow"), ("torch", "horovod.torch"))
        module = next((m for key, m in bindings if "version" in p.get(key, {})), bindings[0][1])
        hvd = __import__(module, fromlist=["mpi_built"])
        api = {}
        for name in ("mpi_built", "gloo_built", "nccl_built"):
            fn = getattr(hvd, name, None)
            if fn is not None:
                api[name] = bool(fn())
        p["horovod"]["api"] = api
    except Exception as exc:
        p["horovod"]["tensorflow_error"] = repr(exc)
except Exception as exc:
    p["horovod"] = {"error": repr(exc)}
p["mpirun_version"] = run(["mpirun", "--version"])
p["mpiname"] = run(["mpiname", "-v"])
p["ofed_info"] = run(["ofed_info", "-s"])
p["packages"] = dpkg("libnccl*")
p["packages"].update(dpkg("libcudnn*"))
inc = ["/usr/include", "/usr/local/cuda/include", "/usr/include/x86_64-linux-gnu"]
p["nccl_header"] = header([d + "/nccl.h" for d in inc], ["NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"])
p["cudnn_header"] = header([d + "/cudnn_version.h" for d in inc] + [d + "/cudnn.h" for d in inc],
                           ["CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"])
p["cuda_env"] = os.environ.get("CUDA_VERSION")
p["cuda_version_txt"] = read("/usr/local/cuda/version.txt")
p["cuda_version_json"] = read("/usr/local/cuda/version.json")
ld = run(["ldconfig", "-p"]) or {"out": ""}
p["libraries"] = sorted(set(line.split()[0] for line in ld["out"].splitlines()[1:]
                            if re.match(r"\s*lib(nccl|cudnn|cudart|mpi|ibverbs)\b", line)))
p["pip_freeze"] = run([sys.executable, "-m", "pip", "freeze", "--all"])
p["ssh_host_keys"] = [(read(k) or "").strip() for k in sorted(glob.glob("/etc/ssh/ssh_host_*_key.pub"))]
p["sshd_config"] = read("/etc/ssh/sshd_config")
p["env"] = dict((k, os.environ.get(k)) for k in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "REPRO_TF_CNN_BENCHMARKS"))
p["workloads"] = sorted(os.path.basename(x) for x in glob.glob("/opt/repro/repro/workloads/*.py"))
print("REPRO_PROBE " + json.dumps(p, sort_keys=True))
'''.replace("@CHECK_BUILD_FILE@", CHECK_BUILD_FILE)

# GPU images import TensorFlow only with a libcuda.so.1; the CUDA stub lets them import without a GPU.
_LAUNCHER = ('if [ -e /usr/local/cuda/lib64/stubs/libcuda.so ]; then mkdir -p /tmp/repro-stubs && '
             'ln -sf /usr/local/cuda/lib64/stubs/libcuda.so /tmp/repro-stubs/libcuda.so.1 && '
             'export LD_LIBRARY_PATH=/tmp/repro-stubs:${LD_LIBRARY_PATH:-}; fi; exec python -c "$0"')
PROBE_TIMEOUT_S = 300


def probe(client: docker.DockerClient, tag: str) -> ImageProbe:
    """Run the probe in a throw-away container of `tag` and return what it found."""
    import docker

    try:
        out = client.containers.run(tag, entrypoint=["sh", "-c", _LAUNCHER, PROBE], network_mode="none",
                                    remove=True, stdout=True, stderr=False)
    except docker.errors.ContainerError as exc:
        tail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-15:]
        raise VerificationError(f"the verification probe failed inside {tag} (exit {exc.exit_status}):\n"
                                + "\n".join(tail)) from None
    except docker.errors.ImageNotFound:
        raise ImageError(f"image {tag} disappeared from the engine before it could be verified") from None
    except docker.errors.APIError as exc:
        raise ImageError(f"cannot run a container of {tag} to verify it: {exc.explanation or exc}") from None
    return parse_probe(out.decode(errors="replace") if isinstance(out, bytes) else str(out), tag)


def parse_probe(output: str, tag: str = "the image") -> ImageProbe:
    """What the probe found, from its stdout (its one `REPRO_PROBE <json>` line), parsed once."""
    for line in reversed(output.splitlines()):
        if line.startswith("REPRO_PROBE "):
            try:
                data = json.loads(line[len("REPRO_PROBE "):])
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise VerificationError(f"the verification probe printed an unreadable result inside {tag}:\n"
                                        f"{line[:2000]}")
            return ImageProbe.from_json(data)
    raise VerificationError(f"the verification probe printed no result inside {tag}:\n{output[-2000:]}")


@dataclass(frozen=True)
class ImageProbe:
    """What the verification probe found inside an image: the versions, Horovod's build, the installed
    distributions and the sshd facts the stack checks, the lock and an archive's restore compare."""

    versions: dict[str, str | None]  # found_versions: os, python, tensorflow, horovod, mpi, nccl, cudnn, cuda, ...
    horovod_build: dict[str, bool | None]  # horovod_flags: tensorflow, pytorch, mpi, gloo, nccl (None: unknown)
    pip_freeze: tuple[str, ...]
    libraries: tuple[str, ...]  # the ldconfig entries of NCCL, cuDNN, CUDA runtime, MPI, verbs
    ssh_host_keys: tuple[str, ...]
    environment: dict[str, str | None]  # PATH, PYTHONPATH, LD_LIBRARY_PATH, REPRO_TF_CNN_BENCHMARKS
    software: Software  # the same facts as every stack check takes them

    @classmethod
    def from_json(cls, found: dict[str, Any]) -> ImageProbe:
        """The probe's JSON document (the only place that reads it)."""
        env = found.get("env") if isinstance(found.get("env"), dict) else {}
        return cls(versions=found_versions(found), horovod_build=horovod_flags(found),
                   pip_freeze=tuple(pip_freeze(found)), libraries=tuple(map(str, found.get("libraries") or ())),
                   ssh_host_keys=tuple(map(str, found.get("ssh_host_keys") or ())),
                   environment={str(k): None if v is None else str(v) for k, v in env.items()},
                   software=software(found))


# -- parsing ----------------------------------------------------------------------------------------


def _text(result: Any) -> str:
    return result["out"] if isinstance(result, dict) and result.get("rc") == 0 else ""


def parse_check_build(text: str) -> dict[str, dict[str, bool]]:
    """`horovodrun --check-build` -> {section: {item: built}}, e.g. {'controllers': {'gloo': True}}."""
    out: dict[str, dict[str, bool]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        m = re.match(r"\[([xX ])\]\s+(.+)$", line)
        if m and section:
            out.setdefault(section, {})[m.group(2).strip().lower()] = m.group(1).lower() == "x"
        elif line.endswith(":") and not line.lower().startswith("horovod"):
            section = line[:-1].lower().removeprefix("available ").strip()
    return out


def horovod_flags(found: dict[str, Any]) -> dict[str, bool | None]:
    """What Horovod was built with (tensorflow, mpi, gloo, nccl; None: unknown).

    The `[X]` marks of `horovodrun --check-build`, with the library's live answers (mpi_built(), gloo_built(),
    nccl_built() in the probe) taking precedence where it gives them.
    """
    hvd = found.get("horovod") or {}
    api = hvd.get("api") or {}
    live = {"mpi": api.get("mpi_built"), "gloo": api.get("gloo_built"), "nccl": api.get("nccl_built")}
    table = parse_check_build(_text(found.get("horovod_check_build")))
    if table:
        flags = {"tensorflow": table.get("frameworks", {}).get("tensorflow"),
                 "pytorch": table.get("frameworks", {}).get("pytorch"),
                 "mxnet": table.get("frameworks", {}).get("mxnet"),
                 "mpi": table.get("controllers", {}).get("mpi"),
                 "gloo": table.get("controllers", {}).get("gloo"),
                 "nccl": table.get("tensor operations", {}).get("nccl")}
        flags.update({k: v for k, v in live.items() if v is not None})
        return flags
    if "error" in hvd:
        return {"tensorflow": None, "mpi": None, "gloo": None, "nccl": None}
    imported = "tensorflow_error" not in hvd
    return {"tensorflow": imported,
            # before 0.16 MPI was Horovod's only controller and Gloo did not exist
            "mpi": live["mpi"] if live["mpi"] is not None else (True if imported and not api else None),
            "gloo": live["gloo"] if live["gloo"] is not None else (False if imported and not api else None),
            "nccl": live["nccl"]}


def _mpi(found: dict[str, Any]) -> tuple[str | None, str | None]:
    text = _text(found.get("mpirun_version"))
    m = re.search(r"\(Open MPI\)\s+(\S+)", text)
    if m:
        return "openmpi", m.group(1)
    name = _text(found.get("mpiname")).strip()
    if name:
        return "mvapich2", name.split()[-1]
    m = re.search(r"Version:\s+(\S+)", text)
    return ("mpich", m.group(1)) if m else (None, None)


def _cuda(found: dict[str, Any]) -> str | None:
    if found.get("cuda_env"):
        return found["cuda_env"]
    m = re.search(r"CUDA Version\s+(\S+)", found.get("cuda_version_txt") or "")
    if m:
        return m.group(1)
    try:
        return json.loads(found.get("cuda_version_json") or "")["cuda"]["version"]
    except (ValueError, KeyError, TypeError):
        return None


def _package(found: dict[str, Any], prefix: str) -> str | None:
    pkgs = found.get("packages") or {}
    names = sorted(n for n in pkgs if re.match(prefix + r"\d*(-dev)?$", n) and not n.endswith("-dev"))
    return pkgs[names[-1]] if names else None


def pip_freeze(found: dict[str, Any]) -> list[str]:
    return [ln.strip() for ln in _text(found.get("pip_freeze")).splitlines() if ln.strip()]


def _frozen(found: dict[str, Any]) -> dict[str, str]:
    out = {}
    for line in pip_freeze(found):
        name, sep, version = line.partition("==")
        if sep:
            out[normal_name(name)] = version
    return out


def found_versions(found: dict[str, Any]) -> dict[str, str | None]:
    """The versions a probe found: each framework's (its plug-in's lock_versions: tensorflow; torch, torch_cuda,
    ...), os, python, horovod, mpi, nccl, cudnn, cuda, ofed."""
    osr = found.get("os_release") or {}
    impl, mpi_version = _mpi(found)
    ofed = _text(found.get("ofed_info")).strip().removeprefix("MLNX_OFED_LINUX-").rstrip(":") or None
    probe = {**found, "frozen": _frozen(found)}
    versions: dict[str, str | None] = {}
    for _, framework in FRAMEWORKS.items():
        versions.update(framework.lock_versions(probe))
    return {
        **versions,
        "os": f"{osr.get('ID', '?')} {osr.get('VERSION_ID', '?')}" if osr else None,
        "python": found.get("python"),
        "horovod": (found.get("horovod") or {}).get("version") or _frozen(found).get("horovod"),
        "mpi": f"{impl} {mpi_version}" if impl else None,
        "nccl": _package(found, "libnccl") or found.get("nccl_header"),
        "cudnn": _package(found, "libcudnn") or found.get("cudnn_header"),
        "cuda": _cuda(found),
        "ofed": ofed,
    }


# -- comparing --------------------------------------------------------------------------------------


def software(found: dict[str, Any]) -> Software:
    """What the probe's JSON says, as the Software value every stack check takes."""
    v = found_versions(found)
    port = re.search(r"^Port\s+(\d+)", found.get("sshd_config") or "", re.MULTILINE)
    hvd = found.get("horovod") or {}
    probe = {**found, "frozen": _frozen(found)}
    parts = {name: framework.image_software(probe) for name, framework in FRAMEWORKS.items()}
    return Software(
        os=v["os"], python=v["python"], frameworks={k: part for k, part in parts.items() if part is not None},
        packages=_frozen(found), horovod=v["horovod"], horovod_error=hvd.get("error"),
        horovod_built=horovod_flags(found), mpi=v["mpi"], cuda=v["cuda"], cudnn=v["cudnn"], nccl=v["nccl"],
        ofed=v["ofed"], sshd_port=int(port.group(1)) if port else None,
        ssh_host_keys=list(found.get("ssh_host_keys") or []))


def mismatches(stack: Stack, found: ImageProbe) -> list[str]:
    """Every way the probed image differs from the stack: 'component: pinned X, found Y'."""
    return software_mismatches(stack, found.software, where="image")


def check(stack: Stack, found: ImageProbe, *, tag: str) -> None:
    """Raise VerificationError naming each component where the image differs from the stack."""
    bad = mismatches(stack, found)
    if bad:
        raise VerificationError(
            f"image {tag} does not match stack {stack.name} ({len(bad)} difference{'s' if len(bad) != 1 else ''}):\n"
            + "\n".join(f"  {line}" for line in bad),
            hint="no lock was written; fix the stack or the build inputs (e.g. the wheelhouse's prebuilt wheels) "
            "and run `repro up` again")
