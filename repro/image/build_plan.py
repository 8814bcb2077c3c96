"""A stack's image build as data (pure but for reading the templates, workloads and wheels it hashes): options,
context files, the Dockerfile and the tag, a digest of everything the build consumes, so that an unchanged
stack is never rebuilt and any change of stack, templates, workloads or build options gives a new tag.
`repro up --dry-run` prints it; repro.image.build runs it.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from repro.errors import InputError
from repro.image import cuda_base, render
from repro.image.cuda_base import CudaBaseRecipe
from repro.image.render import RenderOptions
from repro.manifest import frameworks
from repro.manifest.frameworks import FRAMEWORKS, section_of
from repro.secrets import redact_argv, redact_text

if TYPE_CHECKING:

    from repro.manifest import LoadedStack

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
