"""`repro capture`: probe this host (or an image) -> Software -> manifest -> validate it as `repro validate` does.

The probe is the one the `host` runtime checks hosts with (HOST_PROBE) or, for `--image`, the one `repro up`
verifies images with (repro.image.verify.PROBE), so a captured stack is what those checks would accept.
"""

from __future__ import annotations

import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from repro.children import run_bounded
from repro.errors import InputError
from repro.launch.runtimes.host import HOST_PROBE, PROBE_TIMEOUT_S
from repro.manifest import load_stack
from repro.manifest.capture import Captured, comment, file_name, manifest_from
from repro.manifest.compat import Finding, check
from repro.manifest.probe_output import MAX_PROBE_BYTES, ProbeOutputError, software_from_output
from repro.manifest.software import Software


@dataclass(frozen=True)
class CaptureResult:
    """The manifest written for the software found, its stack name and hash, and its compatibility findings."""

    name: str
    text: str  # the manifest file
    software: Software
    hash: str
    findings: tuple[Finding, ...]
    output: Path | None = None  # the file written; None: the manifest is to be printed

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    def counts(self) -> dict[str, int]:
        """How many findings of each severity (error, warning, note)."""
        return {s: sum(1 for f in self.findings if f.severity == s) for s in ("error", "warning", "note")}


def probe_python(python: str, *, timeout: float = PROBE_TIMEOUT_S) -> Software:
    """The software `python` sees on this host (HOST_PROBE, run locally; its output bounded in size and time)."""
    hint = "give the interpreter that has your framework with --python PATH"
    try:
        ran = run_bounded([python, "-c", HOST_PROBE], timeout=timeout, max_bytes=MAX_PROBE_BYTES)
    except OSError as exc:
        raise InputError(f"--python {python}: cannot run it to probe this host's software: "
                         f"{exc.strerror or exc}", hint=hint) from None
    if ran.stopped:
        raise InputError(f"--python {python}: the software probe {ran.stopped}: stopped", hint=hint)
    try:
        return software_from_output(ran.stdout)
    except ProbeOutputError as exc:
        said = ran.stderr[-1500:].decode(errors="replace").strip().splitlines()[-12:]
        raise InputError(f"--python {python}: the software probe {exc} (exit {ran.returncode})"
                         + "".join(f"\n  {comment(line)}" for line in said), hint=hint) from None


def probe_image(tag: str, docker_host: str | None = None) -> Software:
    """The software inside image `tag` (the verification probe, in a throw-away container)."""
    from repro.image import verify
    from repro.image.engine import engine

    client = engine(docker_host)
    try:
        return verify.probe(client, tag).software
    finally:
        client.close()


def capture(*, software: Software, name: str, framework: str | None = None, os: str | None = None,
            description: str = "", source: str = "this host", output: Path | None = None) -> CaptureResult:
    """The manifest of `software`, written to `output` (or a scratch file) and checked as `repro validate` would."""
    captured: Captured = manifest_from(software, framework=framework, os=os,
                                       description=description or f"captured from {source}")
    text = captured.to_yaml(f"Captured by `repro capture` from {source}; values and where they came from:")
    with tempfile.TemporaryDirectory(prefix="repro-capture-") as tmp:
        path = output or Path(tmp) / f"{name}.yaml"
        path.write_text(text)
        loaded = load_stack(path)  # a ManifestError here is a defect of capture: it says which field
        findings = tuple(check(loaded))
    return CaptureResult(name=loaded.stack.name, text=text, software=software, hash=loaded.hash, findings=findings,
                         output=output)


def capture_here(*, python: str, image: str | None = None, docker_host: str | None = None,
                 framework: str | None = None, os: str | None = None, name: str | None = None,
                 output: str | Path | None = None, force: bool = False) -> CaptureResult:
    """Probe this host's `python` (or `image`) and capture its stack (into `output` when given; a file there is
    overwritten only with `force`, checked before any probe)."""
    output = Path(output) if output else None
    if output is not None and output.exists() and not force:
        raise InputError(f"{output} exists", hint="choose another --output, or --force to overwrite it")
    if image:
        sw, source = probe_image(image, docker_host), f"image {image}"
    else:
        sw, source = probe_python(python), f"host {socket.gethostname()}"
    stack_name = file_name(name or (image.rsplit("/", 1)[-1] if image else socket.gethostname()))
    return capture(software=sw, name=stack_name, framework=framework, os=os, source=source, output=output)
