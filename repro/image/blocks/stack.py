"""A stack's image as a list of building blocks: HPC Container Maker's where it has one, repro's own
(repro.image.blocks.own) where it has none (pure).

`building_blocks(stack, options)` configures every block from the stack's pins, slow and stable
layers first. It must run inside `formats.settings(...)`: hpccm's blocks read the format and the
distribution while they are made. The same function makes the Docker and the Apptainer recipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hpccm.building_blocks import apt_get, mlnx_ofed, mvapich2, openmpi, python, ucx
from hpccm.primitives import baseimage

from repro.image.blocks import formats, own, safe
from repro.manifest import frameworks
from repro.manifest.compat import table
from repro.manifest.frameworks import ImageNeeds
from repro.manifest.schema import Stack
from repro.manifest.versions import major_minor, parse_version

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
SSHD_APT = ("iproute2", "openssh-client", "openssh-server", "procps")
OFED_TARBALL_APT = ("ethtool", "kmod", "libelf1", "libltdl7", "libmnl0", "libnl-3-200", "libnl-route-3-200",
                    "libnuma1", "lsb-release", "pciutils", "perl", "tcl", "tk", "udev")
MPI_PREFIX = "/usr/local"
UCX_PREFIX = "/usr/local/ucx"


@dataclass(frozen=True)
class RenderOptions:
    """Site build settings that change the rendered text (all off by default)."""

    ca_bundle: bool = False  # copy ca-bundle.crt from the context; pip/requests/curl/OpenSSL use it
    pip_index: str | None = None
    extra_index: str | None = None
    wheels: tuple[str, ...] = ()  # wheel file names in the context's wheelhouse/
    ofed_mirror: str | None = None  # replaces https://content.mellanox.com/ofed, same layout below it
    ofed_url: str | None = None  # the tarball's full URL
    ofed_tarball: str | None = None  # a tarball in the context (file name)
    apptainer_bootstrap: str = "docker"
    base_image: str | None = None  # FROM this instead of the stack's base (a rebuilt end-of-life base)


def os_key(stack: Stack) -> str:
    """'ubuntu18.04', 'debian12': how compat.yaml and Mellanox name a release."""
    return f"{stack.os.distro}{stack.os.version}"


def distro_packages(stack: Stack) -> dict:
    """The compat table's row of what the stack's distribution ships (python, openmpi), or {}."""
    return next((r for r in table()["distro_packages"] if r["os"] == os_key(stack)), {})


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


def torch_wheel_matches(filename: str, stack: Stack) -> bool:
    """Whether a wheel file is the stack's PyTorch: its version with or without the variant's local label
    (torch-2.13.0+cpu-cp311-...), for the stack's Python."""
    p = stack.pytorch
    if p is None:
        return False
    project = p.package or "torch"
    return any(wheel_matches(filename, project, v, stack.python) for v in (p.version, f"{p.version}+{p.variant}"))


def tf_benchmarks_pin(tf_version: str) -> tuple[str, str] | None:
    """tensorflow/benchmarks branch and commit for a TF 1.x release (the newest branch not past it)."""
    v = parse_version(tf_version)[:2]
    if v[0] != 1:
        return None
    fitting = [key for key in TF_BENCHMARKS if parse_version(key) <= v]
    return TF_BENCHMARKS[max(fitting, key=parse_version)] if fitting else None


def nccl_package_version(nccl: str, cuda: str) -> str:
    """libnccl2's package version: '2.5.6' on CUDA 10.0 -> '2.5.6-1+cuda10.0'."""
    return f"{nccl if '-' in nccl else nccl + '-1'}+cuda{major_minor(cuda)}"


def cudnn_package_version(cudnn: str, cuda: str) -> str:
    """libcudnnN's package version: '7.6.5' on CUDA 10.0 -> '7.6.5.32-1+cuda10.0'."""
    full = CUDNN_BUILDS.get(cudnn, cudnn if cudnn.count(".") >= 3 else cudnn + ".*")
    return f"{full}-1+cuda{major_minor(cuda)}"


