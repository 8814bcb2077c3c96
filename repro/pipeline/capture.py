"""`repro capture`: probe this host (or an image) -> Software -> manifest -> validate it as `repro validate` does.

The probe is the one the `host` runtime checks hosts with (HOST_PROBE) or, for `--image`, the one `repro up`
verifies images with (repro.image.verify.PROBE), so a captured stack is what those checks would accept.
"""

from __future__ import annotations

import json
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from repro.errors import InputError
from repro.launch.runtimes.host import HOST_PROBE, PROBE_TIMEOUT_S
from repro.manifest import load_stack
from repro.manifest.capture import Captured, file_name, manifest_from
from repro.manifest.compat import Finding, check
from repro.manifest.software import Software, from_host_probe


@dataclass(frozen=True)
class CaptureResult:
    """The manifest written for the software found, its stack name and hash, and its compatibility findings."""

    name: str
    text: str  # the manifest file
    software: Software
    hash: str
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")


def probe_python(python: str) -> Software:
    """The software `python` sees on this host (HOST_PROBE, run locally)."""
    try:
        res = subprocess.run([python, "-c", HOST_PROBE], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"cannot run {python} to probe this host's software: {exc}",
                         hint="give the interpreter that has your framework with --python PATH") from None
    try:
        return from_host_probe(json.loads(res.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        raise InputError(f"{python} printed no probe result (exit {res.returncode}):\n{res.stderr[-1500:]}") from None


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
    return CaptureResult(name=loaded.stack.name, text=text, software=software, hash=loaded.hash, findings=findings)


def capture_here(*, python: str, image: str | None = None, docker_host: str | None = None,
                 framework: str | None = None, os: str | None = None, name: str | None = None,
                 output: Path | None = None) -> CaptureResult:
    """Probe this host's `python` (or `image`) and capture its stack (into `output` when given)."""
    if image:
        sw, source = probe_image(image, docker_host), f"image {image}"
    else:
        sw, source = probe_python(python), f"host {socket.gethostname()}"
    stack_name = file_name(name or (image.rsplit("/", 1)[-1] if image else socket.gethostname()))
    return capture(software=sw, name=stack_name, framework=framework, os=os, source=source, output=output)
