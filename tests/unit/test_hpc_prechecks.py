"""The Apptainer and pyxis pre-checks look for the runtime's program on the nodes too, not only for the image file:
with the file there and the program absent, nothing is submitted (it used to fail later with status 127). Runs the
real checks on this machine as a local node (`apptainer` and `enroot` are not installed here)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repro.errors import LaunchError
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote
from repro.launch.runtimes.hpc import ApptainerRuntime, PyxisRuntime
from repro.manifest import load_stack
from repro.results.provenance import ImageLock, LockImage, LockSshd, LockStack

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("runtime", [ApptainerRuntime, PyxisRuntime])
def test_an_image_file_without_the_program_is_refused_before_submitting(tmp_path, runtime):
    if shutil.which(runtime.binary):
        pytest.skip(f"{runtime.binary} is installed here")
    stack = load_stack(ROOT / "stacks" / "cpu-tf215.yaml").stack
    lock = ImageLock(stack=LockStack(name="cpu-tf215", hash="h"), image=LockImage(tag="repro/cpu:1", id="sha256:0"),
                     sshd=LockSshd(port=50000), versions={})
    node = Host(name="node1", address="127.0.0.1", local=True, vars={runtime.images_var: str(tmp_path)})
    image = Path(runtime.image_file(node, lock.image.tag))
    image.write_bytes(b"an image file")  # the file is there: only the program is missing
    with pytest.raises(LaunchError) as exc:
        runtime(stack, lock).prepare([node], "mpi", via=Remote)
    assert f"node1: {runtime.binary}: not found" in exc.value.message and "nothing was submitted" in exc.value.message
    image.unlink()
    with pytest.raises(LaunchError) as exc:  # both missing: both said
        runtime(stack, lock).prepare([node], "mpi", via=Remote)
    assert runtime.binary in exc.value.message and "is not there" in exc.value.message
