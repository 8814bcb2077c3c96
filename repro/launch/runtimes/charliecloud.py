"""The `charliecloud` runtime: every rank runs in the stack's image with Charliecloud's unprivileged `ch-run`,
inside a batch job (what HPC sites without Docker on their nodes offer).

The image is the one `repro up` built and locked, converted once from the local engine to a directory image
(`ch-convert -i docker TAG DIR`) in a directory every node sees (the inventory's repro_charliecloud_images, a
shared filesystem; default ~/.cache/repro/charliecloud of the machine repro runs on), keyed by the image id.
Under `srun --mpi=pmix` each rank gets a private /tmp (`ch-run -t`) with the PMIx server's directories of its
node (PMIX_SERVER_TMPDIR in SlurmdSpoolDir, and TmpFS) bound in at their own paths, so Open MPI in the image
wires up with the node's slurmstepd; `--set-env` gives it the image's environment (PATH, PYTHONPATH).
Under `mpirun` the host's mpirun starts its daemons through Slurm and they start ch-run (the "hybrid" model:
the image's Open MPI must match the host's), /tmp shared for their session directory.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from repro import children
from repro.errors import BackendUnavailable, LaunchError
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

CONVERT_TIMEOUT_S = 1800
ID_FILE = ".repro-image-id"  # in the image directory: the Docker image id it was converted from


def images_dir(host: Host) -> str:
    """Where converted images live: the inventory's repro_charliecloud_images, else this machine's cache."""
    return str(host.vars.get("repro_charliecloud_images") or Path.home() / ".cache" / "repro" / "charliecloud")


def image_dir(host: Host, tag: str) -> str:
    """The directory image of a tag (repro/stack:abc -> .../repro-stack-abc)."""
    return f"{images_dir(host).rstrip('/')}/{tag.replace('/', '-').replace(':', '-')}"


def wrapper(image: str, dataset: str | None) -> str:
    """repro_in_charliecloud: one rank in the image, with the node's PMIx directories under srun."""
    return rank_wrapper(
        "repro_in_charliecloud", "One rank in the Charliecloud image; under srun --mpi=pmix a private /tmp with this "
        "node's PMIx server directories bound in at their own paths (Open MPI in the image talks to slurmstepd "
        "through them).", '--private-tmp --bind="$PMIX_SERVER_TMPDIR" --bind="$(repro_node_path TmpFS)"',
        [shlex.quote(f"--bind={dataset}:{CONTAINER_DATA}")] if dataset else [],
        f'ch-run "${{binds[@]}}" {shlex.quote(f"--set-env={image}/ch/environment")} {shlex.quote(image)} -- "$@"')


