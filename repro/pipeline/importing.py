"""`repro import`: logs (or a published table) -> records of a stack -> the store -> what became of each file.

The request is checked here (logs or a table, --set patterns that match), the stack reference is made once,
every good file's runs are stored whatever the bad ones, and the result says what the CLI prints; its
`problem` is the exit-2 error a bad or unsettled file leaves, raised by the CLI after printing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from repro.errors import InputError
from repro.results.importers.batch import FileResult
from repro.results.record import RunRecord, StackRef


@dataclass(frozen=True)
class ImportRequest:
    """What to import and where: log files (or directories of them) or one published table."""

    stack: str  # a stack name or a manifest file
    files: tuple[str, ...] = ()
    table: str | None = None
    store: str | None = None  # the store's root; None: the default store
    overrides: tuple[str, ...] = ()  # --set values
    hosts: int | None = None
    precision: str | None = None
    xla: bool = False
    log_format: str = "auto"

    def given(self) -> list[str]:
        """Every --set value, the shorthand options (--hosts, --precision, --xla) included."""
        if self.hosts is not None and self.hosts < 1:
            raise InputError(f"--hosts: expected a positive number, found {self.hosts}")
        return [*self.overrides, *([f"hosts={self.hosts}"] if self.hosts is not None else []),
                *([f"precision={self.precision}"] if self.precision else []), *(["xla=true"] if self.xla else [])]


@dataclass(frozen=True)
class ImportedRun:
    """One run stored: where it came from (run number and lines of its file) and its figure."""

    number: int | None  # the run's number in its file (1 = first), None when the source does not say
    id: str
    lines: str | None
    workload: str
    model: str | None
    workers: int
    status: str
    figure: float | None
    unit: str  # images/sec, or tokens/sec or samples/sec as an imported training log states


@dataclass(frozen=True)
class ImportedFile:
    """What became of one file: imported (its runs), skipped (why) or failed (its error)."""

    file: str
    status: str  # imported, skipped or failed
    runs: tuple[ImportedRun, ...] = ()
    message: str = ""
    warnings: tuple[str, ...] = ()
    unsettled: tuple[str, ...] = ()  # complete runs not stored until --set gives what they lack


@dataclass(frozen=True)
class Imported:
    """The files (or the table) imported into the store at `root` as `stack`."""

    root: Path
    stack: StackRef
    files: tuple[ImportedFile, ...]
    table: bool = False  # a published table rather than logs
    problem: InputError | None = None  # bad or unsettled files: the error the command exits with

    @property
    def runs(self) -> tuple[ImportedRun, ...]:
        return tuple(r for f in self.files for r in f.runs)

    def count(self, status: str) -> int:
        """How many files ended `status` (imported, skipped, failed)."""
        return sum(1 for f in self.files if f.status == status)


def _run(record: RunRecord) -> ImportedRun:
    from repro.results.metrics import throughput

    source = record.metrics.get("source", {})
    source = source if isinstance(source, dict) else {}
    items = record.metrics.get("items")
    s = record.settings
    return ImportedRun(number=source["run"] + 1 if isinstance(source.get("run"), int) else None, id=record.id,
                       lines=None if source.get("lines") is None else str(source["lines"]), workload=s.workload,
                       model=s.model, workers=s.workers, status=record.status, figure=throughput(record),
                       unit=f"{items}/sec" if items in ("tokens", "samples") else "images/sec")


def _file(result: FileResult) -> ImportedFile:
    return ImportedFile(result.file, result.status, tuple(_run(r) for r in result.records), result.message,
                        tuple(result.warnings), tuple(result.unsettled))


def import_runs(request: ImportRequest) -> Imported:
    """Import the request's logs or table into its store; the good files' runs are stored whatever the bad ones."""
    from repro.inputs import expand_directories
    from repro.results.importers import import_stack, parse_overrides, unmatched

    files = expand_directories(list(request.files))
    if bool(request.table) == bool(files):
        raise InputError("give log FILEs or --table CSV (one of the two)")
    overrides = parse_overrides(request.given())
    if request.table and overrides:
        raise InputError("--set, --hosts, --precision and --xla are for logs; a table states settings in its columns")
    stray = unmatched(overrides, files)
    if stray:
        raise InputError(f"--set {stray[0].given!r}: the pattern matches none of the files given")
    stack = import_stack(request.stack)
    if request.table:
        return _import_table(request.table, stack, request.store)
    return _import_logs(files, stack, overrides, request)


def _import_table(table: str, stack: StackRef, root: str | None) -> Imported:
    from repro.results.importers import known_sources, source_key
    from repro.results.published import import_table
    from repro.results.store import Store

    store = Store(root)
    records = import_table(table, stack)
    known = known_sources(store.records())
    again = next((known[key] for r in records[:1] if (key := source_key(r)) and key in known), None)
    if again:
        message = (f"already imported into stack {stack.name} (same content as records "
                   f"{', '.join(again[:3])}{'...' if len(again) > 3 else ''})")
        return Imported(store.root, stack, (ImportedFile(table, "skipped", message=message),), table=True)
    for record in records:
        store.put(record)
    return Imported(store.root, stack, (ImportedFile(table, "imported", tuple(_run(r) for r in records)),),
                    table=True)


def _import_logs(files: list[str], stack: StackRef, overrides: tuple, request: ImportRequest) -> Imported:
    from repro.results.importers import import_files, known_sources
    from repro.results.store import Store

    store = Store(request.store)
    results = import_files(files, stack, overrides, known_sources(store.records()), request.log_format)
    for record in (r for res in results for r in res.records):  # every good file's runs, whatever the bad ones
        store.put(record)
    return Imported(store.root, stack, tuple(_file(res) for res in results), problem=_problem(results))


def _problem(results: list[FileResult]) -> InputError | None:
    """The files that could not be imported, or the runs left out until --set gives what they lack."""
    bad = [res for res in results if res.status == "failed"]
    if bad:
        diagnostics = [d for res in bad for d in (res.error.diagnostics if res.error else [])]
        plain = [res.error.message for res in bad if res.error and not res.error.diagnostics]
        said = "; " + "; ".join(plain) if plain else ""
        return InputError(f"{len(bad)} of {len(results)} file{'s' if len(results) != 1 else ''} could not be "
                          f"imported: {', '.join(res.file for res in bad)}{said}", diagnostics)
    unsettled = [res for res in results if res.unsettled]
    if unsettled:  # the good runs are stored; the ones that lack a setting are not, and the command says so
        return InputError(f"{sum(len(res.unsettled) for res in unsettled)} run(s) not imported until --set gives "
                          f"what the log does not show: " + "; ".join(u for res in unsettled for u in res.unsettled),
                          hint="e.g. --set 'FILE#N:workers=8' for run N of FILE; the runs imported stay stored")
    return None