@dataclass(frozen=True)
class _Plan:
    """What the stack's pins decide, before any block is made."""

    py2: bool
    python_in_distro: bool
    compiles: bool  # Horovod from source: headers of Python and MPI, compilers
    distro_mpi: bool
    hvd_wheel: str | None
    framework: ImageNeeds = field(default_factory=ImageNeeds)  # what the framework's block needs of the rest


def _plan(s: Stack, o: RenderOptions) -> _Plan:
    pythons = distro_packages(s).get("python", [])
    pythons = pythons if isinstance(pythons, list) else [pythons]
    hvd_wheel = next((w for w in o.wheels if s.horovod and wheel_matches(w, "horovod", s.horovod.version, s.python)),
                     None)
    distro_mpi = (not s.gpu and s.mpi.implementation == "openmpi"
                  and distro_packages(s).get("openmpi") == s.mpi.version)
    return _Plan(py2=s.python.startswith("2"), python_in_distro=major_minor(s.python) in pythons,
                 compiles=s.horovod is not None and hvd_wheel is None, distro_mpi=distro_mpi, hvd_wheel=hvd_wheel,
                 framework=frameworks.of(s).image_needs(s, o))


def _os_packages(s: Stack, o: RenderOptions, p: _Plan) -> list[str]:
    """Every distribution package repro's own blocks need, plus the stack's, for one layer."""
    wanted = {"ca-certificates", *SSHD_APT}
    wanted.update(p.framework.os_packages)
    if s.gpu and s.ofed and (o.ofed_url or o.ofed_mirror):
        wanted.add("wget")  # repro's own downloads use wget, as hpccm's blocks do
    if p.distro_mpi:
        wanted.update(("openmpi-bin", "libopenmpi-dev") if p.compiles else ("openmpi-bin",))
    if p.compiles and s.horovod is not None:
        wanted.update(("cmake", "g++", "make") if parse_version(s.horovod.version) >= (0, 20) else ("g++", "make"))
        if s.horovod.commit:
            wanted.add("git")  # a commit is cloned with its submodules (a GitHub archive has none)
    if p.py2:
        wanted.add("python-pip")
    elif p.python_in_distro:
        wanted.add("python3-venv")
    if s.gpu and s.ofed and (o.ofed_url or o.ofed_mirror or o.ofed_tarball):
        wanted.update(OFED_TARBALL_APT)
    wanted.update(safe.apt_package(name, f"packages.apt[{i}]") for i, name in enumerate(s.packages.apt))
    return sorted(wanted)


def _python_blocks(s: Stack, p: _Plan) -> list[tuple[str, object]]:
    want = tuple(parse_version(s.python)[:2])
    bootstrap = list(next(pins for floor, pins in PIP_BOOTSTRAP if want >= floor))
    if p.py2 or p.python_in_distro:
        installed = python(python2=p.py2, python3=not p.py2, devel=p.compiles)
        executable = "python3"
    else:  # a Python the release does not ship: the deadsnakes PPA (Ubuntu)
        executable = f"python{safe.version(s.python, 'python')}"
        installed = apt_get(ppas=["ppa:deadsnakes/ppa"], ospackages=[executable, f"{executable}-dev",
                                                                     f"{executable}-venv"])
    env = own.PythonEnv(executable=executable, venv=None if p.py2 else "/opt/repro/venv", bootstrap=bootstrap,
                        system_site_packages=p.framework.system_site_packages)
    return [("python", installed), ("python env", env)]


