"""Render a stack's Dockerfile and Apptainer definition from the building blocks in docker/ (pure).

HPC Container Maker's model: each concern (base, os packages, ofed, mpi, nccl, cudnn, python,
tensorflow, horovod, sshd, tf_cnn_benchmarks, workloads) is a small frozen block whose versions are
data with one default and whose download URLs derive from the version. `building_blocks(stack)`
configures them from a stack, each renders its own template, and the Dockerfile is their
concatenation, slow and stable layers first. The Apptainer definition is converted from the same
fragments, so the two never drift apart.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import jinja2

from repro.manifest.compat import table
from repro.manifest.schema import Stack
from repro.manifest.versions import major_minor, parse_version

DEFAULT_TEMPLATES = Path(__file__).resolve().parents[2] / "docker"
REPO = "repro/stack"  # image repository; the tag is the build key (see image_key)

# tensorflow/benchmarks keeps one branch per TF 1.x release line; each pin is the branch's head commit.
TF_BENCHMARKS = {
    "1.5": ("cnn_tf_v1.5_compatible", "48cbef14a592e02a14beee8e9aef3ad22cadaed1"),
    "1.8": ("cnn_tf_v1.8_compatible", "3b90c14fb2bf02ca5d27c188aee878663229a0a7"),
    "1.9": ("cnn_tf_v1.9_compatible", "9815f5f84fd5e681bbffdfe3176272a5c4ff5621"),
    "1.10": ("cnn_tf_v1.10_compatible", "4c7b09ad87bbfc4b1f89650bcee40b3fc5e7dfed"),
    "1.11": ("cnn_tf_v1.11_compatible", "4c7b09ad87bbfc4b1f89650bcee40b3fc5e7dfed"),
    "1.12": ("cnn_tf_v1.12_compatible", "ec056be57f189ec96611a58e8dc5562a6d620139"),
    "1.13": ("cnn_tf_v1.13_compatible", "4828965154c424bc61a7ec361edb67bb267869f4"),
    "1.14": ("cnn_tf_v1.14_compatible", "aef6daa90a467a1fc7ce8395cd0067e5fda1ecff"),
    "1.15": ("cnn_tf_v1.15_compatible", "aef6daa90a467a1fc7ce8395cd0067e5fda1ecff"),
}
# cuDNN release -> package build number (NVIDIA's machine-learning apt repository).
CUDNN_BUILDS = {"7.1.3": "7.1.3.16", "7.6.5": "7.6.5.32", "8.9.6": "8.9.6.50"}
# pip, setuptools and wheel the image's Python starts from: the last releases supporting that Python.
PIP_BOOTSTRAP = (
    ((3, 8), ("pip==24.0", "setuptools==69.5.1", "wheel==0.43.0")),
    ((3, 7), ("pip==24.0", "setuptools==68.0.0", "wheel==0.42.0")),
    ((3, 0), ("pip==21.3.1", "setuptools==59.6.0", "wheel==0.37.1")),
    ((2, 7), ("pip==20.3.4", "setuptools==44.1.1", "wheel==0.37.1")),
)
# What repro's workloads import beyond TensorFlow and Horovod (tta: scikit-learn's digits dataset).
WORKLOAD_REQUIREMENTS = ("scikit-learn==1.3.2",)
OFED_APT = ("ethtool", "kmod", "libelf1", "libltdl7", "libmnl0", "libnl-3-200", "libnl-route-3-200", "libnuma1",
            "lsb-release", "pciutils", "perl", "tcl", "tk", "udev")
# `horovodrun --check-build` as run in the image right after Horovod was installed (read by the verifier).
CHECK_BUILD_FILE = "/opt/repro/horovod-check-build.txt"
SESSION_ENV = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV")


@dataclass(frozen=True)
class RenderOptions:
    """Site build settings that change the rendered text (all off by default)."""

    ca_bundle: bool = False  # copy ca-bundle.crt from the context; pip/requests/curl use it
    pip_index: str | None = None
    extra_index: str | None = None
    wheels: tuple[str, ...] = ()  # wheel file names in the context's wheelhouse/
    ofed_mirror: str | None = None  # replaces https://content.mellanox.com/ofed, same layout below it
    ofed_url: str | None = None  # the tarball's full URL
    ofed_tarball: str | None = None  # a tarball in the context (file name)
    apptainer_bootstrap: str = "docker"


# -- building blocks ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One concern of the image: a template under docker/ and the distribution packages it needs."""

    template: ClassVar[str] = ""
    name: ClassVar[str] = ""

    def apt(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True)
