"""Selecting the records one side of a comparison stands for.

A selector is what the user typed for OLD or NEW; it resolves, in this order, to
  a saved selection file (``*.selection.json``, written by ``repro results --save-selection``),
  a stack manifest file (its resolved content hash, looked up in the store),
  a results directory (another store root, or a directory of record JSON files),
  a stack name (records whose ``stack.name`` matches), or
  a stack hash or unique hash prefix.
Selectors are resolved against the store's index (repro.results.index): the store is scanned once per
command, and only the selected records are parsed. Filters (model, batch, precision, workers, hosts)
then narrow it. Failed records stay in the selection: they are counted as failures, never used as
data (see repro.results.metrics.points).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from repro.errors import Diagnostic, InputError, Location, ResultsError
from repro.results.index import Summary, summarize
from repro.results.jsonfile import UnreadableRecord, read_record, write_json_atomic
from repro.results.store import Store

if TYPE_CHECKING:
    from repro.results.record import RunRecord, Settings

SELECTION_FORMAT = "repro.selection/1"
SELECTION_SUFFIX = ".selection.json"
_HEX = re.compile(r"^[0-9a-f]{4,}$")


@dataclass(frozen=True)
class Filters:
    """Which points of a selection to keep; an empty tuple keeps every value."""

    models: tuple[str, ...] = ()
    batches: tuple[int, ...] = ()
    precisions: tuple[str, ...] = ()
    workers: tuple[int, ...] = ()
    hosts: tuple[int, ...] = ()

    def matches(self, settings: Settings | Summary) -> bool:
        """Whether a record with these settings (or this index summary) is kept."""
        return ((not self.models or settings.model in self.models)
                and (not self.batches or settings.batch_per_worker in self.batches)
                and (not self.precisions or settings.precision in self.precisions)
                and (not self.workers or settings.workers in self.workers)
                and (not self.hosts or settings.hosts in self.hosts))

    def narrowed(self, other: Filters) -> Filters:
        """These filters, with every field `other` sets taking its place (command line over saved file)."""
        return Filters(*(getattr(other, f) or getattr(self, f)
                         for f in ("models", "batches", "precisions", "workers", "hosts")))

    def describe(self) -> str:
        """The filters as command-line options (empty when nothing is filtered)."""
        parts = []
        for flag, values in (("--model", self.models), ("--batch", self.batches), ("--precision", self.precisions),
                             ("--workers", self.workers), ("--hosts", self.hosts)):
            if values:
                parts.append(f"{flag} {','.join(str(v) for v in values)}")
        return " ".join(parts)

    def as_dict(self) -> dict[str, list[Any]]:
        return {k: list(v) for k, v in (("models", self.models), ("batches", self.batches),
                                        ("precisions", self.precisions), ("workers", self.workers),
                                        ("hosts", self.hosts)) if v}

    @property
    def empty(self) -> bool:
        return not (self.models or self.batches or self.precisions or self.workers or self.hosts)


def parse_filters(*, models: Iterable[str] = (), batches: Iterable[str] = (), precisions: Iterable[str] = (),
                  workers: Iterable[str] = (), hosts: Iterable[str] = ()) -> Filters:
    """Filters from repeatable, comma-separated command-line values; a bad value raises InputError."""

    def split(values: Iterable[str]) -> list[str]:
        return [v.strip() for raw in values for v in str(raw).split(",") if v.strip()]

    def ints(flag: str, values: Iterable[str]) -> tuple[int, ...]:
        out = []
        for v in split(values):
            try:
                n = int(v)
            except ValueError:
                raise InputError(f"{flag}: expected a whole number, found '{v}'") from None
            if n < 1:
                raise InputError(f"{flag}: expected a positive number, found '{v}'")
            out.append(n)
        return tuple(out)

    precision = tuple(split(precisions))
    bad = [p for p in precision if p not in ("fp32", "fp16")]
    if bad:
        raise InputError(f"--precision: expected fp32 or fp16, found '{bad[0]}'")
    return Filters(tuple(split(models)), ints("--batch", batches), precision, ints("--workers", workers),
                   ints("--hosts", hosts))


class RecordSource(Protocol):
    """Where a selection's records are read from: a Store, or records already parsed."""

    def read(self, summary: Summary) -> RunRecord | None: ...

    def indexed(self, summaries: Iterable[Summary]) -> list[RunRecord]: ...


@dataclass(frozen=True)
class _Parsed:
    """Records parsed outside a store (a record file, a directory of record files), by summary path."""

    records: Mapping[str, RunRecord]

    def read(self, summary: Summary) -> RunRecord | None:
        return self.records.get(summary.path)

    def indexed(self, summaries: Iterable[Summary]) -> list[RunRecord]:
        return [r for r in (self.read(s) for s in summaries) if r is not None]


