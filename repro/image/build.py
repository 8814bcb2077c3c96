"""Build a stack's image through the Docker SDK (repro.pipeline.up chains plan -> build -> verify -> lock -> ship).

The plan is data (tag, base image, Dockerfile, context files, build args: repro.image.build_plan, whose names
are importable from here too) that `repro up --dry-run` prints; this module runs it on an engine: the base
image checked or rebuilt, the context streamed, the transcript kept, one build per tag at a time.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import tarfile
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import BackendUnavailable, ImageError
from repro.image.build_plan import (
    BuildOptions,
    BuildOutcome,
    BuildPlan,
    ContextFile,
    default_ca_bundle,
    default_options,
    pip_find_links,
    plan_build,
    torch_wheels,
    wheelhouse_dir,
    workload_files,
)
from repro.image.cuda_base import CudaBaseRecipe
from repro.image.engine import image_id
from repro.progress import Lines, silent
from repro.secrets import redact_text

if TYPE_CHECKING:
    import docker


TAIL_LINES = 25
_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")
_NO_SPACE = re.compile(r"no space left on device", re.IGNORECASE)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def require_base(client: docker.DockerClient, base: str, progress: Lines,
                 recipe: CudaBaseRecipe | None = None) -> str:
    """The base image's id: found in the engine, rebuilt from `recipe` (an end-of-life nvidia/cuda base),
    or pulled; ImageError saying how to provide it."""
    found = image_id(client, base)
    if found:
        return found
    if recipe is not None:
        return _rebuild_base(client, recipe, progress)
    progress(f"base image {base} is not in the engine; trying to pull it")
    try:
        client.images.pull(base)
    except Exception as exc:  # ImageNotFound, APIError (no route to the registry), ...
        first = str(exc).splitlines()[0][:300]
        raise ImageError(f"base image {base} is not in the Docker engine and cannot be pulled ({first})",
                         hint=_base_hint(base)) from None
    return image_id(client, base) or ""


def _base_hint(base: str) -> str:
    from repro.image.base_recipe import buildable

    if buildable(base):
        return f"build it from the distribution's archive (no registry needed): repro base-image {base}"
    if base.startswith("nvidia/cuda:"):
        return ("end-of-life nvidia/cuda tags are deleted from Docker Hub, and repro has no rebuild recipe for "
                "this one (docker/cuda_bases.yaml): pull it from a local registry or mirror and tag it, or "
                "`docker load` a saved copy (or a `repro archive` of a stack built on it)")
    return "load it into the engine first (docker load, or docker pull from a registry you can reach)"


def _rebuild_base(client: docker.DockerClient, recipe: CudaBaseRecipe, progress: Lines) -> str:
    """Build an end-of-life CUDA base from repro's recipe (needs NVIDIA's apt repositories)."""
    require_base(client, recipe.os_image, progress)
    progress(f"rebuilding {recipe.replaces} (end of life) as {recipe.tag} from recipe {recipe.name}")
    dockerfile = recipe.render()
    what = f"the rebuilt base {recipe.tag} ({recipe.replaces})"
    try:
        with _context_tar(dockerfile, ()) as context, open(os.devnull, "w") as log:
            return _engine_build(client, tag=recipe.tag, what=what, context=context, build_args={},
                                 transcript=_Transcript(log, progress), log_path=None)
    except ImageError as exc:
        raise ImageError(exc.message, hint="the rebuilt base needs NVIDIA's apt repositories "
                         "(developer.download.nvidia.com) with these package versions; where they cannot be reached, "
                         f"load {recipe.tag} into the engine (docker load), or restore a `repro archive` of a stack "
                         "built on it; `repro render STACK --base` prints the recipe") from None


# -- building --------------------------------------------------------------------------------------


def _context_tar(dockerfile: str, files: tuple[ContextFile, ...]) -> tempfile.SpooledTemporaryFile:
    """A build context as a tar stream: the Dockerfile and exactly the planned files, as planned."""
    out = tempfile.SpooledTemporaryFile(max_size=64 << 20)  # noqa: SIM115 - returned open, closed by the caller
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in [("Dockerfile", dockerfile.encode()), *((f.name, f.read()) for f in files)]:
            planned = next((f for f in files if f.name == name), None)
            if planned is not None and hashlib.sha256(data).hexdigest() != planned.sha256:
                raise ImageError(f"{planned.path or name} changed after the build was planned; run it again")
            info = tarfile.TarInfo(name)
            info.mode = 0o644
            info.mtime = 0  # fixed metadata: the same context gives the same COPY cache keys
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.seek(0)
    return out


class _Transcript:
    """Follows a classic-builder stream: the log file, progress lines, the current step and its output."""

    def __init__(self, log, progress: Lines) -> None:
        self.log = log
        self.progress = progress
        self.step = ""
        self.step_output: list[str] = []
        self.all_tail: list[str] = []
        self.image_id: str | None = None

    def line(self, text: str) -> None:
        text = redact_text(text)  # a pip index URL with its token must not reach the build log
        self.log.write(text + "\n")
        self.log.flush()
        self.progress(text)
        if _STEP.match(text):
            self.step, self.step_output = text, []
        elif not text.startswith(" ---> "):
            self.step_output.append(text)
        self.all_tail = [*self.all_tail[-(TAIL_LINES * 4):], text]

    def feed(self, chunk: dict[str, Any]) -> str | None:
        """Consume one decoded chunk; returns the error message if it is one."""
        if "stream" in chunk:
            for text in str(chunk["stream"]).splitlines():
                if text.strip():
                    self.line(text.rstrip())
        elif "status" in chunk:
            self.line(" ".join(str(chunk.get(k, "")) for k in ("status", "id", "progress")).strip())
        if isinstance(chunk.get("aux"), dict) and chunk["aux"].get("ID"):
            self.image_id = chunk["aux"]["ID"]
        if chunk.get("error") or chunk.get("errorDetail"):
            message = chunk.get("error") or chunk["errorDetail"].get("message", "build failed")
            self.line(f"ERROR: {message}")
            return str(message)
        return None


def _failure(what: str, t: _Transcript, message: str, log_path: Path | None) -> ImageError:
    """The error of a failed build of `what`: the failed step and the end of its output."""
    output = "\n".join(t.step_output[-TAIL_LINES:])
    where = f"\nsee the whole log: {log_path}" if log_path else ""
    if _NO_SPACE.search(message) or _NO_SPACE.search(output):
        return ImageError(f"building {what} ran out of disk space (no space left on "
                          f"device) in: {t.step or 'the build'}{where}",
                          hint="free space where Docker keeps images (`docker system df`, `docker image prune`, "
                          "`docker builder prune`) or move Docker's data-root to a larger disk, then run it again")
    return ImageError(f"building {what} failed at {t.step or 'the start'}\n"
                      f"{message.strip()}\n--- last lines of that step ---\n{output}{where}")


def _engine_build(client: docker.DockerClient, *, tag: str, what: str, context, build_args: dict[str, str],
                  transcript: _Transcript, log_path: Path | None) -> str:
    """Run one build in the engine (host network, no pull) and return the image id of `tag`."""
    import docker

    t = transcript
    error = None
    try:
        stream = client.api.build(fileobj=context, custom_context=True, tag=tag, decode=True, rm=True,
                                  forcerm=True, pull=False, network_mode="host", buildargs=build_args or None)
        for chunk in stream:
            error = t.feed(chunk) or error
    except docker.errors.APIError as exc:
        error = str(exc.explanation or exc)
        t.line(f"ERROR: {error}")
    except Exception as exc:  # the engine went away mid-build
        raise BackendUnavailable(f"the Docker engine stopped answering while building {tag}: {exc}") from None
    if error:
        raise _failure(what, t, error, log_path)
    found = image_id(client, tag)
    if not found:
        raise _failure(what, t, "the build ended without an image", log_path)
    return found


def build(plan: BuildPlan, *, client: docker.DockerClient, log_path: Path | None = None,
          progress: Lines = silent) -> BuildOutcome:
    """Build the plan's image unless the engine already holds its tag; stream output to the log and progress."""
    started, t0 = _now(), time.monotonic()
    existing = image_id(client, plan.tag)
    if existing:
        return BuildOutcome(plan.tag, existing, False, time.monotonic() - t0, None, started, _now())
    # Two `repro up` of one stack on one engine (two shells, two CI jobs) build it once: the second waits for the
    # first's build, then finds the tag.
    with _build_lock(client, plan.tag, progress):
        existing = image_id(client, plan.tag)
        if existing:
            return BuildOutcome(plan.tag, existing, False, time.monotonic() - t0, None, started, _now())
        return _build_now(plan, client, log_path, progress, started, t0)


