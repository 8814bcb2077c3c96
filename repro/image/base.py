"""Base OS images without a registry: debootstrap a Debian root filesystem once, import it anywhere.

No image can be pulled on an air-gapped site (or on this project's CI machines), so the base image
stacks build `FROM` is made from Debian's archive: `debootstrap --variant=minbase SUITE ROOTFS
MIRROR`, packed into a tarball cached under `${XDG_CACHE_HOME:-~/.cache}/repro/base/` (built once per
machine and reused), then imported into a Docker engine as `debian:12`. `load_into` copies the
imported image into further engines (save -> load stream), so every host holds the same image id.

    python -m repro.image.base debian:12 [--docker-host URL ...]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import BackendUnavailable, ImageError, ReproError
from repro.image.engine import engine
from repro.image.engine import image_id as lookup_image

if TYPE_CHECKING:  # the docker SDK is imported only when an engine is used
    import docker

log = logging.getLogger(__name__)

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
_DEBOOTSTRAP_TIMEOUT_S = 1800
RECIPE_REVISION = 1  # bump when the tarball's making changes, so caches built the old way are not reused
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # /proc/self/mountinfo writes " " as \040


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


def cache_dir() -> Path:
    """Where base root filesystem tarballs are cached: ${XDG_CACHE_HOME:-~/.cache}/repro/base."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "repro" / "base"