class Base(Block):
    template = "base.j2"
    name = "base"
    image: str = "debian:12"
    image_hash: str = ""


@dataclass(frozen=True)
class OsPackages(Block):
    template = "os_packages.j2"
    name = "os packages"
    packages: tuple[str, ...] = ("ca-certificates",)


@dataclass(frozen=True)
class Site(Block):
    template = "site.j2"
    name = "site"
    ca_bundle: str | None = None
    pip_index: str | None = None
    extra_index: str | None = None


@dataclass(frozen=True)
class Ofed(Block):
    template = "ofed.j2"
    name = "ofed"
    version: str = "4.7-3.2.9.0"
    os: str = "ubuntu18.04"
    mirror: str = "https://content.mellanox.com/ofed"
    url_override: str | None = None
    tarball: str | None = None

    @property
    def url(self) -> str:
        if self.url_override:
            return self.url_override
        v = self.version
        return f"{self.mirror.rstrip('/')}/MLNX_OFED-{v}/MLNX_OFED_LINUX-{v}-{self.os}-x86_64.tgz"

    def apt(self) -> tuple[str, ...]:
        return (*OFED_APT, "ca-certificates", "curl")


@dataclass(frozen=True)
class Mpi(Block):
    template = "mpi.j2"
    name = "mpi"
    implementation: str = "openmpi"
    version: str = "4.0.0"
    cuda: bool = False
    verbs: bool = False
    from_distro: bool = False
    dev: bool = False  # headers too (a Horovod source build links against them)
    prefix: str = "/usr/local"

    @property
    def url(self) -> str:
        v = self.version
        if self.implementation == "openmpi":
            major, minor = v.split(".")[:2]
            return f"https://download.open-mpi.org/release/open-mpi/v{major}.{minor}/openmpi-{v}.tar.bz2"
        return f"https://mvapich.cse.ohio-state.edu/download/mvapich/mv2/mvapich2-{v}.tar.gz"

    @property
    def packages(self) -> tuple[str, ...]:
        return ("openmpi-bin", "libopenmpi-dev") if self.dev else ("openmpi-bin",)

    def apt(self) -> tuple[str, ...]:
        if self.from_distro:
            return self.packages
        return ("bzip2", "ca-certificates", "curl", "file", "g++", "make", "perl")


@dataclass(frozen=True)
class Nccl(Block):
    template = "nccl.j2"
    name = "nccl"
    version: str = "2.5.6"
    cuda: str = "10.0"

    @property
    def package_version(self) -> str:
        v = self.version if "-" in self.version else f"{self.version}-1"
        return f"{v}+cuda{major_minor(self.cuda)}"


@dataclass(frozen=True)
class Cudnn(Block):
    template = "cudnn.j2"
    name = "cudnn"
    version: str = "7.6.5"
    cuda: str = "10.0"
    base_cudnn: str | None = None

    @property
    def package(self) -> str:
        return f"libcudnn{self.version.split('.')[0]}"

    @property
    def dev_package(self) -> str:
        return f"{self.package}-dev"

    @property
    def package_version(self) -> str:
        full = CUDNN_BUILDS.get(self.version, self.version if self.version.count(".") >= 3 else self.version + ".*")
        return f"{full}-1+cuda{major_minor(self.cuda)}"


@dataclass(frozen=True)
class Python(Block):
    template = "python.j2"
    name = "python"
    version: str = "3.11"
    origin: str = "the distribution"
    deadsnakes: bool = False
    venv: str | None = "/opt/repro/venv"
    dev: bool = False
    pythonpath: str = "/opt/repro"

    @property
    def executable(self) -> str:
        if self.version.startswith("2"):
            return "python"
        return f"python{self.version}" if self.deadsnakes else "python3"

    @property
    def bootstrap(self) -> tuple[str, ...]:
        want = tuple(parse_version(self.version)[:2])
        return next(pins for floor, pins in PIP_BOOTSTRAP if want >= floor)

    def apt(self) -> tuple[str, ...]:
        if self.version.startswith("2"):
            return ("python", "python-dev", "python-pip")
        if self.deadsnakes:
            return ("software-properties-common",)
        return ("python3", "python3-venv", *(("python3-dev",) if self.dev else ()))


@dataclass(frozen=True)
class TensorFlow(Block):
    template = "tensorflow.j2"
    name = "tensorflow"
    package: str = "tensorflow-cpu"
    version: str = "2.15.1"
    source: bool = False


