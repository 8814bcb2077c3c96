"""The results store: a directory of JSON files, one per record, written atomically.

Layout under the store root (default ./results, or $REPRO_STORE):

    runs/<stack-hash>/<record-id>.json   one RunRecord each
    locks/<stack-hash>.json              what `repro up` found inside the stack's image
    facts/<inventory-key>/<host>.json    what `repro prepare` gathered on each host
    logs/                                build and run logs

Each file is written to a temporary name in the same directory and renamed into place, so a reader
never sees half a file and two sweeps writing at once never corrupt each other (ids are unique; there
is no shared index to update).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from repro.errors import ResultsError
from repro.results.provenance import HostFacts, ImageLock
from repro.results.record import RunRecord, parse_record

DEFAULT_ROOT = "results"


def default_root() -> Path:
    """$REPRO_STORE, else ./results."""
    return Path(os.environ.get("REPRO_STORE", DEFAULT_ROOT))


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to `path` so that readers see either the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def inventory_key(inventory: str | Path) -> str:
    """A short, stable key for an inventory path: its name plus a digest of its absolute path."""
    p = Path(inventory).resolve()
    digest = hashlib.sha256(str(p).encode()).hexdigest()[:8]
    return f"{p.name}-{digest}"


class Store:
    """A results directory."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_root()

    # -- records
    def run_path(self, record: RunRecord) -> Path:
        return self.root / "runs" / record.stack.hash / f"{record.id}.json"

    def put(self, record: RunRecord) -> Path:
        """Store a record (atomically); returns its path."""
        path = self.run_path(record)
        write_json_atomic(path, record.model_dump(mode="json"))
        return path

    @staticmethod
    def load(path: Path) -> RunRecord:
        """One record JSON file, checked and migrated to the current schema (repro.results.record.parse_record)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ResultsError(f"{path}: unreadable record ({exc})") from None
        return parse_record(data, str(path))

    def records(self, where: Callable[[RunRecord], bool] | None = None, *, stack_hash: str | None = None
                ) -> list[RunRecord]:
        """Every record (optionally of one stack hash, optionally filtered), oldest first."""
        base = self.root / "runs"
        if stack_hash:
            paths = sorted((base / stack_hash).glob("*.json"))
        else:
            paths = sorted(base.glob("*/*.json"), key=lambda p: p.name)
        out = [self.load(p) for p in paths]
        return [r for r in out if where is None or where(r)]

    def get(self, record_id: str) -> RunRecord:
        """The record with this id (or unique id prefix)."""
        matches = list((self.root / "runs").glob(f"*/{record_id}*.json"))
        if not matches:
            raise ResultsError(f"no record {record_id} in {self.root}")
        if len(matches) > 1:
            raise ResultsError(f"record id {record_id} is ambiguous in {self.root} ({len(matches)} records)")
        return self.load(matches[0])

    def stack_hashes(self) -> list[str]:
        return sorted(p.name for p in (self.root / "runs").glob("*") if p.is_dir())

    # -- locks
    def lock_path(self, stack_hash: str) -> Path:
        return self.root / "locks" / f"{stack_hash}.json"

    def put_lock(self, stack_hash: str, lock: ImageLock) -> Path:
        path = self.lock_path(stack_hash)
        write_json_atomic(path, lock.model_dump(mode="json"))
        return path

    def lock(self, stack_hash: str) -> ImageLock | None:
        """The stack's image lock, or None when `repro up` has not locked it in this store."""
        path = self.lock_path(stack_hash)
        if not path.exists():
            return None
        try:
            return ImageLock.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise ResultsError(f"{path}: unreadable lock ({str(exc).splitlines()[0]})") from None

    # -- host facts
    def facts_dir(self, inventory: str | Path) -> Path:
        return self.root / "facts" / inventory_key(inventory)

    def put_facts(self, inventory: str | Path, host: str, facts: HostFacts) -> Path:
        path = self.facts_dir(inventory) / f"{host}.json"
        write_json_atomic(path, facts.model_dump(mode="json"))
        return path

    def facts(self, inventory: str | Path) -> dict[str, HostFacts]:
        """Host name -> facts last gathered by `repro prepare` for this inventory (unreadable files skipped)."""
        out = {}
        for path in sorted(self.facts_dir(inventory).glob("*.json")):
            try:
                out[path.stem] = HostFacts.model_validate(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
        return out

    def logs_dir(self) -> Path:
        path = self.root / "logs"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def __iter__(self) -> Iterator[RunRecord]:
        return iter(self.records())