def ensure_rootfs_tarball(recipe: BaseRecipe, cache: Path | None = None) -> tuple[Path, bool]:
    """Return the cached root filesystem tarball for `recipe` and whether it was built just now."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / recipe.tarball_name
    if tarball.is_file():
        log.info("base %s: reusing cached root filesystem %s", recipe.ref, tarball)
        return tarball, False
    # Two processes (two test sessions, two hosts' setups) may want the same tarball: build it once.
    with _locked(cache / ".lock"):
        if tarball.is_file():
            log.info("base %s: reusing cached root filesystem %s", recipe.ref, tarball)
            return tarball, False
        _build_tarball(recipe, tarball)
    return tarball, True


def ensure_base_image(ref: str = DEFAULT_REF, docker_host: str | None = None, *, mirror: str | None = None) -> str:
    """Return the id of image `ref` in the engine, importing it from a debootstrap tarball if absent."""
    client = engine(docker_host)
    try:
        existing = lookup_image(client, ref)
        if existing:
            log.info("base %s: already in engine %s (%s)", ref, _engine_name(docker_host), existing)
            return existing
        recipe = recipe_for(ref, mirror=mirror)
        tarball, _ = ensure_rootfs_tarball(recipe)
        digest = _read_digest(tarball)
        started = time.monotonic()
        try:
            client.api.import_image(
                src=str(tarball), repository=recipe.repository, tag=recipe.tag,
                changes=recipe.import_changes(digest),
            )
        except Exception as exc:  # docker.errors.* and connection errors alike
            raise ImageError(f"importing {tarball} as {ref} into {_engine_name(docker_host)} failed: {exc}") from exc
        image_id = lookup_image(client, ref)
        if not image_id:
            raise ImageError(f"engine {_engine_name(docker_host)} accepted the import of {ref} but does not list it")
        log.info("base %s: imported into %s in %.1f s (%s)", ref, _engine_name(docker_host),
                 time.monotonic() - started, image_id)
        return image_id
    finally:
        client.close()


def load_into(ref: str, docker_hosts: Sequence[str], source_host: str | None = None) -> dict[str, str]:
    """Copy image `ref` from the source engine into each engine of `docker_hosts`; return host -> id."""
    source = engine(source_host)
    try:
        source_id = lookup_image(source, ref)
        if not source_id:
            raise ImageError(f"image {ref} is not in the source engine {_engine_name(source_host)}",
                             hint="run ensure_base_image (python -m repro.image.base) on it first")
        loaded: dict[str, str] = {}
        for host in docker_hosts:
            loaded[host] = _load_one(source, source_id, ref, host)
        return loaded
    finally:
        source.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ensure `ref` in the first engine, then copy it into the others."""
    parser = argparse.ArgumentParser(prog="python -m repro.image.base", description=main.__doc__)
    parser.add_argument("ref", nargs="?", default=DEFAULT_REF, help="image reference (default %(default)s)")
    parser.add_argument("--docker-host", action="append", default=[], metavar="URL",
                        help="engine to hold the image (repeatable; default: DOCKER_HOST or the local engine)")
    parser.add_argument("--mirror", default=None, help="archive for debootstrap (default: the distribution's)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    hosts: list[str | None] = list(args.docker_host) or [None]
    # This is a command-line edge like repro.cli: it turns repro's errors into an exit status.
    try:
        first = hosts[0]
        ids = {first: ensure_base_image(args.ref, first, mirror=args.mirror)}
        rest = [h for h in hosts[1:] if h]
        ids.update(load_into(args.ref, rest, source_host=first))
    except ReproError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    for host, image_id in ids.items():
        print(f"{host or 'default'} {image_id}")
    return 0


# -- building the tarball -------------------------------------------------------------------------


def _build_tarball(recipe: BaseRecipe, tarball: Path) -> None:
    for tool in ("debootstrap", "tar"):
        if shutil.which(tool) is None:
            raise BackendUnavailable(f"{tool} is not installed; it is needed to build {recipe.ref}",
                                     hint=f"apt-get install -y {tool}")
    if recipe.keyring and not Path(recipe.keyring).is_file():
        dist = next(d for d in DISTRIBUTIONS if d.name == recipe.distro)
        raise BackendUnavailable(f"{recipe.keyring} is missing; debootstrap needs it to check {recipe.ref}'s archive",
                                 hint=dist.keyring_hint)
    if os.geteuid() != 0:
        raise ImageError(f"building {recipe.ref} with debootstrap needs root", hint="run as root once; "
                         f"the result is cached in {tarball.parent}")
    work = tarball.parent / f".build-{os.getpid()}"
    _remove_tree(work)
    work.mkdir(mode=0o700)
    rootfs = work / "rootfs"
    logfile = work / "debootstrap.log"
    started = time.monotonic()
    log.info("base %s: building %s with debootstrap from %s (about half a minute)",
             recipe.ref, recipe.suite, recipe.mirror)
    try:
        try:
            with logfile.open("wb") as out:
                proc = subprocess.run(recipe.debootstrap_argv(rootfs), stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, timeout=_DEBOOTSTRAP_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ImageError(f"debootstrap of {recipe.suite} took over {_DEBOOTSTRAP_TIMEOUT_S} s") from exc
        finally:
            _unmount_below(rootfs)  # debootstrap mounts /proc, /sys (and maybe /dev) in the target
        if proc.returncode != 0:
            tail = logfile.read_text(errors="replace").splitlines()[-15:]
            raise ImageError(f"debootstrap {recipe.suite} from {recipe.mirror} failed (exit {proc.returncode}):\n"
                             + "\n".join(tail), hint="is the mirror reachable? (--mirror selects another)")
        sources = recipe.sources_list()
        if sources:
            (rootfs / "etc" / "apt" / "sources.list").write_text(sources)
        partial = tarball.with_name(tarball.name + ".partial")
        _pack(rootfs, partial)
        digest = _sha256(partial)
        sidecar = tarball.with_name(tarball.name + ".sha256")
        sidecar.with_name(sidecar.name + ".partial").write_text(f"{digest}  {tarball.name}\n")
        os.replace(sidecar.with_name(sidecar.name + ".partial"), sidecar)
        os.replace(partial, tarball)  # atomic: readers see no tarball or a whole one
    finally:
        _remove_tree(work)
    log.info("base %s: built %s in %.0f s", recipe.ref, tarball, time.monotonic() - started)


def _pack(rootfs: Path, tarball: Path) -> None:
    # Device nodes, /proc and /sys contents belong to the runtime, not the image; package lists and
    # downloaded packages are stale the day after (Debian's own images leave them out too).
    argv = ["tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "--sort=name",
            "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*",
            "--exclude=./var/lib/apt/lists/*_*", "--exclude=./var/cache/apt/archives/*.deb",
            "-C", str(rootfs), "-cf", str(tarball), "."]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ImageError(f"packing {rootfs} took over 600 s") from exc
    if proc.returncode != 0:
        tarball.unlink(missing_ok=True)
        raise ImageError(f"packing {rootfs} into {tarball} failed: {proc.stderr.strip()}")


def _mounts_below(path: Path) -> list[str]:
    """Mount points at or below `path`, deepest first (from /proc/self/mountinfo)."""
    prefix = str(path.resolve()) if path.exists() else str(path)
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as info:
        for line in info:
            point = _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return sorted(found, key=len, reverse=True)


def _unmount_below(path: Path) -> None:
    for point in _mounts_below(path):
        if subprocess.run(["umount", point], capture_output=True, timeout=60, check=False).returncode:
            subprocess.run(["umount", "-l", point], capture_output=True, timeout=60, check=False)


def _remove_tree(path: Path) -> None:
    if not path.exists():
        return
    _unmount_below(path)
    left = _mounts_below(path)
    if left:  # never delete through a mount (it could be the machine's own /proc or /dev)
        raise ImageError(f"cannot remove {path}: still mounted there: {', '.join(left)}",
                         hint="unmount them by hand, then remove the directory")
    shutil.rmtree(path)


@contextlib.contextmanager
def _locked(lockfile: Path) -> Iterator[None]:
    with lockfile.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for chunk in iter(lambda: data.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _read_digest(tarball: Path) -> str:
    sidecar = tarball.with_name(tarball.name + ".sha256")
    if sidecar.is_file():
        return sidecar.read_text().split()[0]
    return _sha256(tarball)


def _debian_arch() -> str:
    try:
        out = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, timeout=10,
                             check=True)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64el"}.get(platform.machine(), "amd64")


# -- engines -------------------------------------------------------------------------------------


def _load_one(source: docker.DockerClient, source_id: str, ref: str, host: str) -> str:
    target = engine(host)
    try:
        if lookup_image(target, ref) == source_id:
            log.info("base %s: already in engine %s (%s)", ref, host, source_id)
            return source_id
        started = time.monotonic()
        try:
            for message in target.api.load_image(source.api.get_image(ref)):
                _raise_on_error(message, ref, host)
        except ImageError:
            raise
        except Exception as exc:  # docker.errors.* and broken streams alike
            raise ImageError(f"copying {ref} into engine {host} failed: {exc}") from exc
        loaded = lookup_image(target, ref)
        if loaded != source_id:
            raise ImageError(f"engine {host} holds {ref} as {loaded} after loading, expected {source_id}")
        log.info("base %s: loaded into %s in %.1f s", ref, host, time.monotonic() - started)
        return source_id
    finally:
        target.close()


def _raise_on_error(message: Any, ref: str, host: str) -> None:
    if isinstance(message, dict) and message.get("error"):
        raise ImageError(f"engine {host} refused {ref}: {message['error']}")


def _engine_name(docker_host: str | None) -> str:
    return docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


if __name__ == "__main__":
    sys.exit(main())
