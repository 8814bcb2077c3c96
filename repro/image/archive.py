"""Archives that restore: a built stack image with its lock, resolved manifest and recipe in one file.

    repro-archive.json   format, stack, image tag and id, and the sha256 and size of every other member
    lock.json            the stack's lock (what `repro up` verified inside the image)
    stack.json           the resolved stack manifest
    Dockerfile           the rendered recipe the image was built from (base.Dockerfile: a rebuilt base's)
    image.tar            `docker save` of the image

`repro restore` (repro.pipeline.restore) refuses an archive whose members differ from its manifest (any
byte changed, a member missing or added) before anything is loaded (`read_archive`); then it loads the
image into an engine (`load_image`), checks its id against the lock, runs the verification probe and
compares what it finds with the lock (`compare_with_lock`), and puts the lock and the manifest into the
store, so `repro bench` runs from the image with no build or network.
A stack whose base and packages have vanished upstream stays measurable from its archive.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import yaml

from repro import files
from repro.errors import ImageError, InputError, VerificationError
from repro.image import verify
from repro.image.engine import engine, image_id
from repro.progress import Lines, silent
from repro.results.provenance import ImageLock
from repro.secrets import is_redacted, redact_tree

if TYPE_CHECKING:
    import docker

    from repro.image.verify import ImageProbe
    from repro.manifest import LoadedStack
    from repro.manifest.schema import Stack
    from repro.results.store import Store

FORMAT = "repro.archive/1"
MANIFEST, LOCK, STACK, DOCKERFILE, BASE_DOCKERFILE, IMAGE = (
    "repro-archive.json", "lock.json", "stack.json", "Dockerfile", "base.Dockerfile", "image.tar")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class ArchiveResult:
    """What `repro archive` wrote."""

    path: Path
    stack: str
    stack_hash: str
    tag: str
    image_id: str
    members: dict[str, dict[str, Any]]

    @property
    def size(self) -> int:
        return self.path.stat().st_size


# -- writing ---------------------------------------------------------------------------------------


def _digest(data: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()


def _save(client: docker.DockerClient, tag: str, into: IO[bytes]) -> dict[str, Any]:
    digest, size = hashlib.sha256(), 0
    for chunk in client.api.get_image(tag, chunk_size=_CHUNK):
        into.write(chunk)
        digest.update(chunk)
        size += len(chunk)
    into.flush()
    return {"sha256": digest.hexdigest(), "size": size}


def _add(tar: tarfile.TarFile, name: str, size: int, data: IO[bytes]) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    tar.addfile(info, data)


def write_archive(loaded: LoadedStack, store: Store, out: Path, *, docker_host: str | None = None,
                  progress: Lines = silent) -> ArchiveResult:
    """Write the stack's locked image, lock, resolved manifest and recipe into `out` (atomically)."""
    from repro.image.lock import read_lock

    lock = read_lock(store, loaded)
    tag, want = lock.image.tag, lock.image.id
    recipe = lock.recipe
    if recipe is None or not recipe.dockerfile:
        raise ImageError(f"the lock of {loaded.stack.name} predates recorded recipes; run `repro up {loaded.file}` "
                         "again (it re-verifies and records the recipe) before archiving")
    small = {LOCK: _json(lock.model_dump(mode="json")),
             STACK: _json(redact_tree(loaded.stack.model_dump(mode="json"))),
             DOCKERFILE: recipe.dockerfile.encode()}
    if recipe.base_dockerfile:
        small[BASE_DOCKERFILE] = recipe.base_dockerfile.encode()
    client = engine(docker_host)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        found = image_id(client, tag)
        if found != want:
            raise ImageError(f"the engine holds {tag} as {found or 'nothing'}, but the lock says {want}",
                             hint=f"run `repro up {loaded.file}` (against this engine) first")
        with tempfile.TemporaryFile(dir=out.parent) as image:
            progress(f"saving {tag} ({want[:19]})")
            members = {name: _digest(data) for name, data in small.items()}
            members[IMAGE] = _save(client, tag, image)
            manifest = {"format": FORMAT, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        "stack": {"name": loaded.stack.name, "hash": loaded.hash, "image_hash": loaded.image_hash},
                        "image": {"tag": tag, "id": want}, "members": members}
            partial = out.with_name(out.name + ".partial")
            with tarfile.open(partial, "w") as tar:
                head = _json(manifest)
                _add(tar, MANIFEST, len(head), _BytesReader(head))
                for name, data in small.items():
                    _add(tar, name, len(data), _BytesReader(data))
                image.seek(0)
                _add(tar, IMAGE, members[IMAGE]["size"], image)
            os.replace(partial, out)
    finally:
        client.close()
    return ArchiveResult(out, loaded.stack.name, loaded.hash, tag, want, members)


