"""The store's index: one SQLite row per record file, kept consistent with the files.

The JSON records are the truth and stay human-readable; the index (``index.sqlite`` at the store's root)
caches what each file holds, a small `Summary` (id, stack, the settings queries filter on, status,
images/sec as repro.results.metrics computes it), with the file's (size, mtime_ns, inode) when it was read.
`Index.sync` brings it up to date with one scan of the files (a `stat` each): a directory whose listing
(names, sizes, mtimes, inodes) has the digest stored at the last sync is done; in another, it reads only
the files that are new or changed and drops the rows of files that are gone. Queries then read the rows
they need, and the caller parses only the records it asked for.

- Racy files: a file changed in place within one timestamp tick of being indexed keeps its size and
  mtime, so a file whose mtime is within RACY_NS of the moment it was indexed is read again at the next
  sync (git's "racy clean" rule).
- The summary depends on the record schema and the metric definitions: the index is keyed by a digest of
  those modules' source and rebuilt from the files when they change.
- Concurrent writers and readers: WAL journal and a busy timeout; a sync parses files outside the write
  lock and applies their rows in short transactions.
- A corrupt index file is deleted and rebuilt. A store the user cannot write to, or one on a network
  filesystem (where SQLite's locking cannot be trusted), keeps its index in the user's cache directory;
  $REPRO_INDEX_DIR puts every store's index in a directory of one's choice.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import ResultsError
from repro.results import index_files as files
from repro.results.index_files import INDEX_NAME, Signature, index_path
from repro.results.indexed import BRIEF_COLUMNS, Brief
from repro.results.jsonfile import UnreadableRecord, read_record
from repro.results.summary import COLUMNS, Broken, Summary, columns, summarize, unusable

if TYPE_CHECKING:  # listing from the index needs neither pydantic nor numpy
    from repro.results.record import RunRecord

__all__ = ["INDEX_NAME", "Broken", "Index", "Summary", "index_key", "index_path", "summarize"]

INDEX_FORMAT = 2  # 2: each record's brief (repro.results.indexed)
RACY_NS = 2_000_000_000
CHUNK = 500  # files parsed between two commits while indexing
ANNOUNCE = 2000  # say so on stderr when a sync has to read more files than this
BUSY_TIMEOUT_S = 60.0
# modules whose code decides a summary's content: a change there rebuilds every index
SUMMARY_MODULES = ("repro.results.record", "repro.results.metrics", "repro.results.stats", "repro.results.summary",
                   "repro.results.index", "repro.results.indexed", "repro.results.steady", "repro.results.hardware",
                   "repro.results.conditions", "repro.results.fabric")


def index_key() -> str:
    """A digest of the index format and of the code that computes summaries."""
    digest = hashlib.sha256(f"repro.index/{INDEX_FORMAT}".encode())
    for name in SUMMARY_MODULES:
        spec = importlib.util.find_spec(name)
        if spec and spec.origin and os.path.exists(spec.origin):
            digest.update(Path(spec.origin).read_bytes())
    return digest.hexdigest()[:16]


def _corrupt(exc: sqlite3.DatabaseError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    return type(exc) is sqlite3.DatabaseError


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    dir TEXT NOT NULL, name TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, checked_ns INTEGER NOT NULL,
    error TEXT, newer INTEGER NOT NULL DEFAULT 0,
    {", ".join(COLUMNS)}, {", ".join(BRIEF_COLUMNS)},
    PRIMARY KEY (dir, name));
CREATE TABLE IF NOT EXISTS dirs (dir TEXT PRIMARY KEY, digest TEXT NOT NULL, settled INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS files_name ON files (name);
CREATE INDEX IF NOT EXISTS files_stack ON files (stack);
"""

