"""The results store: a directory of JSON files, one per record, written atomically, with an index beside them.

Layout under the store root (default ./results, or $REPRO_STORE, or [site] store in repro.toml; docs/store.md
describes it in full):

    runs/<stack-hash>/<record-id>.json   one RunRecord each: the truth, human-readable
    index.sqlite                         what each record file holds, for fast queries (repro.results.index);
                                         a cache, rebuilt from runs/ when missing, stale or corrupt
    locks/<stack-hash>.json              what `repro up` found inside the stack's image
    facts/<inventory-key>/<host>.json    what `repro prepare` gathered on each host
    logs/                                build and run logs

Each file is written to a temporary name in the same directory and renamed into place, so a reader never
sees half a file and two sweeps writing at once never corrupt each other (ids are unique). Files get the
mode the umask gives (group-readable under the usual umasks), so a team can share a store.

A Store scans its files once (the first query syncs the index) and parses only the records a query needs.
A record file that cannot be read (not JSON, truncated, invalid, from a newer repro) is skipped with a
warning naming it; it never stops a command about other runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from repro.errors import ResultsError
from repro.results.index import Broken, Index, Summary, summarize
from repro.results.indexed import IndexedRun
from repro.results.jsonfile import UnreadableRecord, read_record, write_json_atomic

if TYPE_CHECKING:  # pydantic models: imported where used, so that listing the store stays light
    from repro.results.provenance import HostFacts, ImageLock
    from repro.results.record import RunRecord

__all__ = ["DEFAULT_ROOT", "Store", "Summary", "default_root", "inventory_key", "write_json_atomic"]

DEFAULT_ROOT = "results"
MAX_WARNINGS = 10  # unreadable files named one per line; more are counted


def default_root() -> Path:
    """$REPRO_STORE, else the site configuration's [site] store (repro.resources), else ./results."""
    from repro.resources import store_root

    return store_root(DEFAULT_ROOT)


class HostLike(Protocol):
    name: str
    address: str


class InventoryLike(Protocol):
    """What the store needs of an inventory (repro.hosts.inventory.Inventory has it)."""

    path: str
    hosts: Sequence[HostLike]


def _legacy_inventory_key(path: str | Path) -> str:
    """The key repro 0.1 used: the inventory's name plus a digest of its absolute path (lost on a move)."""
    p = Path(path).resolve()
    return f"{p.name}-{hashlib.sha256(str(p).encode()).hexdigest()[:8]}"


