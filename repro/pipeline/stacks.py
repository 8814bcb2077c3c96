"""`repro validate`, `show`, `stacks`, `schema`: stack manifests -> load -> the compatibility gate -> typed results.

The CLI renders what these return; loading, the gate policy and the walk over a directory are chained here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.errors import CompatibilityError, InputError, ManifestError
from repro.manifest import LoadedStack, load_stack
from repro.manifest.compat import Finding, check
from repro.pipeline.gate import gate
from repro.pipeline.software import framework_show
from repro.secrets import redact_tree

SEVERITIES = ("error", "warning", "note")


@dataclass(frozen=True)
class StackCheck:
    """One manifest validated: the stack (None when it did not load), its findings or its load error."""

    file: str
    loaded: LoadedStack | None
    findings: tuple[Finding, ...] = ()
    error: ManifestError | None = None
    failed: bool = False  # an error, or a warning under --strict

    def count(self, severity: str) -> int:
        """Findings of this severity."""
        return sum(1 for f in self.findings if f.severity == severity)

    def report(self) -> dict[str, Any]:
        """The file's entry in `repro validate --format json`."""
        loaded, error = self.loaded, self.error
        return {
            "file": self.file, "valid": not self.failed, "stack": loaded.stack.name if loaded else None,
            "hash": loaded.hash if loaded else None,
            "errors": self.count("error") + (len(error.diagnostics) if error else 0),
            "warnings": self.count("warning"), "notes": self.count("note"),
            "diagnostics": [d.render() for d in error.diagnostics] if error else [],
            "findings": [f.as_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class Validation:
    """Every manifest of a `repro validate`, in order."""

    checks: tuple[StackCheck, ...]
    strict: bool
    given: int  # how many paths were named (directories count once)

    def failure(self) -> CompatibilityError | None:
        """The error the command ends with when a stack failed, else None."""
        failed = [c.file for c in self.checks if c.failed]
        if not failed:
            return None
        why = "errors or warnings (--strict)" if self.strict else "errors"
        return CompatibilityError(f"{len(failed)} of {self.given} stacks have {why}: {', '.join(failed)}")


def check_stack(path: str, *, strict: bool = False) -> StackCheck:
    """Load one manifest and put it through the gate; a manifest that does not load is a failed check."""
    try:
        loaded = load_stack(path)
    except ManifestError as exc:
        return StackCheck(path, None, error=exc, failed=True)
    g = gate(loaded, strict=strict)
    return StackCheck(path, loaded, tuple(g.findings), failed=bool(g.blocking))


def validate_stacks(paths: list[str], *, strict: bool = False) -> Validation:
    """Validate every manifest named (directories: their .yaml and .yml files)."""
    from repro.inputs import expand_directories

    checks = tuple(check_stack(p, strict=strict) for p in expand_directories(paths, (".yaml", ".yml")))
    return Validation(checks, strict, len(paths))


@dataclass(frozen=True)
class StackRow:
    """One line of `repro stacks`: a manifest's key versions (text: 3.10 is not 3.1), or 'invalid'."""

    file: str
    name: str
    status: str  # ok, errors, invalid
    warnings: int = 0
    hash: str | None = None
    os: str | None = None
    cuda: str | None = None
    cudnn: str | None = None
    mpi: str | None = None
    python: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    horovod: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The row in `repro stacks --format json` (an invalid manifest: its name, file and status only)."""
        if self.status == "invalid":
            return {"stack": self.name, "file": self.file, "status": "invalid"}
        return {"stack": self.name, "file": self.file, "os": self.os, "cuda": self.cuda, "cudnn": self.cudnn,
                "mpi": self.mpi, "python": self.python, "framework": self.framework,
                "framework_version": self.framework_version, "horovod": self.horovod, "hash": self.hash,
                "status": self.status, "warnings": self.warnings}


def _row(path: Path) -> StackRow:
    c = check_stack(str(path))
    if c.loaded is None:
        return StackRow(str(path), path.name, "invalid")
    s = c.loaded.stack
    framework = getattr(s, s.framework)  # the pinned framework's section
    return StackRow(str(path), s.name, "errors" if c.failed else "ok", c.count("warning"), c.loaded.hash,
                    f"{s.os.distro} {s.os.version}", s.cuda, s.cudnn, f"{s.mpi.implementation} {s.mpi.version}",
                    s.python, s.framework, framework.version, s.horovod.version if s.horovod else None)


def list_stacks(directory: str | Path) -> tuple[StackRow, ...]:
    """A row per manifest of the directory (*.yaml, *.yml), by file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory of stacks")
    return tuple(_row(p) for p in sorted(directory.glob("*.y*ml")))


def show_stack(path: str | Path) -> dict[str, Any]:
    """The stack as repro resolves it (extends merged, derived fields, hashes, findings), secrets redacted."""
    loaded = load_stack(path)
    return redact_tree({
        "name": loaded.stack.name,
        "file": loaded.file,
        "extends": list(loaded.chain[1:]),
        "hash": loaded.hash,
        "image_hash": loaded.image_hash,
        "gpu": loaded.stack.gpu,
        "stack": loaded.stack.model_dump(mode="json"),
        **framework_show(loaded.stack),
        "findings": [f.as_dict() for f in check(loaded)],
    })


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of a stack manifest, for editors."""
    from repro.manifest.editor_schema import editor_schema

    return editor_schema()