def run_streaming(argv: list[str], env: dict[str, str], timeout: float,
                  line: Callable[[str], None]) -> tuple[int, str]:
    """Run argv, handing each line of its output (stdout and stderr) to `line` as it comes; (exit status, its last
    lines). Killed after `timeout` seconds (the status then: -9). It runs under repro's supervisor: ch-convert
    starts docker (or buildah, ...), which end with it when repro ends, killed included."""
    proc = subprocess.Popen(children.supervised(argv), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", start_new_session=True, preexec_fn=children.die_with_parent)
    late: list[bool] = []

    def stop() -> None:  # SIGTERM: the supervisor ends the whole group, then itself
        late.append(True)
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()

    timer = threading.Timer(timeout, stop)
    timer.start()
    tail: deque[str] = deque(maxlen=20)
    try:
        assert proc.stdout is not None
        for text in proc.stdout:
            text = text.rstrip()
            if text:
                tail.append(text)
                line(text)
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=children.GRACE_S + 2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return (-9 if late else code), "\n".join(tail)


@RUNTIMES.register("charliecloud")
class CharliecloudRuntime(Runtime):
    """ch-run of the stack's image, converted to a directory on a filesystem the nodes share (batch jobs)."""

    name: ClassVar[str] = "charliecloud"
    needs_image: ClassVar[bool] = True
    batch_only: ClassVar[bool] = True

    def __init__(self, stack: Stack, image: ImageLock | None) -> None:
        if image is None:
            raise LaunchError("the charliecloud runtime needs the stack's image", hint="run `repro up STACK` first")
        self.stack = stack
        self.image = image

    @classmethod
    def job(cls, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext,
            nodes: tuple[Host, ...]) -> JobStep:
        if ctx.image is None:
            raise LaunchError("the charliecloud runtime needs the stack's image (run `repro up STACK` first)")
        first = placement[0].host
        image = image_dir(first, ctx.image)
        data = CONTAINER_DATA if point.data == "real" else point.data
        command = program(point.workload, ctx.framework).command(point, ctx.python or "python3", data=data)
        # no NCCL files (ctx.nccl_dir): ch-run binds only onto directories the read-only image already has, and
        # NCCL writes to the ranks' output where it cannot open its file; the record then has no `fabric`
        return JobStep(["bash", "-c", 'repro_in_charliecloud "$@"', "repro_in_charliecloud", *command],
                       run_env(ctx.stack_env, interface=first.interface, gpu=ctx.gpu),
                       functions=(NODE_PATH_FUNCTION, wrapper(image, first.dataset_dir)),
                       notes=(f"image: {image}, converted by repro from {ctx.image} "
                              f"(ch-convert -i docker {ctx.image} {image})",))

    def node_command(self, argv: list[str], host: Host) -> list[str]:
        image = image_dir(host, self.image.tag)
        return ["ch-run", f"--set-env={image}/ch/environment", image, "--", *argv]

    def convert(self, host: Host, progress: Callable[[str], None] | None = None) -> str:
        """The image as a directory (converted from the local engine once per image id); its path. ch-convert's
        own lines go to `progress` as they come (a TensorFlow image takes minutes)."""
        target = Path(image_dir(host, self.image.tag))
        marker = target / ID_FILE
        if marker.exists() and marker.read_text().strip() == self.image.image_id:
            return str(target)
        if shutil.which("ch-convert") is None:
            raise BackendUnavailable("ch-convert (Charliecloud) is not installed here",
                                     hint="apt-get install charliecloud-builders charliecloud-runtime")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "USER": os.environ.get("USER") or "root"}
        say = progress or (lambda _line: None)
        say(f"converting {self.image.tag} for Charliecloud into {target} with ch-convert (once per image id; "
            "minutes for a TensorFlow image)")
        began = time.monotonic()
        code, tail = run_streaming(["ch-convert", "-i", "docker", self.image.tag, str(partial)], env,
                                   CONVERT_TIMEOUT_S, lambda line: say(f"  ch-convert: {line}"))
        if code != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise LaunchError(f"ch-convert of {self.image.tag} failed (status {code}): {tail[-500:]}")
        say(f"converted {self.image.tag} in {time.monotonic() - began:.0f} s")
        (partial / ID_FILE).write_text(self.image.image_id + "\n")
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
        return str(target)

    def prepare(self, hosts: list[Host], backend: str, via: Via | None = None,
                progress: Callable[[str], None] | None = None) -> RuntimeReport:
        """Convert the image (once per image id: minutes for a TensorFlow image), then check on every node that
        ch-run starts it."""
        image = self.convert(hosts[0], progress)
        problems = []
        for host in hosts:
            if via is None:
                continue
            with via(host) as node:
                res = node.run(self.node_command(["cat", f"/{ID_FILE}"], host), timeout=120)
            if not res.ok or res.stdout.strip() != self.image.image_id:
                problems.append(f"{host.name}: ch-run cannot start {image} there: {res.tail(3) or 'wrong image'}")
        if problems:
            raise LaunchError("the Charliecloud image cannot run on every node; nothing was submitted\n  "
                              + "\n  ".join(problems),
                              hint="repro_charliecloud_images must be on a filesystem every node sees")
        return RuntimeReport(image=self.image)
