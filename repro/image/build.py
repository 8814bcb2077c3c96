"""Build a stack's image through the Docker SDK (repro.pipeline.up chains plan -> build -> verify -> lock -> ship).

The plan is data (tag, base image, Dockerfile, context files, build args) that `repro up --dry-run`
prints; the tag is a digest of everything the build consumes, so an unchanged stack is never rebuilt
and any change of stack, templates, workloads or build options gives a new tag.
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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import BackendUnavailable, ImageError, InputError
from repro.image import cuda_base, render
from repro.image.cuda_base import CudaBaseRecipe
from repro.image.engine import image_id
from repro.image.render import RenderOptions
from repro.manifest import frameworks
from repro.manifest.frameworks import FRAMEWORKS, section_of
from repro.results.redact import redact_argv, redact_text

if TYPE_CHECKING:
    import docker

    from repro.manifest import LoadedStack

Progress = Callable[[str], None]
TAIL_LINES = 25
_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")
_NO_SPACE = re.compile(r"no space left on device", re.IGNORECASE)


def default_wheelhouse() -> Path:
    """~/.cache/repro/wheelhouse (under $XDG_CACHE_HOME when set)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "repro" / "wheelhouse"


def default_ca_bundle() -> Path | None:
    """$PIP_CERT when it names a file: the CA bundle pip needs behind a TLS-intercepting proxy."""
    value = os.environ.get("PIP_CERT")
    return Path(value) if value and Path(value).is_file() else None


@dataclass(frozen=True)
class BuildOptions:
    """Site settings of a build; none of them is part of the stack."""

    ca_bundle: Path | None = None
    pip_index: str | None = None
    extra_index: str | None = None
    wheelhouse: Path | None = None  # None: default_wheelhouse()
    build_args: tuple[tuple[str, str], ...] = ()
    ofed_url: str | None = None
    ofed_mirror: str | None = None
    ofed_tarball: Path | None = None
    docker_host: str | None = None


def default_options() -> BuildOptions:
    """The build options `repro up` uses when given no flag (a CA bundle from $PIP_CERT): what any other command
    that names the image `repro up` would build (bench --dry-run) must use too, so that both name the same tag."""
    return BuildOptions(ca_bundle=default_ca_bundle())


@dataclass(frozen=True)
class ContextFile:
    """One file of the build context: its name in the context and where its bytes come from."""

    name: str
    sha256: str
    size: int
    path: Path | None = None
    data: bytes | None = None

    def read(self) -> bytes:
        return self.data if self.data is not None else Path(self.path).read_bytes()


@dataclass(frozen=True)
class BuildPlan:
    """Everything a build consumes; its digest is the image tag."""

    stack: str
    stack_hash: str
    image_hash: str
    base_image: str
    dockerfile: str
    files: tuple[ContextFile, ...]
    build_args: tuple[tuple[str, str], ...]
    key: str
    options: RenderOptions = field(default_factory=RenderOptions)
    base_recipe: CudaBaseRecipe | None = None  # the end-of-life base repro rebuilds, when it does

    @property
    def tag(self) -> str:
        return render.image_tag(self.key)

    @property
    def context_size(self) -> int:
        return len(self.dockerfile.encode()) + sum(f.size for f in self.files)

    def describe(self) -> str:
        """The dry-run text: tag, base image, build args, context files, Dockerfile."""
        lines = [f"stack:       {self.stack} (hash {self.stack_hash}, image hash {self.image_hash})",
                 f"image tag:   {self.tag}", f"base image:  {self.base_image}"]
        if self.base_recipe is not None:
            lines += [f"             (rebuilt when the engine lacks it; {self.base_recipe.replaces} is end of life)"]
        lines += [f"context:     {len(self.files) + 1} files, {_size(self.context_size)}"]
        lines += [f"  {f.name:<60} {_size(f.size):>10}  sha256:{f.sha256[:12]}" for f in self.files]
        lines += [f"build arg:   {arg}" for arg in redact_argv([f"{k}={v}" for k, v in self.build_args])]
        if self.base_recipe is not None:
            lines += ["", self.base_recipe.describe(), "", "Base recipe (Dockerfile):",
                      redact_text(self.base_recipe.render().rstrip("\n"))]
        lines += ["", "Dockerfile:", redact_text(self.dockerfile.rstrip("\n"))]
        return "\n".join(lines)


@dataclass(frozen=True)
class BuildOutcome:
    """What a build (or the absence of one) produced."""

    tag: str
    image_id: str
    built: bool
    seconds: float
    log: str | None
    started: str
    finished: str


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- planning --------------------------------------------------------------------------------------


def _file(name: str, path: Path) -> ContextFile:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return ContextFile(name, digest.hexdigest(), size, path=path)


def _data(name: str, data: bytes) -> ContextFile:
    return ContextFile(name, hashlib.sha256(data).hexdigest(), len(data), data=data)


def _wheelhouse_sub(stack) -> str:
    """`tf<tf>-py<XY>` or `torch<torch>-py<XY>`: the wheelhouse subdirectory for a stack's framework and Python."""
    major, minor = stack.python.split(".")[:2]
    framework = frameworks.of(stack)
    version = section_of(stack, framework.name).version
    return f"{framework.wheelhouse_prefix or framework.name}{version}-py{major}{minor}"


