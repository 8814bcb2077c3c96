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


def test_a_long_conversion_shows_its_output_as_it_comes():
    """ch-convert's lines reach the progress while it runs (a TensorFlow image takes minutes), not at the end."""
    import sys
    import time

    from repro.launch.runtimes.charliecloud import run_streaming

    seen: list[tuple[float, str]] = []
    script = ("import time\nfor i in range(3):\n    print(f'layer {i}', flush=True)\n    time.sleep(0.3)\n"
              "raise SystemExit(3)")
    began = time.monotonic()
    code, tail = run_streaming([sys.executable, "-c", script], {}, 30, lambda line: seen.append(
        (time.monotonic() - began, line)))
    assert code == 3 and [text for _, text in seen] == ["layer 0", "layer 1", "layer 2"] and "layer 2" in tail
    assert seen[0][0] < seen[-1][0] - 0.3  # the first line came before the program ended
    code, _ = run_streaming([sys.executable, "-c", "import time; time.sleep(30)"], {}, 0.5, seen.append)
    assert code == -9  # killed at the time limit