class _BytesReader:
    """A minimal file object over bytes (tarfile.addfile reads from it)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self.data) if n < 0 else self.at + n
        chunk, self.at = self.data[self.at:end], min(end, len(self.data))
        return chunk


# -- checking --------------------------------------------------------------------------------------


def _tampered(path: Path, what: str) -> InputError:
    return InputError(f"archive {path} is damaged or was changed: {what}; nothing was restored",
                      hint="make a new archive with `repro archive` from the original image")


def check_archive(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and small members of an archive whose every member matches its manifest.

    InputError (a clear "damaged or changed") for a member whose sha256 or size differs, a missing or an
    extra member, or an unreadable file. Reads the whole archive once; loads nothing.
    """
    try:  # a FIFO or a device would block tarfile, or feed it for ever: only a regular file is an archive
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(f"{path}: cannot read the archive ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: not a regular file (a directory, a device, a named pipe or a socket): "
                         "not an archive")
    try:
        files.regular_file(path)  # a FIFO or a device would block tarfile, or never end
    except files.FileProblem as exc:
        raise InputError(f"{path}: {exc}; an archive is a regular file") from None
    try:
        with tarfile.open(path, "r:") as tar:
            manifest: dict[str, Any] | None = None
            seen: dict[str, dict[str, Any]] = {}
            small: dict[str, bytes] = {}
            for member in tar:
                if not member.isfile() or member.name in seen or (member.name == MANIFEST and manifest):
                    raise _tampered(path, f"unexpected member {member.name!r}")
                handle = tar.extractfile(member)
                if member.name == MANIFEST:
                    manifest = _manifest(path, handle.read())
                    continue
                digest, size, data = hashlib.sha256(), 0, []
                for chunk in iter(lambda h=handle: h.read(_CHUNK), b""):
                    digest.update(chunk)
                    size += len(chunk)
                    if member.name != IMAGE:
                        data.append(chunk)
                seen[member.name] = {"sha256": digest.hexdigest(), "size": size}
                if member.name != IMAGE:
                    small[member.name] = b"".join(data)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise _tampered(path, f"not a readable archive ({exc})") from None
    if manifest is None:
        raise _tampered(path, f"no {MANIFEST}")
    want = manifest["members"]
    for name in sorted(set(want) | set(seen)):
        if name not in seen:
            raise _tampered(path, f"member {name} is missing")
        if name not in want:
            raise _tampered(path, f"member {name} is not in the manifest")
        if seen[name] != want[name]:
            raise _tampered(path, f"member {name} has sha256 {seen[name]['sha256'][:16]}… ({seen[name]['size']} "
                            f"bytes), the manifest says {want[name]['sha256'][:16]}… ({want[name]['size']} bytes)")
    return manifest, small


def _manifest(path: Path, data: bytes) -> dict[str, Any]:
    try:
        manifest = json.loads(data)
    except ValueError:
        raise _tampered(path, f"{MANIFEST} is not JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(
            manifest.get("members"), dict) or not {LOCK, STACK, DOCKERFILE, IMAGE} <= set(manifest["members"]):
        raise _tampered(path, f"{MANIFEST} is not a {FORMAT} manifest")
    return manifest


# -- restoring -------------------------------------------------------------------------------------


