"""The CPU PyTorch stack for real: `repro up` builds stacks/cpu-torch213.yaml with the torch wheel from pip's
find-links (an image build has no network to the PyTorch index), verifies what torch reports inside it, locks it;
`repro capture --image` writes that image's stack back, and it validates.

The image is built once per session (minutes; skipped when the engine has its tag)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.fixtures import skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
TORCH_STACK = ROOT / "stacks" / "cpu-torch213.yaml"


@pytest.fixture(scope="session")
def torch_cpu_image(base_image: str, tmp_path_factory: pytest.TempPathFactory):
    """stacks/cpu-torch213.yaml built (unless the engine has its tag), verified and locked: (UpResult, Store)."""
    from repro.errors import ImageError
    from repro.image.build import BuildOptions, default_ca_bundle, torch_wheels, wheelhouse_dir
    from repro.manifest import load_stack
    from repro.pipeline.up import up
    from repro.results.store import Store

    loaded = load_stack(TORCH_STACK)
    if not torch_wheels(loaded.stack, wheelhouse_dir(loaded.stack)):
        skip_or_fail("no torch 2.13.0 CPU wheel in the wheelhouse or pip's find-links (CI machines keep it in "
                     "/opt/wheels)")
    store = Store(tmp_path_factory.mktemp("torch-image-store"))
    try:
        result = up(loaded, store=store, options=BuildOptions(ca_bundle=default_ca_bundle()),
                    progress=lambda line: None)
    except ImageError as exc:
        pytest.fail(exc.render())
    return result, store


def test_the_cpu_torch_image_is_verified_and_locked_with_what_torch_reports(torch_cpu_image):
    result, store = torch_cpu_image
    lock = store.lock(result.lock.stack.hash)
    assert lock is not None and lock.image.id == result.outcome.image_id
    assert lock.versions["torch"] == "2.13.0+cpu" and lock.versions["torch_cuda"] is None
    assert "gloo" in lock.versions["torch_backends"].split(",")
    assert lock.versions.get("horovod") is None and any(p.startswith("torch==2.13.0") for p in lock.pip_freeze)


def test_capture_of_the_image_gives_back_a_valid_torch_stack(torch_cpu_image, tmp_path):
    from repro.manifest import load_stack
    from repro.pipeline.capture import capture, probe_image

    result, _ = torch_cpu_image
    out = tmp_path / "captured.yaml"
    captured = capture(software=probe_image(result.outcome.tag), name="captured", output=out,
                       source=f"image {result.outcome.tag}")
    assert not captured.errors
    stack = load_stack(out).stack
    pinned = load_stack(TORCH_STACK).stack
    assert (stack.pytorch.version, stack.pytorch.variant, stack.python, stack.mpi) == \
        (pinned.pytorch.version, pinned.pytorch.variant, pinned.python, pinned.mpi)
