"""repro's own building blocks, for what HPC Container Maker has no block for (pure).

Each is written in hpccm's style: a class whose versions and options are keyword arguments with one
documented default, composed of hpccm primitives (shell, environment, copy, label, comment, raw), so
`str(block)` renders it in whichever format `repro.image.blocks.formats.settings` selected. Values
are checked (repro.image.blocks.safe) when a block is made, never quoted after the fact.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from hpccm.building_blocks.base import bb_base
from hpccm.building_blocks.pip import pip
from hpccm.primitives import comment, copy, environment, label, raw, shell

from repro.image.blocks import safe

CHECK_BUILD_FILE = "/opt/repro/horovod-check-build.txt"  # `horovodrun --check-build` as the build saw it
SESSION_ENV = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV")
CA_PATH = "/etc/repro/ca-bundle.crt"
WHEELHOUSE = "/opt/repro/wheelhouse"  # not /tmp: Apptainer cannot stage %files there
PIP = "python -m pip"
HOROVOD_FRAMEWORKS = ("TENSORFLOW", "PYTORCH", "MXNET")  # HOROVOD_WITH_* / WITHOUT_* build variables, in order


def build_arg(name: str, value: str) -> raw:
    """A build-time variable: Docker ARG; in Apptainer an export at the start of %post."""
    return raw(docker=f"ARG {name}={value}", singularity=f'%post\n    export {name}="${{{name}:-{value}}}"')


def copy_dir(src: str, dest: str) -> raw:
    """Copy a context directory to `dest` (its contents become dest's contents in both formats)."""
    parent = posixpath.dirname(dest.rstrip("/"))
    return raw(docker=f"COPY {src}/ {dest}/",
               singularity=f"%setup\n    mkdir -p ${{SINGULARITY_ROOTFS}}{parent}\n%files\n    {src} {dest}")


def note(text: str) -> comment:
    """A one-line comment (hpccm's default re-wraps comments at 70 columns)."""
    return comment(text, reformat=False)


def pip_install(packages: list[str], *, python: str = PIP, install_args: list[str] | None = None) -> pip:
    """hpccm's pip block for an interpreter that already has pip (no distribution packages added)."""
    return pip(pip=python, ospackages=[], packages=packages, install_args=install_args or [])


def bash_pipefail() -> raw:
    """Docker RUN steps under bash with pipefail (Apptainer's %post runs under /bin/sh -e)."""
    return raw(docker='SHELL ["/bin/bash", "-o", "pipefail", "-c"]')


class Preamble(bb_base):
    """Provenance label, bash with pipefail for Docker RUN steps, a UTF-8 locale.

    image_hash: the stack's image hash, as label org.repro.image-hash. Default: empty.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.image_hash = safe.version(kwargs.get("image_hash", "unknown"), "image hash")
        self += label(metadata={"org.repro.image-hash": self.image_hash})
        self += bash_pipefail()
        self += environment(variables={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"})


class Site(bb_base):
    """Site build settings as build-time variables only: the image itself carries none of them.

    ca_bundle: a CA bundle file in the build context for pip, requests, curl and OpenSSL (behind a
    TLS-intercepting proxy). Default: none. pip_index, extra_index: pip indexes. Default: PyPI.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ca_bundle = kwargs.get("ca_bundle")
        self.pip_index = kwargs.get("pip_index")
        self.extra_index = kwargs.get("extra_index")
        self += note("site: build-time settings only (ARG, not ENV: the image itself carries none of them)")
        if self.ca_bundle:
            self += copy(src=safe.file_name(self.ca_bundle, "--ca-bundle"), dest=CA_PATH, _mkdir=True)
            for name in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
                self += build_arg(name, CA_PATH)
        if self.pip_index:
            self += build_arg("PIP_INDEX_URL", safe.url(self.pip_index, "--pip-index"))
        if self.extra_index:
            self += build_arg("PIP_EXTRA_INDEX_URL", safe.url(self.extra_index, "--extra-index"))
        self += build_arg("PIP_NO_CACHE_DIR", "1")
        self += build_arg("PIP_DISABLE_PIP_VERSION_CHECK", "1")


class HeldPackages(bb_base):
    """Distribution packages installed at exact versions and held (apt-mark hold).

    packages: {name: version}. note: what the comment says about them. Used for NCCL and cuDNN,
    which the nvidia/cuda base image's own repositories already provide (see docs/design.md).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.packages = {safe.apt_package(k, "package"): safe.version(v, f"{k} version")
                         for k, v in kwargs.get("packages", {}).items()}
        self += note(kwargs.get("note", "held packages"))
        pins = " ".join(f"{name}={v}" for name, v in self.packages.items())
        self += shell(commands=[
            "apt-get update -y",
            "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends --allow-downgrades "
            f"--allow-change-held-packages {pins}",
            f"apt-mark hold {' '.join(self.packages)}",
            "rm -rf /var/lib/apt/lists/*"])


class SignedAptRepository(bb_base):
    """An apt repository whose signing key is fetched, checked against a pinned fingerprint, kept in its
    own keyring and named by `signed-by` (hpccm's apt_get adds keys without checking them).

    name: the sources.list.d file name. url: the repository (a flat `URL /` repository). key_url: the
    key file. fingerprint: the key's 40-hex-digit fingerprint. keyring: where the dearmored key goes.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = safe.file_name(kwargs["name"], "repository name")
        self.url = safe.url(kwargs["url"], f"{self.name} repository")
        self.key_url = safe.url(kwargs["key_url"], f"{self.name} key")
        self.fingerprint = kwargs["fingerprint"]
        if not isinstance(self.fingerprint, str) or len(self.fingerprint) != 40 or not all(
                c in "0123456789ABCDEF" for c in self.fingerprint):
            raise safe._refuse(f"{self.name} key fingerprint", self.fingerprint, "40 upper-case hex digits")
        self.keyring = safe.path(kwargs["keyring"], f"{self.name} keyring")
        download = f"/var/tmp/{posixpath.basename(self.key_url)}"
        found = (f'"$(gpg --batch --no-default-keyring --keyring {self.keyring} --with-colons --fingerprint '
                 "| awk -F: '$1 == \"fpr\" {print $10; exit}')\"")
        self += note(f"apt repository {self.name}: key {self.fingerprint[-8:]} checked against its pinned "
                        "fingerprint, signed-by its own keyring")
        self += shell(commands=[
            f"curl -fsSL -o {download} {self.key_url}",
            f"mkdir -p {posixpath.dirname(self.keyring)}",
            f"gpg --batch --dearmor < {download} > {self.keyring}",
            f"if [ {found} != {self.fingerprint} ]; then echo 'the key at {self.key_url} is not "
            f"{self.fingerprint}' >&2; exit 1; fi",
            f'echo "deb [signed-by={self.keyring}] {self.url} /" > /etc/apt/sources.list.d/{self.name}.list',
            f"rm {download}"])


class MlnxOfedTarball(bb_base):
    """Mellanox OFED user space from the installer tarball (hpccm's mlnx_ofed uses the apt repository).

    version: default 4.7-3.2.9.0. oslabel: default ubuntu18.04. mirror: a mirror of
    https://content.mellanox.com/ofed with the same layout. url: the tarball's full URL. tarball: a
    tarball in the build context instead of a download.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.version = safe.version(kwargs.get("version", "4.7-3.2.9.0"), "ofed")
        self.oslabel = safe.version(kwargs.get("oslabel", "ubuntu18.04"), "ofed os label")
        mirror = safe.url(kwargs.get("mirror") or "https://content.mellanox.com/ofed", "--ofed-mirror").rstrip("/")
        self.url = kwargs.get("url") or (f"{mirror}/MLNX_OFED-{self.version}/"
                                         f"MLNX_OFED_LINUX-{self.version}-{self.oslabel}-x86_64.tgz")
        self.tarball = kwargs.get("tarball")
        self += note(f"Mellanox OFED {self.version} user space for {self.oslabel} from the installer tarball "
                        "(the hosts carry the kernel part)")
        if self.tarball:
            name = safe.file_name(self.tarball, "--ofed-tarball")
            # Docker's ADD unpacks the tarball without keeping it in a layer; Apptainer copies, then unpacks
            self += raw(docker=f"ADD {name} /opt/mofed/",
                        singularity=f"%setup\n    mkdir -p ${{SINGULARITY_ROOTFS}}/opt/mofed\n%files\n    {name} "
                        f"/opt/mofed/{name}\n%post\n    tar -xzf /opt/mofed/{name} -C /opt/mofed\n"
                        f"    rm /opt/mofed/{name}")
            fetch = []
        else:
            fetch = ["mkdir -p /opt/mofed", f"wget -q -O /opt/mofed/mofed.tgz {safe.url(self.url, '--ofed-url')}",
                     "tar -xzf /opt/mofed/mofed.tgz -C /opt/mofed", "rm /opt/mofed/mofed.tgz"]
        self += shell(commands=[
            *fetch, "cd /opt/mofed/MLNX_OFED_LINUX-*",
            "./mlnxofedinstall --user-space-only --without-fw-update --all --force -q",
            "cd /", "rm -rf /opt/mofed /var/lib/apt/lists/*"])


class PythonEnv(bb_base):
    """The image's Python made ready for pip: a virtual environment on PATH (Python 3), or the system
    Python with pip upgraded to the last release that supports it (Python 2).

    executable: default python3. venv: default /opt/repro/venv (None: no venv). bootstrap: the pip,
    setuptools and wheel pins. pythonpath: default /opt/repro (where the workloads are copied).
    system_site_packages: let the venv see the distribution's Python packages (Debian's python3-torch).
    Default False.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.executable = safe.file_name(kwargs.get("executable", "python3"), "python executable")
        self.venv = kwargs.get("venv", "/opt/repro/venv")
        self.bootstrap = [safe.pip_requirement(p, "pip bootstrap") for p in kwargs.get("bootstrap", ())]
        self.pythonpath = safe.path(kwargs.get("pythonpath", "/opt/repro"), "PYTHONPATH")
        self.system_site_packages = bool(kwargs.get("system_site_packages", False))
        if self.venv:
            venv = safe.path(self.venv, "venv")
            self += note(f"Python virtual environment {venv} on PATH")
            flag = " --system-site-packages" if self.system_site_packages else ""
            self += shell(commands=[f"{self.executable} -m venv{flag} {venv}"])
            self += pip_install(self.bootstrap, python=f"{venv}/bin/python -m pip", install_args=["--upgrade"])
            self += environment(variables={"VIRTUAL_ENV": venv, "PATH": f"{venv}/bin:$PATH",
                                           "PYTHONPATH": self.pythonpath})
        else:
            self += note("pip upgraded to the last release that supports this Python")
            self += pip_install(self.bootstrap, install_args=["--upgrade"])
            self += environment(variables={"PYTHONPATH": self.pythonpath})


class Horovod(bb_base):
    """Horovod built against the image's TensorFlow and MPI (hpccm has no Horovod block).

    version: default 0.28.1. gpu: link against the CUDA driver stub while building. gpu_operations:
    NCCL or MPI (None: CPU). with_mpi, with_gloo: default True. wheel: a matching wheel in the
    wheelhouse (no compiler needed). copy_wheelhouse: copy the wheelhouse here (not done already by a
    source-built TensorFlow). find_links: let pip look in the wheelhouse. framework: tensorflow (default) or
    pytorch, the one Horovod is built for. commit: build this commit of github.com/horovod/horovod (cloned with
    its submodules) instead of the release; a wheel in the wheelhouse still comes first.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.version = safe.version(kwargs.get("version", "0.28.1"), "horovod.version")
        self.gpu = bool(kwargs.get("gpu", False))
        self.gpu_operations = kwargs.get("gpu_operations")
        self.with_mpi = bool(kwargs.get("with_mpi", True))
        self.with_gloo = bool(kwargs.get("with_gloo", True))
        self.wheel = kwargs.get("wheel")
        self.copy_wheelhouse = bool(kwargs.get("copy_wheelhouse", False))
        self.find_links = bool(kwargs.get("find_links", False))
        self.framework = kwargs.get("framework", "TENSORFLOW")  # HOROVOD_WITH_<framework>
        self.commit = kwargs.get("commit")
        if self.gpu_operations not in (None, "NCCL", "MPI"):
            raise safe._refuse("horovod.gpu_operations", self.gpu_operations, "NCCL or MPI")
        if self.framework not in HOROVOD_FRAMEWORKS:
            raise safe._refuse("horovod framework", self.framework, " or ".join(HOROVOD_FRAMEWORKS))
        if self.commit is not None and not re.fullmatch("[0-9a-f]{40}", str(self.commit)):
            raise safe._refuse("horovod.commit", self.commit, "40 lower-case hex digits")
        source = f"commit {self.commit[:12]}" if self.commit else "source"
        how = f"from the wheelhouse ({safe.file_name(self.wheel, 'wheel')})" if self.wheel else f"built from {source}"
        self += note(f"Horovod {self.version}, {how}")
        if self.copy_wheelhouse:
            self += copy_dir("wheelhouse", WHEELHOUSE)
        links = f" --find-links {WHEELHOUSE}" if self.find_links else ""
        what = f"horovod=={self.version}"
        fetch: list[str] = []
        if self.commit and not self.wheel:
            fetch = ["git clone --recursive https://github.com/horovod/horovod.git /var/tmp/horovod",
                     f"git -C /var/tmp/horovod checkout {self.commit}",
                     "git -C /var/tmp/horovod submodule update --init --recursive"]
            what = "/var/tmp/horovod"
        install = f"{' '.join(self.env_lines)} {PIP} --no-cache-dir install --no-build-isolation{links} {what}"
        built = [*fetch, install, *(["rm -rf /var/tmp/horovod"] if fetch else [])]
        commands = ["ldconfig /usr/local/cuda/lib64/stubs", *built, "ldconfig"] if self.gpu else built
        if self.check_build:
            commands += [f"mkdir -p {posixpath.dirname(CHECK_BUILD_FILE)}",
                         f"horovodrun --check-build > {CHECK_BUILD_FILE}", f"cat {CHECK_BUILD_FILE}"]
        self += shell(commands=commands)

    @property
    def check_build(self) -> bool:
        """horovodrun appeared in 0.16."""
        return _vtuple(self.version) >= (0, 16)

    @property
    def env_lines(self) -> tuple[str, ...]:
        """The HOROVOD_* build variables this version understands."""
        v = _vtuple(self.version)
        out = [f"HOROVOD_{'WITH' if f == self.framework else 'WITHOUT'}_{f}=1" for f in HOROVOD_FRAMEWORKS]
        if v >= (0, 17):  # HOROVOD_WITH_MPI / WITH_GLOO first appeared in 0.17.0
            out.append(f"HOROVOD_{'WITH' if self.with_mpi else 'WITHOUT'}_MPI=1")
            out.append(f"HOROVOD_{'WITH' if self.with_gloo else 'WITHOUT'}_GLOO=1")
        if self.gpu_operations:
            # HOROVOD_GPU_OPERATIONS arrived in 0.20 (#1960); before it, each operation had its own variable
            if v >= (0, 20):
                out.append(f"HOROVOD_GPU_OPERATIONS={self.gpu_operations}")
            else:
                out += [f"HOROVOD_GPU_ALLREDUCE={self.gpu_operations}", f"HOROVOD_GPU_BROADCAST={self.gpu_operations}"]
        return tuple(out)


class TfCnnBenchmarks(bb_base):
    """tensorflow/benchmarks at one commit, for the tf_cnn_benchmarks workload of TF 1.x stacks.

    branch, commit: default the cnn_tf_v1.14_compatible head. prefix: default /opt/tf_benchmarks.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.branch = safe.version(kwargs.get("branch", "cnn_tf_v1.14_compatible"), "tf_cnn_benchmarks branch")
        self.commit = safe.version(kwargs.get("commit", "aef6daa90a467a1fc7ce8395cd0067e5fda1ecff"),
                                   "tf_cnn_benchmarks commit")
        self.prefix = safe.path(kwargs.get("prefix", "/opt/tf_benchmarks"), "tf_cnn_benchmarks prefix")
        self.url = f"https://github.com/tensorflow/benchmarks/archive/{self.commit}.tar.gz"
        self.script = f"{self.prefix}/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"
        archive = f"{self.prefix}.tar.gz"
        self += note(f"tf_cnn_benchmarks: tensorflow/benchmarks branch {self.branch} at {self.commit[:12]}")
        self += shell(commands=[f"wget -q -O {archive} {self.url}", f"mkdir -p {self.prefix}",
                                f"tar -xzf {archive} --strip-components=1 -C {self.prefix}", f"rm {archive}",
                                f"test -f {self.script}"])
        self += label(metadata={"org.repro.tf-benchmarks.commit": self.commit})
        self += environment(variables={"REPRO_TF_CNN_BENCHMARKS": self.script})


class Sshd(bb_base):
    """The container's sshd for multi-node launch (seed 003's `sshd -p 50000`): key-only root login,
    host keys made once for this image (repro records them in the lock), the image's environment
    for ssh sessions.

    port: default 50000.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.port = safe.port(kwargs.get("port", 50000))
        config = (f"Port {self.port}", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                  "ChallengeResponseAuthentication no", "PubkeyAuthentication yes", "UsePAM yes",
                  "X11Forwarding no", "PrintMotd no", "AcceptEnv LANG LC_*",
                  "Subsystem sftp /usr/lib/openssh/sftp-server")
        self += note(f"sshd on port {self.port}: key-only root login, host keys made once for this image")
        self += shell(commands=[
            "mkdir -p /run/sshd /root/.ssh", "chmod 700 /root/.ssh", "rm -f /etc/ssh/ssh_host_*", "ssh-keygen -A",
            f"echo '{config[0]}' > /etc/ssh/sshd_config",
            *(f"echo '{line}' >> /etc/ssh/sshd_config" for line in config[1:]),
            r"sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' /etc/pam.d/sshd",
            f"env | grep -E '^({'|'.join(SESSION_ENV)})=' > /etc/environment"])
        self += raw(docker=f'EXPOSE {self.port}\nCMD ["/usr/sbin/sshd", "-D", "-e"]',
                    singularity="%startscript\n    exec /usr/sbin/sshd -D -e")


class Workloads(bb_base):
    """repro's benchmark programs (repro/workloads), last because they change most often.

    prefix: default /opt/repro (the package lands in prefix/repro).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prefix = safe.path(kwargs.get("prefix", "/opt/repro"), "workloads prefix")
        self += note("workloads: repro's benchmark programs, last because they change most often")
        self += copy_dir("repro", f"{self.prefix}/repro")


def _vtuple(text: str) -> tuple[int, ...]:
    from repro.manifest.versions import parse_version

    return tuple(parse_version(text))
