"""Render a stack's Dockerfile and Apptainer definition from building blocks (pure).

The blocks are HPC Container Maker's (`hpccm`: mlnx_ofed, openmpi, mvapich2, ucx, python, pip,
apt_get) where it has one for what the stack pins, and repro's own, written the same way, where it has
none (repro.image.blocks.own: Horovod, the container sshd, workloads, site settings, held NCCL/cuDNN
pins, tf_cnn_benchmarks). `repro.image.blocks.stack.building_blocks` configures them from a stack;
each format is rendered natively by hpccm from that same block list, under
`repro.image.blocks.formats.settings`, which sets and restores hpccm's global output settings.
A stack whose nvidia/cuda base is end of life builds FROM a base repro rebuilds (repro.image.cuda_base).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace

from repro.image import cuda_base
from repro.image.blocks import formats
from repro.image.blocks.own import CHECK_BUILD_FILE, TfCnnBenchmarks
from repro.image.blocks.stack import (
    TF_BENCHMARKS,
    RenderOptions,
    base_image_cudnn,
    building_blocks,
    distro_packages,
    tf_benchmarks_pin,
    torch_wheel_matches,
    wheel_matches,
)
from repro.manifest.schema import Stack

__all__ = ["CHECK_BUILD_FILE", "REPO", "TF_BENCHMARKS", "RenderOptions", "TfCnnBenchmarks", "base_image",
           "base_image_cudnn", "building_blocks", "distro_packages", "image_key", "image_tag", "render",
           "render_apptainer", "render_dockerfile", "tf_benchmarks_pin", "torch_wheel_matches", "wheel_matches"]

REPO = "repro/stack"  # image repository; the tag is the build key (see image_key)


def base_image(stack: Stack, options: RenderOptions | None = None) -> str:
    """What the stack's image is built FROM: an option, a rebuilt end-of-life base, or the stack's base."""
    if options is not None and options.base_image:
        return options.base_image
    recipe = cuda_base.recipe_for_stack(stack)
    if recipe is not None:
        return recipe.tag
    return stack.base_image or f"{stack.os.distro}:{stack.os.version}"


def render(stack: Stack, options: RenderOptions | None = None, fmt: str = formats.DOCKER) -> str:
    """The stack's recipe in one format (formats.DOCKER or formats.APPTAINER)."""
    o = replace(options or RenderOptions(), base_image=base_image(stack, options))
    if o.apptainer_bootstrap == "docker" and cuda_base.recipe_for_stack(stack) and not (options and options.base_image):
        o = replace(o, apptainer_bootstrap="docker-daemon")  # a rebuilt base exists in the local engine only
    with formats.settings(fmt, formats.hpccm_distro(stack.os.distro, stack.os.version)):
        parts = building_blocks(stack, o)
        names = ", ".join(name for name, _ in parts)
        body = formats.join([block for _, block in parts])
    header = [f"# Rendered by repro from a stack manifest (image hash {_image_hash(stack)}); edit the stack, "
              "not this file.", f"# Building blocks, slow and stable first: {names}."]
    if fmt == formats.APPTAINER:
        header += ["# Build from the directory holding the files below: apptainer build IMAGE.sif THIS_FILE"]
    return "\n".join(header) + "\n\n" + body


def render_dockerfile(stack: Stack, options: RenderOptions | None = None) -> str:
    """The stack's Dockerfile."""
    return render(stack, options, formats.DOCKER)


def render_apptainer(stack: Stack, options: RenderOptions | None = None) -> str:
    """The stack's Apptainer (Singularity) definition, from the same building blocks."""
    return render(stack, options, formats.APPTAINER)


def image_key(image_hash: str, dockerfile: str, files: Mapping[str, str], build_args: Mapping[str, str]) -> str:
    """Digest of everything a build consumes: image hash, Dockerfile, context file digests, build args."""
    payload = json.dumps({"image_hash": image_hash, "dockerfile": dockerfile, "files": dict(files),
                          "build_args": dict(build_args)}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def image_tag(key: str) -> str:
    """The image reference repro builds a key as."""
    return f"{REPO}:{key}"


def _image_hash(stack: Stack) -> str:
    from repro.manifest.canonical import image_hash

    return image_hash(stack)