@dataclass(frozen=True)
class Horovod(Block):
    template = "horovod.j2"
    name = "horovod"
    version: str = "0.28.1"
    gpu: bool = False
    gpu_operations: str | None = None
    with_mpi: bool = True
    with_gloo: bool = True
    wheel: str | None = None  # a matching wheel in the wheelhouse: no compiler needed
    copy_wheelhouse: bool = False  # the wheelhouse is copied here (not already by tensorflow)
    find_links: bool = False
    check_build_file: str = CHECK_BUILD_FILE

    @property
    def check_build(self) -> bool:
        return parse_version(self.version) >= (0, 16)  # horovodrun appeared in 0.16

    @property
    def env_lines(self) -> tuple[str, ...]:
        """The HOROVOD_* build variables this version understands."""
        v = parse_version(self.version)
        out = ["HOROVOD_WITH_TENSORFLOW=1", "HOROVOD_WITHOUT_PYTORCH=1", "HOROVOD_WITHOUT_MXNET=1"]
        if v >= (0, 17):  # HOROVOD_WITH_MPI / WITH_GLOO first appeared in 0.17.0
            out.append(f"HOROVOD_{'WITH' if self.with_mpi else 'WITHOUT'}_MPI=1")
            out.append(f"HOROVOD_{'WITH' if self.with_gloo else 'WITHOUT'}_GLOO=1")
        if self.gpu_operations:
            # HOROVOD_GPU_OPERATIONS arrived in 0.20 (#1960); before it, each operation had its own variable
            if v >= (0, 20):
                out.append(f"HOROVOD_GPU_OPERATIONS={self.gpu_operations}")
            else:
                out.append(f"HOROVOD_GPU_ALLREDUCE={self.gpu_operations}")
                out.append(f"HOROVOD_GPU_BROADCAST={self.gpu_operations}")
        return tuple(out)

    def apt(self) -> tuple[str, ...]:
        if self.wheel:
            return ()
        return ("cmake", "g++", "make") if parse_version(self.version) >= (0, 20) else ("g++", "make")


@dataclass(frozen=True)
class PipPackages(Block):
    template = "pip_packages.j2"
    name = "pip packages"
    requirements: tuple[str, ...] = WORKLOAD_REQUIREMENTS


@dataclass(frozen=True)
class TfCnnBenchmarks(Block):
    template = "tf_cnn_benchmarks.j2"
    name = "tf_cnn_benchmarks"
    branch: str = "cnn_tf_v1.14_compatible"
    commit: str = TF_BENCHMARKS["1.14"][1]
    prefix: str = "/opt/tf_benchmarks"

    @property
    def url(self) -> str:
        return f"https://github.com/tensorflow/benchmarks/archive/{self.commit}.tar.gz"

    @property
    def script(self) -> str:
        return f"{self.prefix}/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"

    def apt(self) -> tuple[str, ...]:
        return ("ca-certificates", "curl")


@dataclass(frozen=True)
class Sshd(Block):
    template = "sshd.j2"
    name = "sshd"
    port: int = 50000
    session_env: tuple[str, ...] = SESSION_ENV

    @property
    def config(self) -> tuple[str, ...]:
        return (f"Port {self.port}", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                "ChallengeResponseAuthentication no", "PubkeyAuthentication yes", "UsePAM yes",
                "X11Forwarding no", "PrintMotd no", "AcceptEnv LANG LC_*",
                "Subsystem sftp /usr/lib/openssh/sftp-server")

    def apt(self) -> tuple[str, ...]:
        return ("iproute2", "openssh-client", "openssh-server", "procps")


@dataclass(frozen=True)
class Workloads(Block):
    template = "workloads.j2"
    name = "workloads"
    prefix: str = "/opt/repro"


# -- configuring blocks from a stack ---------------------------------------------------------------


def _os_key(stack: Stack) -> str:
    return f"{stack.os.distro}{stack.os.version}"


def distro_packages(stack: Stack) -> dict:
    """The compat table's row of what the stack's distribution ships (python, openmpi), or {}."""
    return next((r for r in table()["distro_packages"] if r["os"] == _os_key(stack)), {})


def base_image_cudnn(base_image: str) -> str | None:
    """cuDNN version inside a cudnn base image, when known."""
    tag = base_image.split(":", 1)[-1]
    known = [(r["tag"], r["cudnn"]) for r in table().get("cuda_image_cudnn", [])]
    return next((cudnn for prefix, cudnn in known if tag.startswith(prefix + "-")), None)


