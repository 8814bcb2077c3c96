"""Which base images repro can make with debootstrap, and how: distributions, their releases and archives (pure).

repro.image.rootfs builds a recipe's root filesystem tarball; repro.image.base imports it into engines.
"""

from __future__ import annotations

import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from repro.errors import ImageError

DEFAULT_REF = "debian:12"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
VARIANT = "minbase"


@dataclass(frozen=True)
class Distribution:
    """A distribution debootstrap can install: its image repositories, releases, archive and keyring."""

    name: str
    repositories: tuple[str, ...]
    suites: dict[str, str]  # image tag (version or code name) -> suite
    mirror: str
    keyring: str | None = None  # checked Release signatures need it; None: debootstrap's default
    keyring_hint: str = ""
    components: tuple[str, ...] = ("main",)
    pockets: tuple[str, ...] = ()  # further suites in sources.list, e.g. "-updates", as the official image has
    revision: int = 1  # bump when this distribution's tarball is made differently (caches are keyed by it)


# Debian's own debootstrap (1.0.128 in bookworm) ships the scripts for Ubuntu releases too; the Ubuntu
# archive keys come in Debian's `ubuntu-keyring` package (bookworm-backports, trixie and later).
DISTRIBUTIONS = (
    Distribution("debian", ("debian", "library/debian", "docker.io/library/debian"),
                 {"12": "bookworm", "bookworm": "bookworm", "11": "bullseye", "bullseye": "bullseye"},
                 DEFAULT_MIRROR),
    Distribution("ubuntu", ("ubuntu", "library/ubuntu", "docker.io/library/ubuntu"),
                 {"16.04": "xenial", "xenial": "xenial", "18.04": "bionic", "bionic": "bionic",
                  "20.04": "focal", "focal": "focal", "22.04": "jammy", "jammy": "jammy"},
                 "http://archive.ubuntu.com/ubuntu", "/usr/share/keyrings/ubuntu-archive-keyring.gpg",
                 "apt-get install -t bookworm-backports ubuntu-keyring (Debian ships the Ubuntu archive keys in "
                 "bookworm-backports, trixie and later); the Ubuntu mirror must be reachable (--mirror)",
                 # the official ubuntu images enable all four components and the updates and security pockets
                 # (NVIDIA's CUDA recipes install gnupg2 from universe)
                 components=("main", "restricted", "universe", "multiverse"), pockets=("-updates", "-security"),
                 revision=2),
)
RECIPE_REVISION = 1  # bump when the tarball's making changes, so caches built the old way are not reused


@dataclass(frozen=True)
class BaseRecipe:
    """How one base image is made: the suite, debootstrap variant, mirror, keyring and architecture."""

    repository: str
    tag: str
    suite: str
    mirror: str = DEFAULT_MIRROR
    variant: str = VARIANT
    arch: str = "amd64"
    distro: str = "debian"
    keyring: str | None = None
    components: tuple[str, ...] = ("main",)
    pockets: tuple[str, ...] = ()
    revision: int = RECIPE_REVISION

    @property
    def ref(self) -> str:
        return f"{self.repository}:{self.tag}"

    @property
    def tarball_name(self) -> str:
        return f"{self.distro}-{self.suite}-{self.variant}-{self.arch}-r{self.revision}.tar"

    def debootstrap_argv(self, rootfs: Path) -> list[str]:
        """The debootstrap command line that builds this recipe's root filesystem into `rootfs`."""
        keyring = [f"--keyring={self.keyring}"] if self.keyring else []
        components = [f"--components={','.join(self.components)}"] if self.components != ("main",) else []
        return ["debootstrap", f"--variant={self.variant}", f"--arch={self.arch}", *keyring, *components, self.suite,
                str(rootfs), self.mirror]

    def sources_list(self) -> str | None:
        """/etc/apt/sources.list of the image when debootstrap's own (the release pocket only) is not it."""
        if not self.pockets:
            return None
        components = " ".join(self.components)
        return "".join(f"deb {self.mirror} {self.suite}{pocket} {components}\n" for pocket in ("", *self.pockets))

    def import_changes(self, tarball_sha256: str) -> list[str]:
        """Dockerfile instructions applied on import: the official image's CMD plus provenance labels."""
        return [
            'CMD ["bash"]',
            f"LABEL org.repro.base.suite={self.suite}",
            f"LABEL org.repro.base.variant={self.variant}",
            f"LABEL org.repro.base.mirror={self.mirror}",
            f"LABEL org.repro.base.rootfs-sha256={tarball_sha256}",
        ]


def split_ref(ref: str) -> tuple[str, str]:
    """Split an image reference into repository and tag ("latest" when none is given)."""
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:  # no tag, or the colon belonged to a registry host:port
        return ref, "latest"
    return name, tag


def _distribution(ref: str) -> Distribution | None:
    repository, tag = split_ref(ref)
    return next((d for d in DISTRIBUTIONS if repository in d.repositories and tag in d.suites), None)


def buildable(ref: str) -> bool:
    """Whether repro can make image `ref` with debootstrap (a Debian or Ubuntu release it knows)."""
    return _distribution(ref) is not None


def recipe_for(ref: str, *, mirror: str | None = None) -> BaseRecipe:
    """The recipe that builds `ref`; only Debian and Ubuntu releases debootstrap knows can be built."""
    repository, tag = split_ref(ref)
    dist = _distribution(ref)
    if dist is None:
        known = ", ".join(f"{d.name}:{t}" for d in DISTRIBUTIONS for t in d.suites if "." in t or t.isdigit())
        raise ImageError(
            f"image {ref} is not in the engine and repro cannot build it",
            hint=f"repro builds these base images with debootstrap: {known}; "
            "load any other base image into the engine first (docker load)",
        )
    return BaseRecipe(repository=repository, tag=tag, suite=dist.suites[tag], mirror=mirror or dist.mirror,
                      arch=_debian_arch(), distro=dist.name, keyring=dist.keyring, components=dist.components,
                      pockets=dist.pockets, revision=dist.revision)


def _debian_arch() -> str:
    try:
        out = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, timeout=10,
                             check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64el"}.get(platform.machine(), "amd64")
