"""Archive checking (pure, no engine): any changed, missing or extra member is refused before loading.

The archives here are small, written member by member in repro's format; tests/integration/test_image.py
archives and restores a real image.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.image import archive
from repro.image.archive import check_archive

MEMBERS = {archive.LOCK: b'{"image": {"id": "sha256:abc"}}\n', archive.STACK: b'{"name": "s"}\n',
           archive.DOCKERFILE: b"FROM debian:12\n", archive.IMAGE: b"not really an image" * 1000}


def manifest_of(path: Path) -> dict:
    with tarfile.open(path) as tar:
        return json.loads(tar.extractfile(archive.MANIFEST).read())


def write(path: Path, members: dict[str, bytes], *, manifest: dict | None = None, extra: dict | None = None) -> Path:
    manifest = manifest or {"format": archive.FORMAT, "stack": {"name": "s", "hash": "h"},
                            "image": {"tag": "t", "id": "sha256:abc"},
                            "members": {name: archive._digest(data) for name, data in members.items()}}
    with tarfile.open(path, "w") as tar:
        for name, data in [(archive.MANIFEST, json.dumps(manifest).encode()), *members.items(),
                           *(extra or {}).items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_intact_archive_passes_and_gives_the_small_members(tmp_path):
    manifest, small = check_archive(write(tmp_path / "a.tar", MEMBERS))
    assert manifest["image"]["id"] == "sha256:abc"
    assert small == {k: v for k, v in MEMBERS.items() if k != archive.IMAGE}  # the image is only hashed


@pytest.mark.parametrize("member", list(MEMBERS))
def test_one_changed_byte_in_any_member_is_refused_by_name(tmp_path, member):
    path = write(tmp_path / "a.tar", MEMBERS)
    manifest = manifest_of(path)
    changed = dict(MEMBERS)
    data = bytearray(changed[member])
    data[len(data) // 2] ^= 0x01
    changed[member] = bytes(data)
    path = write(tmp_path / "b.tar", changed, manifest=manifest)
    with pytest.raises(InputError, match=rf"damaged or was changed: member {member} has sha256"):
        check_archive(path)


def test_missing_and_extra_members_are_refused(tmp_path):
    manifest = manifest_of(write(tmp_path / "a.tar", MEMBERS))
    fewer = {k: v for k, v in MEMBERS.items() if k != archive.DOCKERFILE}
    with pytest.raises(InputError, match="member Dockerfile is missing"):
        check_archive(write(tmp_path / "b.tar", fewer, manifest=manifest))
    with pytest.raises(InputError, match=r"member evil\.sh is not in the manifest"):
        check_archive(write(tmp_path / "c.tar", MEMBERS, manifest=manifest, extra={"evil.sh": b"id\n"}))
    with pytest.raises(InputError, match=r"unexpected member 'lock\.json'"):
        check_archive(write(tmp_path / "d.tar", MEMBERS, manifest=manifest, extra={archive.LOCK: b"{}"}))


def test_not_an_archive_or_a_foreign_manifest_is_refused(tmp_path):
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(InputError, match="damaged or was changed"):
        check_archive(junk)
    with pytest.raises(InputError, match=r"is not a repro\.archive/1 manifest"):
        check_archive(write(tmp_path / "e.tar", MEMBERS, manifest={"format": "other", "members": {}}))
    truncated = tmp_path / "t.tar"
    truncated.write_bytes(write(tmp_path / "f.tar", MEMBERS).read_bytes()[:3000])
    with pytest.raises(InputError, match="damaged or was changed"):
        check_archive(truncated)