def pip_find_links() -> list[Path]:
    """The local directories pip's own settings name as find-links ($PIP_FIND_LINKS, then pip.conf files): where
    a machine keeps wheels it cannot download (this project's CPU torch wheel lives in /opt/wheels)."""
    import configparser

    values = [os.environ.get("PIP_FIND_LINKS", "")]
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    files = [Path("/etc/pip.conf"), Path("/etc/xdg/pip/pip.conf"), Path(xdg) / "pip" / "pip.conf",
             Path.home() / ".pip" / "pip.conf", *([Path(os.environ["PIP_CONFIG_FILE"])]
                                                   if os.environ.get("PIP_CONFIG_FILE") else [])]
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except (OSError, configparser.Error):
            continue
        values += [parser.get(section, "find-links", fallback="") for section in ("global", "install")]
    out: list[Path] = []
    for value in values:
        for item in value.split():
            path = Path(item.removeprefix("file://")).expanduser()
            if path.is_dir() and path not in out:
                out.append(path)
    return out


def torch_wheels(stack, wheelhouse: Path | None) -> list[Path]:
    """The stack's PyTorch wheel(s): in its wheelhouse directory, else in pip's find-links directories."""
    return FRAMEWORKS.get("pytorch").build_wheels(stack, wheelhouse)


def wheelhouse_dir(stack, wheelhouse: Path | None = None) -> Path | None:
    """The wheelhouse directory for a stack: its `tf<tf>-py<XY>` (`torch<torch>-py<XY>`) subdirectory when
    present, else the root."""
    root = Path(wheelhouse).expanduser() if wheelhouse else default_wheelhouse()
    sub = root / _wheelhouse_sub(stack)
    if sub.is_dir():
        return sub
    return root if root.is_dir() else None


def workload_files() -> list[ContextFile]:
    """repro/workloads/*.py plus an empty repro/__init__.py, as they go to /opt/repro/repro/."""
    import repro.workloads

    src = Path(repro.workloads.__file__).parent
    out = [_data("repro/__init__.py", b"")]
    out += [_file(f"repro/workloads/{p.name}", p) for p in sorted(src.glob("*.py"))]
    return out


def plan_build(loaded: LoadedStack, options: BuildOptions | None = None, *, check_inputs: bool = True) -> BuildPlan:
    """Render the Dockerfile and gather the context for a stack (reads files; touches no engine).

    check_inputs=False renders even when a source-built wheel the build needs is missing (`repro render`).
    """
    o = options or BuildOptions()
    stack = loaded.stack
    files: list[ContextFile] = []
    if o.ca_bundle:
        ca = Path(o.ca_bundle).expanduser()
        if not ca.is_file():
            raise InputError(f"--ca-bundle {ca}: no such file")
        files.append(_file("ca-bundle.crt", ca))
    wheels: list[ContextFile] = []
    wh = wheelhouse_dir(stack, o.wheelhouse)
    if wh is not None:
        wheels = [_file(f"wheelhouse/{p.name}", p) for p in sorted(wh.glob("*.whl"))]
    framework = frameworks.of(stack)
    have = {w.name for w in wheels}  # the framework's own wheels from elsewhere (PyTorch's: pip's find-links)
    wheels += [_file(f"wheelhouse/{p.name}", p) for p in framework.build_wheels(stack, wh)
               if f"wheelhouse/{p.name}" not in have]
    names = tuple(Path(w.name).name for w in wheels)
    if check_inputs:  # a wheel the framework's block installs and no index offers must be in the context
        where = wh or (Path(o.wheelhouse) if o.wheelhouse else default_wheelhouse())
        framework.check_wheels(stack, names, where, where if wh else where / _wheelhouse_sub(stack))
    files += wheels
    if o.ofed_tarball:
        tgz = Path(o.ofed_tarball).expanduser()
        if not tgz.is_file():
            raise InputError(f"--ofed-tarball {tgz}: no such file")
        files.append(_file("mofed.tgz", tgz))
    files += workload_files()
    ropts = RenderOptions(ca_bundle=bool(o.ca_bundle), pip_index=o.pip_index, extra_index=o.extra_index,
                          wheels=names, ofed_mirror=o.ofed_mirror, ofed_url=o.ofed_url,
                          ofed_tarball="mofed.tgz" if o.ofed_tarball else None)
    dockerfile = render.render_dockerfile(stack, ropts)
    build_args = tuple(sorted(o.build_args))
    key = render.image_key(loaded.image_hash, dockerfile, {f.name: f.sha256 for f in files}, dict(build_args))
    return BuildPlan(stack=stack.name, stack_hash=loaded.hash, image_hash=loaded.image_hash,
                     base_image=render.base_image(stack, ropts), dockerfile=dockerfile, files=tuple(files),
                     build_args=build_args, key=key, options=ropts, base_recipe=cuda_base.recipe_for_stack(stack))


# -- the engine ------------------------------------------------------------------------------------


def require_base(client: docker.DockerClient, base: str, progress: Progress,
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
    from repro.image.base import buildable

    if buildable(base):
        return f"build it from the distribution's archive (no registry needed): repro base-image {base}"
    if base.startswith("nvidia/cuda:"):
        return ("end-of-life nvidia/cuda tags are deleted from Docker Hub, and repro has no rebuild recipe for "
                "this one (docker/cuda_bases.yaml): pull it from a local registry or mirror and tag it, or "
                "`docker load` a saved copy (or a `repro archive` of a stack built on it)")
    return "load it into the engine first (docker load, or docker pull from a registry you can reach)"


def _rebuild_base(client: docker.DockerClient, recipe: CudaBaseRecipe, progress: Progress) -> str:
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

    def __init__(self, log, progress: Progress) -> None:
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
          progress: Progress = lambda _line: None) -> BuildOutcome:
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
def _build_lock(client: docker.DockerClient, tag: str, progress: Progress) -> Iterator[None]:
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


def _build_now(plan: BuildPlan, client: docker.DockerClient, log_path: Path | None, progress: Progress,
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