@dataclass(frozen=True)
class Selection:
    """The runs one selector stands for, and how it was resolved (for messages and reports).

    `summaries` come from the store's index; `records` are parsed on first use, only these.
    """

    selector: str
    description: str
    store: str
    summaries: tuple[Summary, ...] = field(repr=False)
    source: RecordSource = field(repr=False, compare=False)

    @cached_property
    def records(self) -> tuple[RunRecord, ...]:
        """The selected runs: from the store's index, each record file parsed only where more than its figures and
        settings is needed (repro.results.indexed); a file that broke since the scan is skipped with a warning."""
        return tuple(self.source.indexed(self.summaries))

    @property
    def failed(self) -> int:
        return sum(1 for s in self.summaries if s.status != "ok")

    @property
    def stacks(self) -> tuple[str, ...]:
        """Distinct stack names, in order of first appearance."""
        return tuple(dict.fromkeys(s.stack for s in self.summaries))

    @property
    def stack_hashes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.stack_hash for s in self.summaries))


def _parsed(records: Sequence[tuple[Path, RunRecord]]) -> tuple[list[Summary], _Parsed]:
    summaries = [summarize(str(path), record) for path, record in records]
    return summaries, _Parsed({s.path: r for s, (_, r) in zip(summaries, records, strict=True)})


MAX_DIRECTORY_ENTRIES = 100_000
MAX_DIRECTORY_DEPTH = 6


def _not_the_root(path: Path) -> None:
    """InputError for the filesystem's root, whatever it holds: a lean machine's / has fewer entries than the walk's
    bound, and walking it would read every JSON file of the system as a candidate record."""
    if Path(os.path.realpath(path)) == Path("/"):
        raise InputError(f"{path}: more than a directory of run records holds (it is the filesystem's root): not a "
                         "directory of run records", hint="give a store (--store), a results directory or a stack name")


def _record_files(path: Path) -> list[Path]:
    """The *.json files under `path` (not following links, at most 6 levels down); InputError when it holds more
    than 100,000 entries: `--stack /` names a filesystem, not a directory of records, and is not walked."""
    _not_the_root(path)
    found, seen = [], 0
    for folder, dirs, files in os.walk(path, onerror=lambda exc: None):
        seen += len(dirs) + len(files)
        if seen > MAX_DIRECTORY_ENTRIES:
            raise InputError(f"{path}: more than {MAX_DIRECTORY_ENTRIES} files and directories: not a directory of "
                             "records", hint="name a store (--store), a stack, or a directory of record files")
        if len(Path(folder).relative_to(path).parts) >= MAX_DIRECTORY_DEPTH:
            dirs.clear()
        found += [Path(folder) / f for f in files if f.endswith(".json") and not f.endswith(SELECTION_SUFFIX)]
    return sorted(found)


def _directory_files(path: Path, warn: Callable[[str], None]) -> list[tuple[Path, RunRecord]]:
    """The readable records of a directory of record JSON files (not a store); others are skipped, named."""
    out = []
    for file in _json_files(path):
        try:
            out.append((file, read_record(file)))
        except UnreadableRecord as exc:
            warn(f"warning: {exc.message}; skipped")
        except FileNotFoundError:
            continue
    return out


MAX_DIR_ENTRIES = 100_000  # a directory of run records, not a filesystem: `--stack /` is refused, never walked
MAX_DIR_DEPTH = 8


def _json_files(root: Path) -> list[Path]:
    """The record files (*.json) under `root`, sorted: a bounded walk (entries, depth; no symlinked directories);
    ResultsError when `root` holds more than a directory of records would."""
    _not_the_root(root)
    found: list[Path] = []
    seen = 0
    todo = [(root, 0)]
    while todo:
        folder, depth = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # unreadable or gone (a process's /proc entry): nothing of ours
        seen += len(entries)
        if seen > MAX_DIR_ENTRIES:
            raise InputError(f"{root}: more than {MAX_DIR_ENTRIES:,} files and directories; not a directory of "
                               "run records", hint="give a store (--store), a results directory or a stack name")
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_DIR_DEPTH:
                        todo.append((Path(entry.path), depth + 1))
                elif (entry.name.endswith(".json") and not entry.name.endswith(SELECTION_SUFFIX)
                      and entry.is_file()):
                    found.append(Path(entry.path))
            except OSError:
                continue
    return sorted(found)


@dataclass(frozen=True)
class SavedSelection:
    """A selection file's content: a store, an optional stack selector, and filters."""

    store: str
    stack: str | None
    filters: Filters