def _mpi_blocks(s: Stack, p: _Plan) -> list[tuple[str, object]]:
    version = safe.version(s.mpi.version, "mpi.version")
    verbs = bool(s.gpu and s.ofed)
    if p.distro_mpi:
        return [("mpi", own.note(f"Open MPI {version} is the distribution's own (openmpi-bin, in the os packages)"))]
    if s.mpi.implementation == "mvapich2":
        return [("mpi", mvapich2(version=version, cuda=s.gpu, prefix=MPI_PREFIX, ldconfig=True))]
    if parse_version(version) >= (5,) and verbs:  # Open MPI 5 removed the openib BTL: InfiniBand through UCX
        return [("ucx", ucx(cuda=s.gpu, ofed=True, prefix=UCX_PREFIX, ldconfig=True)),
                ("mpi", openmpi(version=version, cuda=s.gpu, infiniband=False, ucx=UCX_PREFIX, prefix=MPI_PREFIX,
                                ldconfig=True))]
    return [("mpi", openmpi(version=version, cuda=s.gpu, infiniband=verbs, prefix=MPI_PREFIX, ldconfig=True))]


def _gpu_blocks(s: Stack, o: RenderOptions) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    if s.ofed:
        ofed = safe.version(s.ofed, "ofed")
        if o.ofed_url or o.ofed_mirror or o.ofed_tarball:
            out.append(("ofed", own.MlnxOfedTarball(version=ofed, oslabel=os_key(s), mirror=o.ofed_mirror,
                                                    url=o.ofed_url, tarball=o.ofed_tarball)))
        else:
            out.append(("ofed", mlnx_ofed(version=ofed, oslabel=os_key(s))))
    return out


def _cuda_library_blocks(s: Stack) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    cuda = safe.version(s.cuda, "cuda")
    if s.nccl:
        v = nccl_package_version(safe.version(s.nccl, "nccl"), cuda)
        out.append(("nccl", own.HeldPackages(packages={"libnccl2": v, "libnccl-dev": v},
                                             note=f"NCCL {v}, replacing and holding the base image's")))
    if s.cudnn:
        shipped = base_image_cudnn(s.base_image or "")
        if shipped is None or parse_version(shipped)[: len(parse_version(s.cudnn))] != parse_version(s.cudnn):
            v = cudnn_package_version(safe.version(s.cudnn, "cudnn"), cuda)
            major = s.cudnn.split(".")[0]
            note = f"cuDNN {v}" + (f" (the base image ships {shipped})" if shipped else "")
            out.append(("cudnn", own.HeldPackages(packages={f"libcudnn{major}": v, f"libcudnn{major}-dev": v},
                                                  note=note)))
    return out


def torch_blocks(s: Stack, o: RenderOptions, p: _Plan) -> list[tuple[str, object]]:
    """PyTorch: from the wheelhouse (an image build has no network to the PyTorch index), from the stack's
    index_url, from PyPI, or Debian's python3-torch (installed with the os packages)."""
    t = s.pytorch
    assert t is not None
    version = safe.version(t.version, "pytorch.version")
    variant = safe.version(t.variant or "cpu", "pytorch.variant")
    if p.framework.system_site_packages:
        return [("pytorch", own.note(f"PyTorch {version}: Debian's python3-torch (in the os packages), seen by the "
                                     "virtual environment"))]
    package = safe.pip_requirement(t.package or "torch", "pytorch.package")
    wheel = p.framework.wheel
    if wheel:
        how = f"from the wheelhouse ({safe.file_name(wheel, 'wheel')})"
        install = own.pip_install([f"{package}=={version}+{variant}"] if "+" in wheel
                                  else [f"{package}=={version}"], install_args=["--find-links", own.WHEELHOUSE])
        blocks: list[object] = [own.note(f"PyTorch {package} {version} ({variant}), {how}"),
                                own.copy_dir("wheelhouse", own.WHEELHOUSE), install]
    elif t.index_url:
        index = safe.url(t.index_url, "pytorch.index_url")
        blocks = [own.note(f"PyTorch {package} {version} ({variant}) from {index}"),
                  own.pip_install([f"{package}=={version}+{variant}"], install_args=["--extra-index-url", index])]
    else:
        blocks = [own.note(f"PyTorch {package} {version} from the package index"),
                  own.pip_install([f"{package}=={version}"])]
    return [("pytorch", blocks)]