def _image_stream(path: Path) -> Iterator[bytes]:
    with tarfile.open(path, "r:") as tar:
        handle = tar.extractfile(tar.getmember(IMAGE))
        yield from iter(lambda: handle.read(_CHUNK), b"")


def _consistent(path: Path, manifest: dict[str, Any], lock: ImageLock, stack: Stack) -> None:
    from repro.manifest.canonical import stack_hash

    if lock.image.id != manifest["image"]["id"] or lock.image.tag != manifest["image"]["tag"]:
        raise _tampered(path, "the lock names another image than the manifest")
    # a manifest whose secrets were redacted when archived cannot hash to the original: then the manifest and
    # the lock (both checksummed members) must still agree on the hash
    redacted = is_redacted(json.dumps(stack.model_dump(mode="json")))
    if (not redacted and stack_hash(stack) != lock.stack.hash) or manifest["stack"]["hash"] != lock.stack.hash:
        raise _tampered(path, "the stack manifest does not hash to the lock's stack hash")


def compare_with_lock(stack: Stack, found: ImageProbe, lock: ImageLock, tag: str) -> None:
    """VerificationError where a restored image differs from its stack or from the lock the archive holds."""
    verify.check(stack, found, tag=tag)
    differences = []
    # the lock was stored redacted (a token in a pip URL): compare what was found, redacted the same way
    for key, now, locked in (("versions", found.versions, lock.versions),
                             ("horovod_build", found.horovod_build, lock.horovod_build),
                             ("pip_freeze", list(found.pip_freeze), lock.pip_freeze)):
        if redact_tree(now) != locked:
            differences.append(key)
    if sorted(found.ssh_host_keys) != sorted(lock.sshd.host_keys):
        differences.append("sshd host keys")
    if differences:
        raise VerificationError(f"the restored image {tag} differs from its lock in: {', '.join(differences)}")


def read_archive(path: Path) -> tuple[ImageLock, Stack]:
    """The lock and resolved stack of an archive whose members match its manifest and agree with each other;
    InputError ("damaged or changed") otherwise. Loads nothing."""
    from repro.manifest.schema import sync_sections

    manifest, small = check_archive(path)
    try:
        lock = ImageLock.model_validate(json.loads(small[LOCK]))
        stack = sync_sections().model_validate(json.loads(small[STACK]))
    except ValueError as exc:  # not JSON, or not a lock / stack (pydantic's ValidationError is a ValueError)
        raise _tampered(path, f"its lock or stack is not readable ({str(exc).splitlines()[0][:200]})") from None
    _consistent(path, manifest, lock, stack)
    return lock, stack


def load_image(client: docker.DockerClient, path: Path, lock: ImageLock, progress: Lines) -> bool:
    """Load the archive's image into the engine unless it holds the lock's image id already (then False);
    VerificationError when the engine does not hold the lock's image afterwards."""
    tag, want = lock.image.tag, lock.image.id
    loaded = image_id(client, tag) != want
    if loaded:
        progress(f"loading {tag} ({want[:19]}) into the engine")
        try:
            for message in client.api.load_image(_image_stream(path)):
                if isinstance(message, dict) and message.get("error"):
                    raise ImageError(f"the engine refused the image of {path}: {message['error']}")
        except ImageError:
            raise
        except Exception as exc:  # docker.errors.APIError and broken streams alike
            raise ImageError(f"loading the image of {path} failed: {exc}") from None
    found_id = image_id(client, tag)
    if found_id != want:
        raise VerificationError(f"after loading, {tag} is {found_id or 'absent'} in the engine, "
                                f"the lock says {want}")
    return loaded


def restored_stack_text(stack: Stack, lock: ImageLock, path: Path) -> str:
    """The restored stack's manifest file: the resolved stack, saying which archive it came from."""
    return (f"# Restored by repro from {path.name} (stack hash {lock.stack.hash}).\n"
            + yaml.safe_dump(stack.model_dump(mode="json"), sort_keys=False))
