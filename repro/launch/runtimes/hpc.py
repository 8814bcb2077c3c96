"""Container runtimes that HPC sites run under Slurm and that are not installable on repro's test machines:
pyxis/enroot (`srun --container-image`) and Apptainer (`apptainer exec`). Both run the stack's image as a
file on a filesystem the nodes share, made once from the local engine (the job script's notes say how);
their job scripts are rendered and golden-tested (tests/data/golden/slurm/), never run here. `repro bench`
checks on every node through srun that the file is there before it submits anything.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from repro.errors import LaunchError
from repro.hosts.inventory import Host
from repro.launch.placement import Placement
from repro.launch.plan import CONTAINER_DATA, PlanContext, run_env
from repro.launch.runtimes import (
    NODE_PATH_FUNCTION,
    RUNTIMES,
    JobStep,
    Runtime,
    RuntimeReport,
    Via,
    rank_wrapper,
)
from repro.launch.workloads import program
from repro.manifest.schema import Stack
from repro.results.provenance import ImageLock
from repro.results.record import Settings


class _ImageFile(Runtime):
    """A runtime that runs the stack's image from a file (squashfs, SIF) on the nodes' shared filesystem."""

    name: ClassVar[str]
    needs_image: ClassVar[bool] = True
    batch_only: ClassVar[bool] = True
    images_var: ClassVar[str]  # inventory variable: the directory of the image files
    suffix: ClassVar[str]
    binary: ClassVar[str]  # the program that runs the image on a node: looked for before anything is submitted

    def __init__(self, stack: Stack, image: ImageLock | None) -> None:
        if image is None:
            raise LaunchError(f"the {self.name} runtime needs the stack's image", hint="run `repro up STACK` first")
        self.stack = stack
        self.image = image

    @classmethod
    def image_file(cls, host: Host, tag: str) -> str:
        """The image file of a tag in the inventory's directory (default: this machine's ~/.cache/repro/NAME)."""
        directory = str(host.vars.get(cls.images_var) or Path.home() / ".cache" / "repro" / cls.name)
        return f"{directory.rstrip('/')}/{tag.replace('/', '-').replace(':', '-')}{cls.suffix}"

    @classmethod
    def _parts(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext):
        if ctx.image is None:
            raise LaunchError(f"the {cls.name} runtime needs the stack's image (run `repro up STACK` first)")
        first = placement[0].host
        data = CONTAINER_DATA if point.data == "real" else point.data
        command = program(point.workload, ctx.framework).command(point, ctx.python or "python3", data=data)
        return first, cls.image_file(first, ctx.image), command, run_env(ctx.stack_env, interface=first.interface,
                                                                       gpu=ctx.gpu, nccl_dir=ctx.nccl_dir)

    def prepare(self, hosts: list[Host], backend: str, via: Via | None = None,
                progress: Callable[[str], None] | None = None) -> RuntimeReport:
        """The runtime's program must be on every node's PATH and the image file readable there (through srun)."""
        missing, absent = [], []
        for host in hosts if via is not None else ():
            path = self.image_file(host, self.image.tag)
            with via(host) as node:
                found = node.run(["sh", "-c", 'command -v "$1"', "sh", self.binary], timeout=120)
                res = node.run(["test", "-r", path], timeout=120)
            if not found.ok:
                missing.append(f"{host.name}: {self.binary}: not found on the PATH")
            if not res.ok:
                absent.append(f"{host.name}: {path} is not there ({res.tail(2) or 'not readable'})")
        if missing:
            raise LaunchError(f"the {self.name} runtime's program is missing; nothing was submitted\n  "
                              + "\n  ".join(missing + absent),
                              hint=f"install {self.binary} on the nodes (or choose another --runtime)")
        if absent:
            raise LaunchError(f"the {self.name} image file is missing; nothing was submitted\n  "
                              + "\n  ".join(absent), hint=self.make_hint(self.image.tag, "FILE"))
        return RuntimeReport(image=self.image)

    @staticmethod
    def make_hint(tag: str, path: str) -> str:
        raise NotImplementedError


@RUNTIMES.register("pyxis")
class PyxisRuntime(_ImageFile):
    """srun --container-image: NVIDIA's pyxis SPANK plugin with enroot (the image as a squashfs file)."""

    name: ClassVar[str] = "pyxis"
    images_var: ClassVar[str] = "repro_enroot_images"
    suffix: ClassVar[str] = ".sqsh"
    binary: ClassVar[str] = "enroot"  # pyxis runs the squashfs through enroot on the node
    batch_launchers: ClassVar[tuple[str, ...]] = ("srun",)  # pyxis is a plugin of srun

    @staticmethod
    def make_hint(tag: str, path: str) -> str:
        return f"enroot import -o {path} dockerd://{tag}"

    @classmethod
    def job(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext,
            nodes: tuple[Host, ...]) -> JobStep:
        first, image, command, env = cls._parts(point, placement, ctx)
        options = [f"--container-image={image}"]
        # the dataset, and the job's shared directory of NCCL's files at its own path (pyxis: one comma list)
        mounts = [f"{first.dataset_dir}:{CONTAINER_DATA}:ro"] if first.dataset_dir else []
        mounts += [f"{ctx.nccl_dir}:{ctx.nccl_dir}"] if ctx.nccl_dir else []
        if mounts:
            options.append(f"--container-mounts={','.join(mounts)}")
        return JobStep(command, env, launcher_options=tuple(options),
                       notes=(f"image: made once with `{cls.make_hint(str(ctx.image), image)}`",
                              "pyxis binds the PMIx server's directories and the GPUs into the container itself"))

    def node_command(self, argv: list[str], host: Host) -> None:
        return None  # a container is an option of srun, not a command: the MPI's PMI is not probed