class Index:
    """The SQLite index of one store's runs/ directory."""

    def __init__(self, root: Path, *, message: Callable[[str], None] | None = None) -> None:
        self.root = root
        self.runs = root / "runs"
        self.path = index_path(root)
        self.message = message or (lambda text: None)
        self._db: sqlite3.Connection | None = None

    # -- connection
    def _connect(self) -> sqlite3.Connection:
        candidates = [self.path, files.cache_dir() / files.cache_name(self.root)]
        for path in candidates:
            if not files.writable(path):
                continue
            try:
                if not path.exists():  # created with the mode the umask gives (SQLite's own is 0644)
                    files.create_empty(path)
                db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            except (OSError, sqlite3.OperationalError):
                continue
            self.path = path
            return self._prepare(db)
        self.path = Path(":memory:")  # nowhere to keep it: index this command's reads only
        return self._prepare(sqlite3.connect(":memory:", isolation_level=None))

    @staticmethod
    def _prepare(db: sqlite3.Connection) -> sqlite3.Connection:
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        key = index_key()
        if _stored_key(db) == key:
            return db
        with _transaction(db):  # under the write lock: another process may have just built it
            if _stored_key(db) != key:
                db.execute("DROP TABLE IF EXISTS files")
                db.execute("DROP TABLE IF EXISTS dirs")
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    db.execute(statement)
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('key', ?)", (key,))
        return db

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._guarded(self._connect)
        return self._db

    def _reset(self) -> None:
        """Delete a corrupt index (and its journal files); the next use rebuilds it from the records."""
        if self._db is not None:
            self._db.close()
            self._db = None
        if str(self.path) != ":memory:":
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self.message(f"warning: the results index {self.path} was corrupt; rebuilt from the record files")

    def _guarded(self, fn: Callable[[], Any]) -> Any:
        """fn(), after deleting the index once if SQLite finds it corrupt; other SQLite errors as ResultsError."""
        for attempt in (1, 2):
            try:
                return fn()
            except sqlite3.DatabaseError as exc:
                if attempt == 2 or not _corrupt(exc):
                    name = getattr(exc, "sqlite_errorname", None)
                    raise ResultsError(f"results index {self.path}: {exc}" + (f" ({name})" if name else ""),
                                       hint=f"another repro may hold it locked; deleting {self.path}* is safe "
                                       "(the next command rebuilds it from the record files)") from None
                self._reset()
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __del__(self) -> None:
        # sqlite3's connection is in a reference cycle with its statement cache, so it would stay open (holding
        # the WAL files) until the garbage collector runs: close it when the index goes.
        db, self._db = getattr(self, "_db", None), None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()

    # -- keeping it consistent with the files
    def sync(self) -> None:
        """Bring the index up to date with runs/: read new and changed files, forget removed ones."""
        self._guarded(self._sync)

    def _sync(self) -> None:
        db = self.db
        runs = str(self.runs)
        on_disk = sorted(e.name for e in files.scandir(self.runs) if e.is_dir() and not e.name.startswith("."))
        known = {d: (digest, settled) for d, digest, settled in db.execute("SELECT dir, digest, settled FROM dirs")}
        indexed = {r[0] for r in db.execute("SELECT DISTINCT dir FROM files")} | set(known)
        for gone in indexed - set(on_disk):
            if (self.runs / gone).is_dir():
                continue  # made by a writer since the listing: the next sync reads it
            with _transaction(db):
                db.execute("DELETE FROM files WHERE dir = ?", (gone,))
                db.execute("DELETE FROM dirs WHERE dir = ?", (gone,))
        work = []
        for directory in on_disk:
            now = time.time_ns()  # before the stat calls: a file changed after them has a later mtime
            disk = files.listing(os.path.join(runs, directory))
            digest = files.listing_digest(disk)
            if known.get(directory) == (digest, 1):
                continue  # nothing added, removed or changed since a sync that found every file settled
            changed, removed = self._diff(directory, disk, now)
            work.append((directory, digest, int(all(sig[1] < now - RACY_NS for sig in disk.values())), changed,
                         removed))
        reading = sum(len(w[3]) for w in work)
        if reading > ANNOUNCE:
            self.message(f"indexing {reading:,} record files in {self.root} (once; later commands read the index)")
        for directory, digest, settled, changed, removed in work:
            self._apply(directory, changed, removed)
            with _transaction(db):
                db.execute("INSERT OR REPLACE INTO dirs (dir, digest, settled) VALUES (?, ?, ?)",
                           (directory, digest, settled))

    def _diff(self, directory: str, disk: dict[str, Signature], now: int
              ) -> tuple[list[tuple[str, Signature, int]], list[str]]:
        """Files of one directory to read (new, changed, racy) and names whose files are gone."""
        rows = {r[0]: r[1:] for r in self.db.execute(
            "SELECT name, size, mtime_ns, ino, checked_ns FROM files WHERE dir = ?", (directory,))}
        changed = []
        for name, sig in disk.items():
            row = rows.get(name)
            if row is None or tuple(row[:3]) != sig or sig[1] >= row[3] - RACY_NS:
                changed.append((name, sig, now))
        return changed, [n for n in rows if n not in disk]

    def _apply(self, directory: str, changed: list[tuple[str, Signature, int]], removed: list[str]) -> None:
        db = self.db
        for start in range(0, len(changed), CHUNK):
            rows = []
            for name, sig, checked in changed[start:start + CHUNK]:
                row = self._row(directory, name, sig, checked)
                if row is None:
                    removed.append(name)
                else:
                    rows.append(row)
            with _transaction(db):
                db.executemany(_UPSERT, rows)
        if removed:
            with _transaction(db):  # a writer may have put the file back since the scan
                gone = [(directory, n) for n in removed if not (self.runs / directory / n).exists()]
                db.executemany("DELETE FROM files WHERE dir = ? AND name = ?", gone)

    def _row(self, directory: str, name: str, sig: Signature, checked: int) -> tuple | None:
        try:
            record = read_record(self.runs / directory / name)
        except FileNotFoundError:
            return None
        except UnreadableRecord as exc:
            return (directory, name, *sig, checked, *unusable(exc.reason, exc.newer))
        return (directory, name, *sig, checked, *columns(f"{directory}/{name}", record))

    def add(self, path: Path, record: RunRecord) -> None:
        """Index a file just written (by Store.put), so the next sync need not read it."""
        st = path.stat()
        directory, name = path.parent.name, path.name
        row = (directory, name, st.st_size, st.st_mtime_ns, st.st_ino, time.time_ns(),
               *columns(f"{directory}/{name}", record))

        def add() -> None:
            with _transaction(self.db):
                self.db.execute(_UPSERT, row)

        self._guarded(add)

    def forget(self, paths: Iterable[str]) -> None:
        """Drop the rows of these files (relative to runs/), removed by the caller."""
        pairs = [tuple(p.split("/", 1)) for p in paths]

        def forget() -> None:
            with _transaction(self.db):
                self.db.executemany("DELETE FROM files WHERE dir = ? AND name = ?", pairs)

        self._guarded(forget)

    # -- queries
    def query(self, *, dirs: Sequence[str] | None = None, stacks: Sequence[str] | None = None,
              name_prefix: str | None = None, where: Mapping[str, Sequence[Any]] | None = None) -> list[Summary]:
        """Summaries of readable records, oldest first (ids sort by time), narrowed by any of the arguments."""
        clauses, params = ["error IS NULL"], []
        for column, values in (("dir", dirs), ("stack", stacks), *((where or {}).items())):
            if values is not None:
                if column not in COLUMNS and column != "dir":
                    raise ValueError(f"no column {column} in the index")
                clauses.append(f"{column} IN ({', '.join('?' * len(values))})")
                params += list(values)
        if name_prefix is not None:
            clauses.append("name >= ? AND name < ?")
            params += [name_prefix, name_prefix + "\U0010ffff"]
        sql = f"SELECT dir || '/' || name, {', '.join(COLUMNS)} FROM files WHERE {' AND '.join(clauses)} " \
              "ORDER BY name, dir"
        return self._guarded(lambda: list(map(Summary._make, self.db.execute(sql, params))))

    def broken(self, *, name_prefix: str | None = None) -> list[Broken]:
        """Files the index could not read (optionally only those whose name starts with a prefix)."""
        sql, params = "SELECT dir || '/' || name, error, newer FROM files WHERE error IS NOT NULL", []
        if name_prefix is not None:
            sql += " AND name >= ? AND name < ?"
            params = [name_prefix, name_prefix + "\U0010ffff"]
        return self._guarded(lambda: [Broken(p, e, bool(n)) for p, e, n in self.db.execute(sql + " ORDER BY name",
                                                                                            params)])

    def briefs(self, dirs: Sequence[str]) -> dict[str, Brief]:
        """The briefs of the readable records in these directories (repro.results.indexed), by path under runs/."""
        def briefs() -> dict[str, Brief]:
            out: dict[str, Brief] = {}
            for start in range(0, len(dirs), CHUNK):  # SQLite bounds the variables of one statement
                part = list(dirs[start:start + CHUNK])
                rows = self.db.execute(f"SELECT dir || '/' || name, {', '.join(BRIEF_COLUMNS)} FROM files WHERE error "
                                       f"IS NULL AND b_settings IS NOT NULL AND dir IN ({', '.join('?' * len(part))})",
                                       part)
                out.update((row[0], row[1:]) for row in rows)
            return out

        return self._guarded(briefs)

    def dirs(self) -> list[str]:
        """The directories under runs/ that hold indexed files."""
        return self._guarded(lambda: [r[0] for r in self.db.execute("SELECT DISTINCT dir FROM files ORDER BY dir")])


_STORED = (*COLUMNS, *BRIEF_COLUMNS)
_UPSERT = (f"INSERT OR REPLACE INTO files (dir, name, size, mtime_ns, ino, checked_ns, error, newer, "
           f"{', '.join(_STORED)}) VALUES ({', '.join('?' * (8 + len(_STORED)))})")


def _stored_key(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'key'").fetchone()
    except sqlite3.OperationalError:  # no such table: a new index
        return None
    return row[0] if row else None


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
