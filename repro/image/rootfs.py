"""A base image's root filesystem: debootstrap it once per machine, pack it into a cached tarball.

The tarball is cached under `${XDG_CACHE_HOME:-~/.cache}/repro/base/`, keyed by the recipe (repro.image.base_recipe),
built under a lock so that two processes build it once, and written atomically with a sha256 sidecar.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from repro.errors import BackendUnavailable, ImageError
from repro.image.base_recipe import DISTRIBUTIONS, BaseRecipe

log = logging.getLogger(__name__)

_DEBOOTSTRAP_TIMEOUT_S = 1800
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # /proc/self/mountinfo writes " " as \040


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


def read_digest(tarball: Path) -> str:
    """The tarball's sha256, from its sidecar when it has one."""
    sidecar = tarball.with_name(tarball.name + ".sha256")
    if sidecar.is_file():
        return sidecar.read_text().split()[0]
    return _sha256(tarball)