def wheel_matches(filename: str, project: str, version: str, python: str) -> bool:
    """Whether a wheel file is `project==version` for this Python (cpXY tag, or a pure py2/py3 wheel)."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) < 5:
        return False
    name, ver, pytag = parts[0], parts[1], parts[-3]
    if name.lower().replace("_", "-") != project.lower().replace("_", "-") or ver != version:
        return False
    major, minor = python.split(".")[:2]
    return any(t in (f"cp{major}{minor}", f"py{major}", f"py{major}{minor}") for t in pytag.split("."))


def tf_benchmarks_pin(tf_version: str) -> tuple[str, str] | None:
    """tensorflow/benchmarks branch and commit for a TF 1.x release (the newest branch not past it)."""
    v = parse_version(tf_version)[:2]
    if v[0] != 1:
        return None
    fitting = [key for key in TF_BENCHMARKS if parse_version(key) <= v]
    return TF_BENCHMARKS[max(fitting, key=parse_version)] if fitting else None


def building_blocks(stack: Stack, options: RenderOptions | None = None) -> tuple[Block, ...]:
    """The configured blocks of a stack's image, in layer order."""
    o = options or RenderOptions()
    s = stack
    distro = distro_packages(s)
    pythons = distro.get("python", [])
    pythons = pythons if isinstance(pythons, list) else [pythons]
    hvd_wheel = next((w for w in o.wheels if wheel_matches(w, "horovod", s.horovod.version, s.python)), None)
    tf_source = s.tensorflow.build == "source"
    compiles = hvd_wheel is None  # Horovod from source needs headers of Python and MPI

    py2 = s.python.startswith("2")
    in_distro = major_minor(s.python) in pythons
    python = Python(
        version=s.python,
        origin=f"{s.os.distro} {s.os.version}" if in_distro else "deadsnakes PPA",
        deadsnakes=not in_distro and not py2 and s.os.distro == "ubuntu",
        venv=None if py2 else "/opt/repro/venv",
        dev=compiles,
    )
    distro_mpi = (not s.gpu and s.mpi.implementation == "openmpi" and distro.get("openmpi") == s.mpi.version)
    mpi = Mpi(implementation=s.mpi.implementation, version=s.mpi.version, cuda=s.gpu, verbs=bool(s.gpu and s.ofed),
              from_distro=distro_mpi, dev=compiles)
    tensorflow = TensorFlow(package=s.tensorflow.package or "tensorflow", version=s.tensorflow.version,
                            source=tf_source)
    horovod = Horovod(version=s.horovod.version, gpu=s.gpu, gpu_operations=s.horovod.gpu_operations,
                      with_mpi=s.horovod.with_mpi, with_gloo=s.horovod.with_gloo, wheel=hvd_wheel,
                      copy_wheelhouse=bool(o.wheels) and not tf_source, find_links=bool(o.wheels))

    middle: list[Block] = []
    middle.append(Site(ca_bundle="ca-bundle.crt" if o.ca_bundle else None, pip_index=o.pip_index,
                       extra_index=o.extra_index))
    if s.gpu and s.ofed:
        middle.append(Ofed(version=s.ofed, os=_os_key(s), url_override=o.ofed_url, tarball=o.ofed_tarball,
                           **({"mirror": o.ofed_mirror} if o.ofed_mirror else {})))
    middle.append(mpi)
    if s.gpu and s.nccl and s.cuda:
        middle.append(Nccl(version=s.nccl, cuda=s.cuda))
    if s.gpu and s.cudnn and s.cuda:
        shipped = base_image_cudnn(s.base_image or "")
        if shipped is None or parse_version(shipped)[: len(parse_version(s.cudnn))] != parse_version(s.cudnn):
            middle.append(Cudnn(version=s.cudnn, cuda=s.cuda, base_cudnn=shipped))
    middle += [python, tensorflow, horovod]
    requirements = (*(WORKLOAD_REQUIREMENTS if parse_version(s.python) >= (3, 8) else ()), *s.packages.pip)
    if requirements:
        middle.append(PipPackages(requirements=tuple(requirements)))
    pin = tf_benchmarks_pin(s.tensorflow.version)
    if pin:
        middle.append(TfCnnBenchmarks(branch=pin[0], commit=pin[1]))
    middle += [Sshd(port=s.container.ssh_port), Workloads()]

    packages = {"ca-certificates", *s.packages.apt}
    for block in middle:
        packages.update(block.apt())
    return (Base(image=s.base_image or f"{s.os.distro}:{s.os.version}", image_hash=_image_hash(s)),
            OsPackages(packages=tuple(sorted(packages))), *middle)


def _image_hash(stack: Stack) -> str:
    from repro.manifest.canonical import image_hash

    return image_hash(stack)


# -- rendering -------------------------------------------------------------------------------------


