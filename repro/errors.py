"""One error hierarchy for repro. Only repro.cli catches these and turns them into exit codes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where in an input file something was found (1-based line and column)."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Diagnostic:
    """One problem in an input, located and explained: what was expected and what was found."""

    message: str
    location: Location | None = None
    path: str = ""  # dotted field path, e.g. "tensorflow.version"
    expected: str = ""
    found: str = ""
    hint: str = ""
    severity: str = "error"  # error | warning | note

    def render(self) -> str:
        where = f"{self.location}: " if self.location else ""
        field_ = f"{self.path}: " if self.path else ""
        text = f"{where}{self.severity}: {field_}{self.message}"
        if self.expected:
            text += f"\n    expected: {self.expected}"
        if self.found:
            text += f"\n    found:    {self.found}"
        if self.hint:
            text += f"\n    hint:     {self.hint}"
        return text


class ReproError(Exception):
    """Base of every error repro reports to the user. exit_code is what the CLI returns."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self) -> str:
        text = f"error: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class InputError(ReproError):
    """Bad user input (a manifest, an inventory, a CSV, a command-line value). Exit status 2."""

    exit_code = 2

    def __init__(self, message: str, diagnostics: list[Diagnostic] | None = None, *, hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.diagnostics: list[Diagnostic] = list(diagnostics or [])

    def render(self) -> str:
        if not self.diagnostics:
            return super().render()
        lines = [d.render() for d in self.diagnostics]
        errors = sum(1 for d in self.diagnostics if d.severity == "error")
        lines.append(f"{self.message} ({errors} error{'s' if errors != 1 else ''})")
        return "\n".join(lines)


class ManifestError(InputError):
    """A stack manifest that cannot be loaded or does not validate."""


class CompatibilityError(InputError):
    """A stack whose pinned versions cannot work together (or only warnings, under --strict)."""


class InventoryError(InputError):
    """An inventory that cannot be read or lacks what repro needs."""


class BackendUnavailable(ReproError):
    """An optional dependency or service (Docker engine, ansible, TensorFlow) is not there."""

    exit_code = 3


class ImageError(ReproError):
    """Building, verifying, locking or shipping a stack's image failed."""


class VerificationError(ImageError):
    """The built image does not hold what the manifest pins."""


class HostError(ReproError):
    """A host could not be reached or prepared; names the host."""

    def __init__(self, message: str, *, host: str = "", hint: str = "") -> None:
        super().__init__(message, hint=hint)
        self.host = host


class LaunchError(ReproError):
    """A benchmark point could not be launched or did not finish."""


class ResultsError(ReproError):
    """The results store holds something unreadable, or a selection matched nothing."""


class Interrupted(ReproError):
    """The user pressed Ctrl-C; what was gathered so far is kept."""

    exit_code = 130
