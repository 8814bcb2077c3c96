"""`repro render`, `archive`, `base-image`: a stack (or a base image reference) -> the image stage -> a typed result.

`repro up` is repro.pipeline.up's and `repro restore` repro.pipeline.restore's; these are the image commands that
chain no more than loading, planning and one image step, kept together here so that the CLI calls one function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro.image.archive import ArchiveResult, write_archive
from repro.image.build import BuildOptions
from repro.manifest import load_stack
from repro.progress import Lines, silent
from repro.results.store import Store

__all__ = ["ArchiveResult", "BaseImages", "BuildOptions", "archive_stack", "base_images", "render_recipe"]


def render_recipe(stack: str | Path, options: BuildOptions, *, pip_cert: bool = True, apptainer: bool = False,
                  base: bool = False) -> str:
    """The stack's Dockerfile (Apptainer definition with `apptainer`; with `base`, the recipe of the end-of-life
    nvidia/cuda base repro rebuilds), secrets redacted."""
    from repro.image import cuda_base
    from repro.image.blocks.formats import APPTAINER, DOCKER
    from repro.image.build import plan_build
    from repro.image.render import render_apptainer
    from repro.pipeline.up import site_options
    from repro.secrets import redact_text

    loaded = load_stack(stack)
    if base:
        recipe = cuda_base.recipe_for_stack(loaded.stack)
        if recipe is None:
            from repro.errors import InputError

            base_image = loaded.stack.base_image or "its distribution image"
            why = ("repro has no rebuild recipe for it (docker/cuda_bases.yaml)"
                   if cuda_base.is_end_of_life(loaded.stack) else "it is not an end-of-life nvidia/cuda image")
            raise InputError(f"stack {loaded.stack.name} builds FROM {base_image}, which repro does not rebuild: "
                             f"{why}")
        return recipe.render(APPTAINER if apptainer else DOCKER)
    plan = plan_build(loaded, site_options(options, pip_cert), check_inputs=False)
    text = render_apptainer(loaded.stack, plan.options) if apptainer else plan.dockerfile
    return redact_text(text)  # a token in a pip index URL is never printed


def archive_stack(stack: str | Path, output: Path, *, store_root: str | Path | None = None,
                  docker_host: str | None = None, progress: Lines = silent) -> ArchiveResult:
    """Write the image `repro up` locked for the stack, its lock, manifest and recipe into one archive."""
    return write_archive(load_stack(stack), Store(store_root), Path(output), docker_host=docker_host,
                         progress=progress)


@dataclass(frozen=True)
class BaseImages:
    """The base image made (or found) in each engine: {engine (None: the default one): image id}."""

    ref: str
    ids: dict[str | None, str]


def base_images(ref: str, docker_hosts: Sequence[str], *, mirror: str | None = None) -> BaseImages:
    """Make `ref` with debootstrap in the first engine when absent (cached), then copy it into the others."""
    from repro.image.base import ensure_base_image, load_into

    hosts = list(docker_hosts) or [None]
    ids: dict[str | None, str] = {hosts[0]: ensure_base_image(ref, hosts[0], mirror=mirror)}
    ids.update(load_into(ref, [h for h in hosts[1:] if h], source_host=hosts[0]))
    return BaseImages(ref, ids)