def templates_dir() -> Path:
    """Where the building-block templates live: $REPRO_TEMPLATES, else the repository's docker/."""
    return Path(os.environ.get("REPRO_TEMPLATES") or DEFAULT_TEMPLATES)


@functools.lru_cache(maxsize=8)
def _environment(directory: str) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(directory), undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)


def _render(template: str, templates: Path | None, **values) -> str:
    env = _environment(str(templates or templates_dir()))
    try:
        return env.get_template(template).render(**values)
    except jinja2.TemplateNotFound as exc:
        from repro.errors import ImageError

        raise ImageError(f"template {exc.name} not found in {templates or templates_dir()}") from None


def fragments(stack: Stack, options: RenderOptions | None = None, *, templates: Path | None = None
              ) -> list[tuple[str, str]]:
    """(block name, Dockerfile fragment) for each block, in layer order."""
    return [(b.name, _render(b.template, templates, b=b).strip("\n")) for b in building_blocks(stack, options)]


def render_dockerfile(stack: Stack, options: RenderOptions | None = None, *, templates: Path | None = None) -> str:
    """The stack's Dockerfile."""
    parts = fragments(stack, options, templates=templates)
    return _render("Dockerfile.j2", templates, image_hash=_image_hash(stack), names=[n for n, _ in parts],
                   fragments=[f for _, f in parts])


# -- Apptainer ------------------------------------------------------------------------------------


@dataclass
class _Definition:
    base: str = ""
    labels: list[tuple[str, str]] = field(default_factory=list)
    files: list[tuple[str, str]] = field(default_factory=list)
    environment: list[tuple[str, str]] = field(default_factory=list)
    post: list[str] = field(default_factory=list)
    startscript: str = ""


def _logical_lines(text: str) -> list[str]:
    """Dockerfile lines with backslash continuations joined (newlines kept inside)."""
    out: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            out.append(line)
            continue
        current.append(line)
        if not line.endswith("\\"):
            out.append("\n".join(current))
            current = []
    if current:
        out.append("\n".join(current))
    return out


def _pairs(args: str) -> list[tuple[str, str]]:
    out = []
    for item in shlex.split(args):
        key, _, value = item.partition("=")
        out.append((key, value))
    return out


def _convert(dockerfile: str) -> _Definition:
    d = _Definition()
    for line in _logical_lines(dockerfile):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            if stripped.startswith("# --"):
                d.post.append(f"    {stripped}")
            continue
        keyword, _, args = stripped.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            d.base = args.strip()
        elif keyword == "LABEL":
            d.labels += _pairs(args)
        elif keyword == "ENV":
            for key, value in _pairs(args):
                d.environment.append((key, value))
                d.post.append(f"    export {key}={value}")
        elif keyword == "ARG":
            for key, value in _pairs(args):
                d.post.append(f'    export {key}="${{{key}:-{value}}}"')
        elif keyword == "COPY":
            src, dst = args.split()
            d.files.append((src.rstrip("/"), dst.rstrip("/")))
        elif keyword == "RUN":
            body = line.split("RUN", 1)[1].strip()
            lines = body.splitlines()
            d.post.append(f"    ({lines[0]}")
            d.post += [f"    {rest}" for rest in lines[1:]]
            d.post[-1] += ")"
        elif keyword == "CMD":
            d.startscript = shlex.join(json.loads(args))
        # SHELL and EXPOSE have no Apptainer counterpart: %post runs bash with pipefail, ports are the host's
    return d


def render_apptainer(stack: Stack, options: RenderOptions | None = None, *, templates: Path | None = None) -> str:
    """The stack's Apptainer (Singularity) definition, converted from the same building blocks."""
    o = options or RenderOptions()
    d = _convert(render_dockerfile(stack, o, templates=templates))
    return _render("apptainer.def.j2", templates, image_hash=_image_hash(stack), bootstrap=o.apptainer_bootstrap,
                   base=d.base, labels=d.labels, files=d.files, environment=d.environment, post=d.post,
                   startscript=d.startscript)


# -- the image key ---------------------------------------------------------------------------------


def image_key(image_hash: str, dockerfile: str, files: Mapping[str, str], build_args: Mapping[str, str]) -> str:
    """Digest of everything a build consumes: image hash, Dockerfile, context file digests, build args."""
    payload = json.dumps({"image_hash": image_hash, "dockerfile": dockerfile, "files": dict(files),
                          "build_args": dict(build_args)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def image_tag(key: str) -> str:
    """The image reference repro builds a key as."""
    return f"{REPO}:{key}"
