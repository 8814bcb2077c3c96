"""Where a store's index lives, and the listing of its record files that a sync compares with the index.

The index sits at the store's root unless the store is on a network filesystem (SQLite's locking cannot be
trusted there) or $REPRO_INDEX_DIR names a directory; a store the user cannot write to keeps it in the user's
cache directory (repro.results.index picks among these).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

INDEX_NAME = "index.sqlite"
NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs",
                       "fuse.sshfs", "fuse.glusterfs", "9p", "afs", "panfs", "wekafs")

Signature = tuple[int, int, int]  # size, mtime_ns, inode


def mount_type(path: Path) -> str:
    """The filesystem type of the mount holding `path` ("" when unknown)."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            mounts = [line.split()[1:3] for line in fh if len(line.split()) > 2]
    except OSError:
        return ""
    target = str(path.resolve())
    best, kind = "", ""
    for point, fstype in mounts:
        point = point.replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def cache_dir() -> Path:
    """The per-user directory of indexes kept away from their stores."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "repro" / "index"


def index_path(root: Path) -> Path:
    """Where the index of the store at `root` lives (see the module's docstring)."""
    name = cache_name(root)
    if os.environ.get("REPRO_INDEX_DIR"):
        return Path(os.environ["REPRO_INDEX_DIR"]) / name
    if mount_type(root) in NETWORK_FILESYSTEMS:
        return cache_dir() / name
    return root / INDEX_NAME


def writable(path: Path) -> bool:
    """Whether an index file can be made or opened for writing at `path` (its folder made if missing)."""
    folder = path.parent
    if not folder.is_dir():
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    return not path.exists() or os.access(path, os.R_OK | os.W_OK)


def create_empty(path: Path) -> None:
    """An empty file, only where none is: closing a descriptor of a database this process has open would drop
    SQLite's POSIX locks on it, and another process could then delete the WAL files under it."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666))


def cache_name(root: Path) -> str:
    """The file name of the index of the store at `root` when kept away from it: its name and path digest."""
    resolved = root.resolve()
    return f"{resolved.name or 'store'}-{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}.sqlite"



def listing(path: str) -> dict[str, Signature]:
    """Record files of one directory: name -> (size, mtime_ns, inode); hidden and temporary files left out."""
    out: dict[str, Signature] = {}
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".json") and not name.startswith("."):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode):
                        out[name] = (st.st_size, st.st_mtime_ns, st.st_ino)
    except FileNotFoundError:
        pass
    return out


def listing_digest(files: dict[str, Signature]) -> str:
    """One value for a directory's listing: equal digests, same files with the same signatures."""
    return hashlib.sha1(repr(sorted(files.items())).encode(), usedforsecurity=False).hexdigest()


def scandir(path: Path) -> Iterator[os.DirEntry]:
    """The entries of a directory; none when it is gone."""
    try:
        with os.scandir(path) as it:
            yield from it
    except FileNotFoundError:
        return