def read_selection_file(path: Path) -> SavedSelection:
    """Parse a ``*.selection.json``; relative store paths are relative to the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable selection file ({exc})") from None
    loc = Location(str(path))

    def bad(message: str, expected: str, found: Any) -> InputError:
        return InputError(f"{path}: invalid selection file",
                          [Diagnostic(message, loc, expected=expected, found=repr(found))])

    if not isinstance(data, dict) or data.get("format") != SELECTION_FORMAT:
        raise bad("not a repro selection", f'{{"format": "{SELECTION_FORMAT}", "store": ..., ...}}',
                  data.get("format") if isinstance(data, dict) else data)
    store = data.get("store")
    if not isinstance(store, str) or not store:
        raise bad("store: missing", "the store directory as a string", store)
    stack = data.get("stack")
    if stack is not None and not isinstance(stack, str):
        raise bad("stack: not a string", "a stack name, hash or manifest path", stack)
    raw = data.get("filters") or {}
    if not isinstance(raw, dict) or set(raw) - {"models", "batches", "precisions", "workers", "hosts"}:
        raise bad("filters: unknown keys", "models, batches, precisions, workers, hosts", raw)
    filters = parse_filters(**{k: [str(x) for x in (v if isinstance(v, list) else [v])] for k, v in raw.items()})
    root = Path(store)
    if not root.is_absolute():
        root = path.parent / root
    return SavedSelection(str(root), stack, filters)


def write_selection_file(path: Path, store: Path, stack: str | None, filters: Filters) -> Path:
    """Write a selection file that `repro compare` accepts as OLD or NEW."""
    if not path.name.endswith(SELECTION_SUFFIX):
        raise InputError(f"{path}: a selection file's name must end in {SELECTION_SUFFIX}")
    data: dict[str, Any] = {"format": SELECTION_FORMAT, "store": str(store.resolve()), "stack": stack,
                            "filters": filters.as_dict()}
    write_json_atomic(path, data)
    return path


def _by_name_or_hash(selector: str, store: Store) -> tuple[list[Summary], str]:
    named = store.summaries(stacks=[selector])
    if named:
        return named, f"stack {selector}"
    if _HEX.match(selector):
        hashes = [h for h in store.stack_hashes() if h.startswith(selector)]
        if len(hashes) > 1:
            raise ResultsError(f"stack hash prefix {selector} is ambiguous in {store.root}: {', '.join(hashes)}")
        if hashes:
            return store.summaries(stack_hashes=hashes[:1]), f"stack hash {hashes[0]}"
    return [], ""


_Resolved = tuple[list[Summary], str, Store, RecordSource, Filters]


def _resolve(selector: str, store: Store, depth: int) -> _Resolved:
    path = Path(selector)
    if path.is_file() and path.name.endswith(SELECTION_SUFFIX):
        if depth > 0:
            raise InputError(f"{path}: a selection file cannot name another selection file")
        saved = read_selection_file(path)
        inner = store.other(saved.store)
        if saved.stack is None:
            return inner.summaries(), f"selection {path.name} (every run)", inner, inner, saved.filters
        summaries, what, inner, source, _ = _resolve(saved.stack, inner, depth + 1)
        return summaries, f"selection {path.name}: {what}", inner, source, saved.filters
    if path.is_file() and path.suffix in (".yaml", ".yml"):
        from repro.manifest import load_stack

        loaded = load_stack(path)
        return (store.summaries(stack_hashes=[loaded.hash]), f"manifest {path} (hash {loaded.hash})", store, store,
                Filters())
    if path.is_file() and path.suffix == ".json":
        summaries, parsed = _parsed([(path, Store.load(path))])
        return summaries, f"record file {path}", store, parsed, Filters()
    if path.is_dir() and (path / "runs").is_dir():
        inner = store.other(path)
        return inner.summaries(), f"results directory {path}", inner, inner, Filters()
    if path.is_dir():
        summaries, parsed = _parsed(_directory_files(path, store.warn))
        return summaries, f"results directory {path}", store.other(path), parsed, Filters()
    summaries, what = _by_name_or_hash(selector, store)
    return summaries, what, store, store, Filters()


def _no_runs_hint(selector: str, store: Store) -> str:
    """What to give instead: the closest stack names stored, else the kinds of selector."""
    import difflib

    names = sorted({s.stack for s in store.summaries()})
    close = difflib.get_close_matches(selector, names, n=2)
    if close:
        return f"did you mean {' or '.join(close)}? (`repro results` lists what is stored)"
    if not names:
        return "the store holds no runs: `repro bench` stores them there (or give --store)"
    return ("give a stack name, a stack hash (or prefix), a manifest file, a results directory or a "
            "*.selection.json file; `repro results` lists what is stored")


def select(selector: str, store: Store, filters: Filters = Filters()) -> Selection:
    """Resolve a selector to its runs; matching nothing raises InputError naming selector and store (exit 2).

    Only the index is read here; the records themselves are parsed when `Selection.records` is first used.
    """
    summaries, what, used, source, saved = _resolve(selector, store, 0)
    if not summaries:  # a misspelt or unrun stack is bad input (exit 2), not a failed run
        raise InputError(f"'{selector}' matches no runs in {used.root}", hint=_no_runs_hint(selector, used))
    wanted = saved.narrowed(filters)
    kept = [s for s in summaries if wanted.matches(s)]
    if not kept:
        raise InputError(f"'{selector}' ({what}, {len(summaries)} runs in {used.root}) has no run matching "
                           f"{wanted.describe()}")
    if not wanted.empty:
        what += f" [{wanted.describe()}]"
    return Selection(selector, what, str(used.root), tuple(kept), source)


def records_of(selections: Sequence[Selection]) -> list[RunRecord]:
    """Every record of several selections, each once (by id)."""
    seen: dict[str, RunRecord] = {}
    for sel in selections:
        for r in sel.records:
            seen.setdefault(r.id, r)
    return list(seen.values())