def inventory_key(inventory: InventoryLike | str | Path) -> str:
    """A stable key for an inventory: its name plus a digest of its hosts' names and addresses.

    It survives moving or copying the checkout that holds the inventory. A bare path (no hosts known)
    gives the old path-digest key.
    """
    if isinstance(inventory, (str, Path)):
        return _legacy_inventory_key(inventory)
    name = Path(inventory.path).name
    name = Path(name).stem if Path(name).suffix in (".yml", ".yaml", ".ini", ".cfg") else name
    hosts = sorted(f"{h.name}={h.address}" for h in inventory.hosts)
    return f"{name or 'inventory'}-{hashlib.sha256(json.dumps(hosts).encode()).hexdigest()[:8]}"


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Store:
    """A results directory."""

    def __init__(self, root: str | Path | None = None, *, warn: Callable[[str], None] | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()
        self.warn = warn or _stderr
        self._index: Index | None = None
        self._synced = False
        self._cache: dict[str, RunRecord] = {}
        self._others: dict[Path, Store] = {}

    # -- records
    @property
    def runs(self) -> Path:
        return self.root / "runs"

    def run_path(self, record: RunRecord) -> Path:
        return self.runs / record.stack.hash / f"{record.id}.json"

    @property
    def index(self) -> Index:
        if self._index is None:
            self._index = Index(self.root, message=self.warn)
        return self._index

    def put(self, record: RunRecord) -> Path:
        """Store a record (atomically) and index it; returns its path."""
        path = self.run_path(record)
        write_json_atomic(path, record.model_dump(mode="json"))
        with contextlib.suppress(ResultsError, OSError):  # the file is stored; the next sync indexes it
            self.index.add(path, record)
        return path

    @staticmethod
    def load(path: Path) -> RunRecord:
        """One record JSON file, checked: readable, a schema version this repro reads, valid."""
        try:
            return read_record(path)
        except FileNotFoundError:
            raise ResultsError(f"{path}: no such record file") from None

    def sync(self, *, again: bool = False) -> None:
        """Bring the index up to date with the files (once per Store unless `again`); warn about unreadable ones."""
        if self._synced and not again:
            return
        self._synced = True
        if not self.runs.is_dir():
            return
        self.index.sync()
        self._warn(self.index.broken())

    def _warn(self, broken: Sequence[Broken]) -> None:
        for b in broken[:MAX_WARNINGS]:
            self.warn(f"warning: {self.runs / b.path}: {b.reason}; skipped")
        if len(broken) > MAX_WARNINGS:
            self.warn(f"warning: {len(broken) - MAX_WARNINGS} more unreadable record files in {self.runs}; skipped "
                      "(`repro results prune --unreadable --dry-run` lists them)")

    def summaries(self, *, stack_hashes: Sequence[str] | None = None, stacks: Sequence[str] | None = None,
                  where: Mapping[str, Sequence[Any]] | None = None) -> list[Summary]:
        """Summaries of the readable records (optionally of some stack hashes or names), oldest first."""
        self.sync()
        if not self.runs.is_dir():
            return []
        return self.index.query(dirs=stack_hashes, stacks=stacks, where=where)

    def read(self, summary: Summary) -> RunRecord | None:
        """The record a summary stands for (parsed once per Store), or None, with a warning, if it changed since."""
        if summary.path in self._cache:
            return self._cache[summary.path]
        path = self.runs / summary.path
        try:
            record = read_record(path)
        except FileNotFoundError:
            self.warn(f"warning: {path}: removed while repro was reading the store; skipped")
            return None
        except UnreadableRecord as exc:
            self.warn(f"warning: {exc.message}; skipped")
            return None
        if summarize(summary.path, record).identity() != summary.identity():
            self.warn(f"warning: {path}: changed while repro was reading the store; skipped")
            return None
        self._cache[summary.path] = record
        return record

    def indexed(self, summaries: Iterable[Summary]) -> list[RunRecord]:
        """The runs of these summaries, in order, as the index holds them (repro.results.indexed): a record file is
        parsed only when a run is asked for more than its brief holds. A run without a brief is read whole."""
        wanted = list(summaries)
        briefs = self.index.briefs(sorted({s.dir for s in wanted})) if wanted else {}
        out: list[RunRecord] = []
        for s in wanted:
            texts = briefs.get(s.path)
            if texts is None:
                record = self.read(s)
                if record is not None:
                    out.append(record)
                continue
            out.append(IndexedRun(s, texts, partial(self._reread, s)))  # type: ignore[arg-type]  # a RunRecord's stand-in
        return out

    def _reread(self, summary: Summary) -> RunRecord:
        """The record file of a run read from the index; an error if it changed since (its figures were printed)."""
        record = self.read(summary)
        if record is None or summarize(summary.path, record) != summary:  # its figure too: never a mix of both
            raise ResultsError(f"{self.runs / summary.path}: changed or removed while repro was reading the store",
                               hint="run the command again")
        return record

    def read_all(self, summaries: Iterable[Summary]) -> list[RunRecord]:
        """The records of these summaries, in order, without those that could not be read."""
        return [r for r in (self.read(s) for s in summaries) if r is not None]

    def records(self, where: Callable[[RunRecord], bool] | None = None, *, stack_hash: str | None = None
                ) -> list[RunRecord]:
        """Every readable record (optionally of one stack hash, optionally filtered), oldest first."""
        out = self.read_all(self.summaries(stack_hashes=[stack_hash] if stack_hash else None))
        return [r for r in out if where is None or where(r)]

    def find(self, record_id: str) -> str:
        """The path (relative to runs/) of the one record file whose id starts with `record_id`."""
        self.sync()
        if not self.runs.is_dir() or not record_id:
            raise ResultsError(f"no record {record_id} in {self.root}")
        stem = record_id.removesuffix(".json")
        paths = [s.path for s in self.index.query(name_prefix=stem)]
        paths += [b.path for b in self.index.broken(name_prefix=stem)]
        if not paths:
            raise ResultsError(f"no record {record_id} in {self.root}")
        if len(paths) > 1:
            raise ResultsError(f"record id {record_id} is ambiguous in {self.root} ({len(paths)} records)")
        return paths[0]

    def get(self, record_id: str) -> RunRecord:
        """The record with this id (or unique id prefix)."""
        return self.load(self.runs / self.find(record_id))

    def remove(self, paths: Iterable[str]) -> list[str]:
        """Delete record files (paths relative to runs/) and their index rows; returns those deleted."""
        done = []
        for rel in paths:
            with contextlib.suppress(FileNotFoundError):
                (self.runs / rel).unlink()
            done.append(rel)
            self._cache.pop(rel, None)
        if done and self.runs.is_dir():
            self.index.forget(done)
        return done

    def broken(self) -> list[Broken]:
        """The record files that cannot be read."""
        self.sync()
        return self.index.broken() if self.runs.is_dir() else []

    def stack_hashes(self) -> list[str]:
        return sorted(p.name for p in self.runs.glob("*") if p.is_dir())

    def other(self, root: str | Path) -> Store:
        """The Store at another root, one per root for the life of this one (each scanned once)."""
        key = Path(root).resolve()
        if key == self.root.resolve():
            return self
        if key not in self._others:
            self._others[key] = Store(root, warn=self.warn)
        return self._others[key]

    # -- locks
    def lock_path(self, stack_hash: str) -> Path:
        return self.root / "locks" / f"{stack_hash}.json"

    def put_lock(self, stack_hash: str, lock: ImageLock) -> Path:
        path = self.lock_path(stack_hash)
        write_json_atomic(path, lock.model_dump(mode="json"))
        return path

    def put_stack(self, name: str, stack_hash: str, text: str) -> Path:
        """Keep a stack manifest (one restored from an archive): stacks/<name>-<hash>.yaml."""
        path = self.root / "stacks" / f"{name}-{stack_hash}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def lock(self, stack_hash: str) -> ImageLock | None:
        """The stack's image lock, or None when `repro up` has not locked it in this store."""
        path = self.lock_path(stack_hash)
        if not path.exists():
            return None
        from repro.results.provenance import ImageLock

        try:
            return ImageLock.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise ResultsError(f"{path}: unreadable lock ({str(exc).splitlines()[0]})") from None

    # -- host facts
    def facts_dir(self, inventory: InventoryLike | str | Path) -> Path:
        return self.root / "facts" / inventory_key(inventory)

    def put_facts(self, inventory: InventoryLike | str | Path, host: str, facts: HostFacts) -> Path:
        path = self.facts_dir(inventory) / f"{host}.json"
        write_json_atomic(path, facts.model_dump(mode="json"))
        return path

    def facts(self, inventory: InventoryLike | str | Path) -> dict[str, HostFacts]:
        """Host name -> facts last gathered by `repro prepare` for this inventory.

        Facts stored by repro 0.1 under the inventory's old path-digest key are read where the new key has
        none for a host (`repro prepare` writes under the new key).
        """
        out = _read_facts(self.facts_dir(inventory))
        if not isinstance(inventory, (str, Path)):
            legacy = _read_facts(self.root / "facts" / _legacy_inventory_key(inventory.path))
            names = {h.name for h in inventory.hosts}
            out.update({h: f for h, f in legacy.items() if h in names and h not in out})
        return out

    def logs_dir(self) -> Path:
        path = self.root / "logs"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def __iter__(self) -> Iterator[RunRecord]:
        return iter(self.records())


def _read_facts(directory: Path) -> dict[str, HostFacts]:
    from repro.results.provenance import HostFacts

    out = {}
    for path in sorted(directory.glob("*.json")):
        try:
            out[path.stem] = HostFacts.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):  # pydantic's ValidationError is a ValueError: unreadable facts are skipped
            continue
    return out
