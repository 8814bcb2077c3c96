"""Importing many files at once: every file's result, the good ones imported, each bad one named.

Every complete run of a file is imported; a part that is not a complete run (a fragment: a run cut before
it measured anything, prose that looks like a header, a run whose worker count neither the log nor --set
gives) is a warning naming its first line, and the file fails only when it holds no complete run. The same
content (SHA-256 of the bytes) is imported once per stack: a file already in the store, or given twice,
is skipped with a message rather than counted as another repeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from repro.errors import Diagnostic, InputError, Location, ReproError
from repro.files import FileProblem, read_file
from repro.results.importers.lines import MAX_BYTES, content_hash, decode
from repro.results.importers.records import read_runs, to_record
from repro.results.importers.settings import Override, for_file, for_run
from repro.results.record import RunRecord, StackRef


@dataclass(frozen=True)
class FileResult:
    """What became of one file: imported (its records), skipped (why) or failed (the error)."""

    file: str
    status: Literal["imported", "skipped", "failed"]
    records: tuple[RunRecord, ...] = ()
    message: str = ""
    error: InputError | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    unsettled: tuple[str, ...] = ()  # complete runs left out until --set gives what they lack (the import fails)


def source_key(record: RunRecord) -> tuple[str, str] | None:
    """(stack hash, SHA-256 of the source file) of an imported record, None for others."""
    source = record.metrics.get("source")
    if isinstance(source, dict) and isinstance(source.get("sha256"), str) and source["sha256"]:
        return record.stack.hash, source["sha256"]
    return None


def known_sources(records: Iterable[RunRecord]) -> dict[tuple[str, str], list[str]]:
    """The sources already imported: (stack hash, SHA-256) -> record ids."""
    out: dict[tuple[str, str], list[str]] = {}
    for r in records:
        if (key := source_key(r)) is not None:
            out.setdefault(key, []).append(r.id)
    return out


def _read(path: str) -> bytes:
    try:  # bounded: a named pipe or a device (/dev/zero, /dev/urandom) is refused, never read for ever
        return read_file(path, MAX_BYTES)
    except FileProblem as exc:
        what = f"{exc}, not a benchmark log" if str(exc).startswith("too large") else f"cannot import ({exc})"
        raise InputError(f"{path}: {what}", [Diagnostic(str(exc), Location(path), expected="a log file")]) from None


def import_file(path: str, stack: StackRef, overrides: Sequence[Override], known: dict[tuple[str, str], list[str]],
                fmt: str = "auto") -> FileResult:
    """One file's records (not stored), or why it is skipped or refused; never raises for bad content."""
    try:
        data = _read(path)
        sha = content_hash(data)
        if (stack.hash, sha) in known:
            ids = known[(stack.hash, sha)]
            message = (f"already imported into stack {stack.name} (same content as record{'s' if len(ids) > 1 else ''}"
                       f" {', '.join(ids[:3])}{'...' if len(ids) > 3 else ''})")
            if for_file(overrides, path):  # a corrected --set is not applied to what is stored: say how
                message += (f"; to import it again with these --set values, remove the earlier records first: "
                            f"repro results rm {' '.join(ids)}")
            return FileResult(path, "skipped", message=message)
        mine = for_file(overrides, path)

        def given(index: int, first: int, last: int) -> dict[str, Any]:
            return {name: o.value for name, o in for_run(mine, path, index, first, last).items()}

        runs, fragments = read_runs(decode(data, path), path, fmt, given)
        stray = [o for o in mine if o.run is not None and not any(
            o.picks(n, r.first_line, r.last_line) for n, r in runs)]
        if stray:
            raise InputError(f"--set {stray[0].given!r}: no run of {path} is #{stray[0].run} (runs: "
                             + ", ".join(f"#{n} lines {r.lines}" for n, r in runs) + ")")
        records, unsettled = [], []
        for n, run in runs:
            try:
                records.append(to_record(run, stack, for_run(mine, path, n, run.first_line, run.last_line),
                                         sha256=sha, index=n - 1))
            except InputError as exc:
                exc.span = (run.first_line, run.last_line)  # type: ignore[attr-defined]
                unsettled.append(exc)
        if not records:
            raise (unsettled or fragments or [InputError(f"{path}: no run to import")])[0]
        warnings = [f"{path}:{run.first_line}: {w}" for _, run in runs for w in run.warnings]
        warnings += [_fragment(path, p) for p in fragments]
        return FileResult(path, "imported", tuple(records), warnings=tuple(warnings),
                          unsettled=tuple(_fragment(path, p) for p in unsettled))
    except InputError as exc:
        return FileResult(path, "failed", error=exc)
    except ReproError as exc:
        return FileResult(path, "failed", error=InputError(f"{path}: {exc.message}"))
    except (ValueError, TypeError, KeyError, IndexError, ArithmeticError, RecursionError) as exc:  # never a traceback
        return FileResult(path, "failed", error=InputError(
            f"{path}: cannot import this log", [Diagnostic(f"unreadable content ({type(exc).__name__}: {exc})",
                                                           Location(path))]))


def _fragment(path: str, exc: InputError) -> str:
    """A warning about a part of a file that is not imported, naming the part's first line."""
    span = getattr(exc, "span", None)
    if span is None:
        return f"not imported: {_first(exc)}"
    return f"{path}:{span[0]}: lines {span[0]}-{span[1]} not imported: {_first(exc)}"


def _first(exc: InputError) -> str:
    """An import error in one line: the place and message of its first problem."""
    if not exc.diagnostics:
        return exc.message
    d = exc.diagnostics[0]
    where = f"{d.location.file}:{d.location.line}" if d.location and d.location.line else exc.message
    hint = f" (expected {d.expected})" if d.expected else ""
    return f"{where}: {d.message}{hint}"


def import_files(paths: Sequence[str], stack: StackRef, overrides: Sequence[Override],
                 known: dict[tuple[str, str], list[str]], fmt: str = "auto") -> list[FileResult]:
    """Every file's result, in order; a file given twice is skipped the second time."""
    seen = dict(known)
    out = []
    for path in paths:
        result = import_file(path, stack, overrides, seen, fmt)
        for r in result.records:
            if (key := source_key(r)) is not None:
                seen.setdefault(key, []).append(r.id)
        out.append(result)
    return out