def tensorflow_blocks(s: Stack, o: RenderOptions, p: _Plan) -> list[tuple[str, object]]:
    """TensorFlow: the pip package from the index, or a source-built wheel from the wheelhouse."""
    package = safe.pip_requirement(s.tensorflow.package or "tensorflow", "tensorflow.package")
    tf_version = safe.version(s.tensorflow.version, "tensorflow.version")
    if p.framework.copies_wheelhouse:
        tf = [own.note(f"TensorFlow {package} {tf_version}: a source build, from the wheelhouse (no index)"),
              own.copy_dir("wheelhouse", own.WHEELHOUSE),
              own.pip_install([f"{package}=={tf_version}"], install_args=["--no-index", "--find-links",
                                                                           own.WHEELHOUSE])]
    else:
        tf = [own.note(f"TensorFlow {package} {tf_version}"), own.pip_install([f"{package}=={tf_version}"])]
    return [("tensorflow", tf)]


def _python_stack_blocks(s: Stack, o: RenderOptions, p: _Plan) -> list[tuple[str, object]]:
    out = frameworks.of(s).image_blocks(s, p, o)  # the framework's own block
    if s.horovod is not None:
        copied = p.framework.copies_wheelhouse  # the framework's block copied the wheelhouse already
        out.append(("horovod", own.Horovod(
            version=s.horovod.version, gpu=s.gpu, gpu_operations=s.horovod.gpu_operations,
            with_mpi=s.horovod.with_mpi, with_gloo=s.horovod.with_gloo, wheel=p.hvd_wheel,
            copy_wheelhouse=bool(o.wheels) and not copied, find_links=bool(o.wheels),
            framework=frameworks.of(s).horovod_variable,
            commit=s.horovod.commit)))
    requirements = [*(WORKLOAD_REQUIREMENTS if parse_version(s.python) >= (3, 8) else ()),
                    *(safe.pip_requirement(r, f"packages.pip[{i}]") for i, r in enumerate(s.packages.pip))]
    if requirements:
        out.append(("pip packages", [own.note("pip packages: what the workloads import, then the stack's own"),
                                     own.pip_install(requirements)]))
    out += frameworks.of(s).late_blocks(s)  # after the pip packages (TensorFlow's: tf_cnn_benchmarks)
    return out


def building_blocks(stack: Stack, options: RenderOptions | None = None) -> list[tuple[str, object]]:
    """(name, block) for each block of the stack's image, in layer order (inside formats.settings)."""
    o = options or RenderOptions()
    s = stack
    p = _plan(s, o)
    image = safe.image_reference(o.base_image or s.base_image or f"{s.os.distro}:{s.os.version}", "base_image")
    bootstrap = safe.word(o.apptainer_bootstrap, "apptainer bootstrap")
    distro = formats.hpccm_distro(s.os.distro, s.os.version)
    blocks: list[tuple[str, object]] = [
        ("base", baseimage(image=image, _distro=distro, _arch="x86_64", _bootstrap=bootstrap)),
        ("preamble", own.Preamble(image_hash=_image_hash(s))),
        ("site", own.Site(ca_bundle="ca-bundle.crt" if o.ca_bundle else None, pip_index=o.pip_index,
                          extra_index=o.extra_index)),
        ("os packages", [own.note("os packages: what repro's own blocks need, then the stack's own"),
                         apt_get(ospackages=_os_packages(s, o, p))]),
    ]
    if s.gpu:
        blocks += _gpu_blocks(s, o)
    blocks += _mpi_blocks(s, p)
    if s.gpu and s.cuda:
        blocks += _cuda_library_blocks(s)
    blocks += _python_blocks(s, p)
    blocks += _python_stack_blocks(s, o, p)
    blocks += [("sshd", own.Sshd(port=s.container.ssh_port)), ("workloads", own.Workloads())]
    return blocks


def _image_hash(stack: Stack) -> str:
    from repro.manifest.canonical import image_hash

    return image_hash(stack)