def _build_lock_path(client: docker.DockerClient, tag: str) -> Path:
    """The lock file of builds of `tag` on this engine (its ID tells engines apart), in the repro cache."""
    try:
        engine_id = str(client.info().get("ID", ""))
    except Exception as exc:  # the SDK raises its own errors, requests' and OSError
        raise BackendUnavailable(f"the Docker engine did not answer: {exc}") from exc
    digest = hashlib.sha256(f"{engine_id}\0{tag}".encode()).hexdigest()[:16]
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "repro" / "locks" / f"build-{digest}.lock"


@contextlib.contextmanager
def _build_lock(client: docker.DockerClient, tag: str, progress: Lines) -> Iterator[None]:
    path = _build_lock_path(client, tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another build of {tag} on this engine to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_now(plan: BuildPlan, client: docker.DockerClient, log_path: Path | None, progress: Lines,
               started: str, t0: float) -> BuildOutcome:
    require_base(client, plan.base_image, progress, plan.base_recipe)
    log = log_path.open("w", encoding="utf-8") if log_path else open(os.devnull, "w")  # noqa: SIM115
    try:
        with _context_tar(plan.dockerfile, plan.files) as context:
            t = _Transcript(log, progress)
            t.line(f"# repro build of {plan.tag} (stack {plan.stack}, image hash {plan.image_hash}) at {started}")
            found = _engine_build(client, tag=plan.tag, what=f"{plan.tag} for stack {plan.stack}", context=context,
                                  build_args=dict(plan.build_args), transcript=t, log_path=log_path)
            t.line(f"# built {found} in {time.monotonic() - t0:.0f} s")
    finally:
        log.close()
    return BuildOutcome(plan.tag, found, True, time.monotonic() - t0, str(log_path) if log_path else None,
                        started, _now())


__all__ = ["BuildOptions", "BuildOutcome", "BuildPlan", "ContextFile", "build", "default_ca_bundle", "default_options",
           "pip_find_links", "plan_build", "require_base", "torch_wheels", "wheelhouse_dir", "workload_files"]