def apptainer_wrapper(image: str, dataset: str | None, nccl_dir: str | None = None) -> str:
    """repro_in_apptainer: one rank in the SIF, with the node's PMIx directories under srun (and the job's directory
    of NCCL's files)."""
    return rank_wrapper(
        "repro_in_apptainer", "One rank in the Apptainer image; under srun --mpi=pmix with this node's PMIx server "
        "directories bound in.", '--bind "$PMIX_SERVER_TMPDIR" --bind "$(repro_node_path TmpFS)"',
        (["--bind", shlex.quote(f"{dataset}:{CONTAINER_DATA}:ro")] if dataset else [])
        + (["--bind", shlex.quote(nccl_dir)] if nccl_dir else []),
        f'apptainer exec "${{binds[@]}}" {shlex.quote(image)} "$@"')


@RUNTIMES.register("apptainer")
class ApptainerRuntime(_ImageFile):
    """apptainer exec of the stack's image as a SIF file."""

    name: ClassVar[str] = "apptainer"
    images_var: ClassVar[str] = "repro_apptainer_images"
    suffix: ClassVar[str] = ".sif"
    binary: ClassVar[str] = "apptainer"

    @staticmethod
    def make_hint(tag: str, path: str) -> str:
        return f"apptainer build {path} docker-daemon://{tag}"

    @classmethod
    def job(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext,
            nodes: tuple[Host, ...]) -> JobStep:
        first, image, command, env = cls._parts(point, placement, ctx)
        return JobStep(["bash", "-c", 'repro_in_apptainer "$@"', "repro_in_apptainer", *command], env,
                       functions=(NODE_PATH_FUNCTION, apptainer_wrapper(image, first.dataset_dir, ctx.nccl_dir)),
                       notes=(f"image: made once with `{cls.make_hint(str(ctx.image), image)}`",))

    def node_command(self, argv: list[str], host: Host) -> list[str]:
        return ["apptainer", "exec", self.image_file(host, self.image.tag), *argv]
