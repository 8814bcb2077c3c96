"""Importing many files at once: every file's result, the good ones imported, each bad one named.

A file is imported whole or not at all: if one of its runs cannot be read, none of them is. The same
content (SHA-256 of the bytes) is imported once per stack: a file already in the store, or given twice,
is skipped with a message rather than counted as another repeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from repro.errors import Diagnostic, InputError, Location, ReproError
from repro.files import FileProblem, read_file
from repro.results.importers.lines import MAX_BYTES, content_hash, decode
from repro.results.importers.records import read_log, to_record
from repro.results.importers.settings import Override, for_file
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
            return FileResult(path, "skipped", message=f"already imported into stack {stack.name} "
                              f"(same content as record{'s' if len(ids) > 1 else ''} {', '.join(ids[:3])})")
        mine = for_file(overrides, path)
        runs = read_log(decode(data, path), path, fmt, {name: o.value for name, o in mine.items()})
        records = tuple(to_record(run, stack, mine, sha256=sha, index=i) for i, run in enumerate(runs))
        warnings = tuple(f"{path}:{run.first_line}: {w}" for run in runs for w in run.warnings)
        return FileResult(path, "imported", records, warnings=warnings)
    except InputError as exc:
        return FileResult(path, "failed", error=exc)
    except ReproError as exc:
        return FileResult(path, "failed", error=InputError(f"{path}: {exc.message}"))
    except (ValueError, TypeError, KeyError, IndexError, ArithmeticError, RecursionError) as exc:  # never a traceback
        return FileResult(path, "failed", error=InputError(
            f"{path}: cannot import this log", [Diagnostic(f"unreadable content ({type(exc).__name__}: {exc})",
                                                           Location(path))]))


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
