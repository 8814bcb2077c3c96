"""The results store and its index: consistent with the files whatever happens to them by hand.

Records are written through Store.put or by hand (as a user with an editor, cp or rm would), and every
query is checked against the truth: the record files parsed one by one.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import stat
from pathlib import Path

import pytest

from repro.cli import main
from repro.errors import ResultsError
from repro.results.index import INDEX_NAME, Summary, summarize
from repro.results.provenance import HostFacts, ImageLock, Link, LockImage, LockSshd, LockStack
from repro.results.record import (
    SCHEMA_VERSION,
    InvalidRecordError,
    NewerSchemaError,
    RankResult,
    RunRecord,
    Settings,
    StackRef,
    now_iso,
    parse_record,
)
from repro.results.store import Store

STEPS = [0.1 + 0.001 * i for i in range(20)]


def make(stack: str = "a", *, n: int = 0, workers: int = 1, status: str = "ok", model: str = "resnet50",
         created: str = "2024-05-01T00:00:00+00:00", step: float = 0.1) -> RunRecord:
    ranks = [RankResult(rank=r, step_times=[step * (1 + 0.01 * (i % 3)) for i in range(20)], items_per_step=32)
             for r in range(workers)] if status == "ok" else []
    return RunRecord(id=f"20240501T0000{n:02d}Z-{n:08x}", created=created, status=status,
                     failure=None if status == "ok" else "mpirun exited with status 1",
                     stack=StackRef(name=stack, hash=f"{stack}000000000"[:12]),
                     settings=Settings(workload="cnn", model=model, batch_per_worker=32, workers=workers),
                     ranks=ranks)


def truth(store: Store) -> list[Summary]:
    """What the store holds, from the files themselves (every one parsed, no index)."""
    out = []
    for path in sorted(store.runs.glob("*/*.json"), key=lambda p: (p.name, p.parent.name)):
        try:
            out.append(summarize(f"{path.parent.name}/{path.name}", parse_record(json.loads(path.read_text()))))
        except (ValueError, ResultsError):
            continue
    return out


def fresh(root: Path, warnings: list[str] | None = None) -> Store:
    """A new Store on the same root, as the next command would open it."""
    return Store(root, warn=(warnings.append if warnings is not None else lambda text: None))


def age(path: Path, seconds: float = 3600) -> None:
    """Make a file look written long ago (older than the index's racy window)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - int(seconds * 1e9)))


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    return tmp_path / "results"


# -- parse_record ---------------------------------------------------------------------------------------

def test_parse_record_tells_a_newer_schema_from_an_invalid_record():
    data = make().model_dump(mode="json")
    assert parse_record(data) == make()
    with pytest.raises(NewerSchemaError, match=f"schema version {SCHEMA_VERSION + 1} is newer"):
        parse_record({**data, "schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(InvalidRecordError, match="schema version 0"):
        parse_record({**data, "schema_version": 0})
    with pytest.raises(InvalidRecordError, match="status"):
        parse_record({**data, "status": "maybe"})
    with pytest.raises(InvalidRecordError, match="not a record"):
        parse_record([data])


# -- the index follows the files --------------------------------------------------------------------------

def test_records_added_by_hand_are_found(root):
    store = Store(root)
    store.put(make("a", n=1))
    assert [s.id for s in fresh(root).summaries()] == [make(n=1).id]
    extra = make("b", n=2)
    path = root / "runs" / extra.stack.hash / f"{extra.id}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(extra.model_dump(mode="json")))  # as cp from another store would
    assert fresh(root).summaries() == truth(store)
    assert [r.id for r in fresh(root).records()] == [make(n=1).id, extra.id]
    assert [s.id for s in fresh(root).summaries(stacks=["b"])] == [extra.id]


def test_records_removed_by_hand_are_gone(root):
    store = Store(root)
    for n, stack in enumerate("aab"):
        store.put(make(stack, n=n))
    assert len(fresh(root).summaries()) == 3
    (root / "runs" / make("a").stack.hash / f"{make(n=0).id}.json").unlink()
    assert [s.id for s in fresh(root).summaries()] == [make(n=1).id, make(n=2).id]
    for path in (root / "runs" / make("b").stack.hash).iterdir():  # rm -r of a whole stack
        path.unlink()
    (root / "runs" / make("b").stack.hash).rmdir()
    assert [s.id for s in fresh(root).summaries()] == [make(n=1).id]
    assert fresh(root).summaries(stacks=["b"]) == []


def test_a_record_edited_by_hand_is_read_again(root):
    store = Store(root)
    path = store.put(make("a", n=1, model="resnet50"))
    age(path)
    assert fresh(root).summaries()[0].model == "resnet50"  # indexed while settled: trusted from now on
    path.write_text(path.read_text().replace('"resnet50"', '"vgg16"'))
    age(path, 1800)  # edited a while ago: only its size and mtime tell
    (summary,) = fresh(root).summaries()
    assert summary.model == "vgg16" and fresh(root).records()[0].settings.model == "vgg16"
    path.write_text(path.read_text().replace('"vgg16"', '"vgg19"'))  # same size, other mtime
    age(path, 900)
    assert fresh(root).summaries()[0].model == "vgg19"


def test_an_edit_that_keeps_size_and_mtime_right_after_indexing_is_still_seen(root):
    # the racy case: changed within one timestamp tick of being indexed, same size, same mtime
    store = Store(root)
    path = store.put(make("a", n=1, model="resnet50"))
    assert fresh(root).summaries()[0].model == "resnet50"
    before = path.stat()
    with open(path, "r+", encoding="utf-8") as fh:
        text = fh.read().replace('"resnet50"', '"resnet51"')
        fh.seek(0)
        fh.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    assert fresh(root).summaries()[0].model == "resnet51"


def test_a_stale_index_never_returns_wrong_records(root):
    """Random adds, removals, edits and moves by hand; after each, every query matches the files."""
    rng = random.Random(7)
    store = Store(root)
    n = 0
    for _ in range(40):
        files = sorted(root.glob("runs/*/*.json"))
        op = rng.choice(["put", "put", "add", "rm", "edit", "move"]) if files else "put"
        if op in ("put", "add"):
            n += 1
            rec = make(rng.choice("abc"), n=n, workers=rng.choice([1, 2, 4]),
                       status=rng.choice(["ok", "ok", "failed"]))
            if op == "put":
                Store(root).put(rec)
            else:
                path = root / "runs" / rec.stack.hash / f"{rec.id}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(rec.model_dump(mode="json")))
        elif op == "rm":
            rng.choice(files).unlink()
        elif op == "edit":
            path = rng.choice(files)
            data = json.loads(path.read_text())
            data["settings"]["workers"] = rng.choice([1, 2, 4, 8])
            data["stack"]["name"] = rng.choice("abc")
            path.write_text(json.dumps(data))
        else:  # mv to another stack's directory
            path = rng.choice(files)
            target = root / "runs" / rng.choice(["d00000000000", make("a").stack.hash]) / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
        if rng.random() < 0.5:
            for path in root.glob("runs/*/*.json"):
                age(path, rng.choice([0, 3600]))
        expected = truth(store)
        got = fresh(root)
        assert got.summaries() == expected, op
        for stack in "abc":
            assert got.summaries(stacks=[stack]) == [s for s in expected if s.stack == stack]
        assert [r.id for r in got.records()] == [s.id for s in expected]
        assert all(summarize(s.path, r) == s for s, r in zip(expected, got.records(), strict=True))


def test_a_record_changed_between_the_scan_and_its_reading_is_skipped_not_misreported(root):
    path = Store(root).put(make("a", n=1, workers=1))
    warnings: list[str] = []
    store = fresh(root, warnings)
    (summary,) = store.summaries(where={"workers": [1]})  # scanned: one 1-worker run
    data = json.loads(path.read_text())
    data["settings"]["workers"] = 8
    path.write_text(json.dumps(data))
    assert store.read(summary) is None
    assert any(str(path) in w and "changed while repro was reading" in w for w in warnings)
    assert fresh(root).summaries(where={"workers": [1]}) == []


def test_a_corrupt_index_is_rebuilt_from_the_records(root):
    store = Store(root)
    for n in range(3):
        store.put(make("a", n=n))
    index = root / INDEX_NAME
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not a database" * 100)
    warnings: list[str] = []
    assert [s.id for s in fresh(root, warnings).summaries()] == [make(n=n).id for n in range(3)]
    assert any("corrupt" in w and str(index) in w for w in warnings)
    with sqlite3.connect(index) as db:  # and it is a sound index again
        assert db.execute("SELECT count(*) FROM files").fetchone()[0] == 3


def test_an_index_from_another_repro_version_is_rebuilt(root):
    Store(root).put(make("a", n=1))
    assert fresh(root).summaries()
    with sqlite3.connect(root / INDEX_NAME) as db:
        db.execute("UPDATE meta SET value = 'older' WHERE key = 'key'")
        db.execute("UPDATE files SET model = 'stale'")
    assert fresh(root).summaries()[0].model == "resnet50"


def test_a_deleted_index_is_rebuilt(root):
    Store(root).put(make("a", n=1))
    (root / INDEX_NAME).unlink()
    assert [s.id for s in fresh(root).summaries()] == [make(n=1).id]


def test_another_process_never_removes_the_index_journal_under_an_open_store(root):
    """A long-lived process (a test session, a notebook) keeps a Store open and opens more: SQLite's POSIX locks
    must stay held, or another process closing the index takes itself for the last user and deletes the WAL files
    under the open connection (the next reads then fail with "disk I/O error")."""
    import subprocess
    import sys

    Store(root).put(make("a", n=1))
    kept = fresh(root)
    assert len(kept.summaries()) == 1
    assert len(fresh(root).summaries()) == 1  # a second Store in this process, opened and dropped
    other = f"from repro.results.store import Store; print(len(Store({str(root)!r}).summaries()))"
    out = subprocess.run([sys.executable, "-c", other], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}).stdout
    assert out.strip() == "1"
    assert (root / f"{INDEX_NAME}-wal").exists() and (root / f"{INDEX_NAME}-shm").exists()
    Store(root).put(make("a", n=2))
    assert len(kept.summaries()) == 2


def test_a_dropped_store_closes_its_index(root):
    Store(root).put(make("a", n=1))
    assert len(fresh(root).summaries()) == 1
    assert not (root / f"{INDEX_NAME}-wal").exists()  # the last connection closed, as SQLite then cleans up


def test_queries_parse_only_the_records_they_select(root, monkeypatch):
    store = Store(root)
    for n in range(6):
        store.put(make("ab"[n % 2], n=n))
    for path in root.glob("runs/*/*.json"):
        age(path)
    fresh(root).summaries()  # indexed once
    import repro.results.index
    import repro.results.store

    parsed: list[Path] = []

    def counting(path: Path) -> RunRecord:
        parsed.append(path)
        return original(path)

    original = repro.results.store.read_record
    monkeypatch.setattr(repro.results.store, "read_record", counting)
    monkeypatch.setattr(repro.results.index, "read_record", counting)
    from repro.results.select import select

    store = fresh(root)
    runs = select("a", store).records
    assert len(runs) == 3 and parsed == []  # settings and figures come from the index's briefs
    assert [r.ranks for r in runs[:1]]  # more than the brief holds: that record's file, and only it
    assert [p.parent.name for p in parsed] == [make("a").stack.hash]
    parsed.clear()
    assert [r.ranks for r in runs[:1]] and parsed == []  # parsed once per command
    assert len(select("a", store).records) == 3 and parsed == []


def test_no_store_directory_lists_nothing_and_creates_nothing(root):
    assert Store(root).summaries() == [] and Store(root).records() == []
    assert not root.exists()


def test_the_index_can_live_elsewhere(root, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_INDEX_DIR", str(tmp_path / "indexes"))
    Store(root).put(make("a", n=1))
    assert [s.id for s in fresh(root).summaries()] == [make(n=1).id]
    assert not (root / INDEX_NAME).exists() and list((tmp_path / "indexes").glob("results-*.sqlite"))


# -- unreadable record files --------------------------------------------------------------------------

def _break(root: Path) -> tuple[Path, Path, Path]:
    """Three unreadable files beside good ones: truncated, not JSON, from a newer repro."""
    good = make("a", n=1)
    folder = root / "runs" / good.stack.hash
    text = json.dumps(good.model_dump(mode="json"))
    truncated, garbage, newer = (folder / f"20240501T0000{n}Z-bad.json" for n in (7, 8, 9))
    truncated.write_text(text[: len(text) // 2])
    garbage.write_text("<html>not json</html>")
    newer.write_text(json.dumps({**good.model_dump(mode="json"), "schema_version": SCHEMA_VERSION + 1,
                                 "id": "future"}))
    return truncated, garbage, newer


def test_unreadable_files_are_skipped_with_a_warning_naming_each(root):
    store = Store(root)
    store.put(make("a", n=1))
    store.put(make("a", n=2, workers=2))
    bad = _break(root)
    warnings: list[str] = []
    assert [r.id for r in fresh(root, warnings).records()] == [make(n=1).id, make(n=2).id]
    assert len(warnings) == 3
    for path, reason in zip(bad, ("not JSON", "not JSON", "newer than this repro"), strict=True):
        assert any(str(path) in w and reason in w and "skipped" in w for w in warnings), warnings


def test_results_compare_and_scaling_go_on_past_unreadable_files(root, capsys):
    store = Store(root)
    for n, (stack, workers) in enumerate([("a", 1), ("a", 2), ("b", 1), ("b", 2)]):
        store.put(make(stack, n=n, workers=workers, step=0.1 if stack == "a" else 0.09))
    bad = _break(root)
    for argv in (["results"], ["results", "scaling", "a"], ["results", "scaling"], ["compare", "a", "b"]):
        code = main([*argv, "--store", str(root)])
        out = capsys.readouterr()
        assert code == 0, (argv, out.err)
        assert all(str(p) in out.err for p in bad), (argv, out.err)
        assert "future" not in out.out
    main(["results", "--store", str(root), "--json"])
    assert len(json.loads(capsys.readouterr().out)) == 4


def test_a_record_with_a_number_sqlite_cannot_hold_is_skipped_with_a_warning_in_every_command(root, capsys):
    """batch_per_worker of -1e20 parses as an int but overflows SQLite's INTEGER: the index raised OverflowError
    and `results` and `compare` failed for every run of the store."""
    store = Store(root)
    for n, (stack, workers) in enumerate([("a", 1), ("a", 2), ("b", 1), ("b", 2)]):
        store.put(make(stack, n=n, workers=workers, step=0.1 if stack == "a" else 0.09))
    data = make("a", n=9).model_dump(mode="json")
    data["settings"]["batch_per_worker"] = -100000000000000000000
    huge = root / "runs" / data["stack"]["hash"] / f"{data['id']}.json"
    huge.write_text(json.dumps(data))
    for argv in (["results"], ["results", "--json"], ["results", "scaling", "a"], ["compare", "a", "b"]):
        code = main([*argv, "--store", str(root)])
        out = capsys.readouterr()
        assert code == 0, (argv, out.err)
        assert str(huge) in out.err and "batch_per_worker" in out.err, (argv, out.err)
        assert "internal error" not in out.err and data["id"] not in out.out


def test_showing_an_unreadable_record_is_an_error_naming_it(root, capsys):
    Store(root).put(make("a", n=1))
    _, _, newer = _break(root)
    assert main(["results", "--store", str(root), "show", "20240501T00009Z"]) == 1
    err = capsys.readouterr().err
    assert f"error: {newer}: record schema version {SCHEMA_VERSION + 1} is newer" in err and "upgrade repro" in err


# -- a shareable store ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_files_get_the_mode_the_umask_gives(root, mask):
    old = os.umask(mask)
    try:
        store = Store(root)
        path = store.put(make("a", n=1))
        lock = store.put_lock("a", ImageLock(stack=LockStack(name="a", hash="a"), image=LockImage(tag="t", id="i"),
                                             sshd=LockSshd(port=22)))
        store.summaries()
    finally:
        os.umask(old)
    for file in (path, lock, root / INDEX_NAME):
        assert stat.S_IMODE(file.stat().st_mode) == 0o666 & ~mask, file
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o777 & ~mask


class _Host:
    def __init__(self, name: str, address: str) -> None:
        self.name, self.address = name, address


class _Inventory:
    def __init__(self, path: Path, hosts: list[tuple[str, str]]) -> None:
        self.path = str(path)
        self.hosts = tuple(_Host(*h) for h in hosts)


def facts(host: str, kernel: str) -> HostFacts:
    """Facts of a host as `repro prepare` stores them (only the kernel filled in)."""
    return HostFacts(host=host, kernel=kernel, interface=Link(name="eth0"))


def test_facts_survive_moving_the_checkout(root, tmp_path):
    hosts = [("h1", "10.0.0.1"), ("h2", "10.0.0.2")]
    before = _Inventory(tmp_path / "old-checkout" / "inventories" / "lab", hosts)
    after = _Inventory(tmp_path / "moved" / "inventories" / "lab", list(reversed(hosts)))
    store = Store(root)
    store.put_facts(before, "h1", facts("h1", "6.1"))
    assert store.facts(after) == {"h1": facts("h1", "6.1")}
    assert store.facts_dir(after).name.startswith("lab-")
    other = _Inventory(tmp_path / "inventories" / "lab", [("h1", "10.9.9.1"), ("h2", "10.9.9.2")])
    assert store.facts(other) == {}  # same names, other machines


def test_facts_stored_under_the_old_path_key_are_still_read(root, tmp_path):
    from repro.results.store import _legacy_inventory_key

    inventory = _Inventory(tmp_path / "inventories" / "lab", [("h1", "10.0.0.1")])
    old = root / "facts" / _legacy_inventory_key(inventory.path)
    old.mkdir(parents=True)
    (old / "h1.json").write_text(facts("h1", "5.10").model_dump_json())
    (old / "gone.json").write_text(facts("gone", "4.19").model_dump_json())  # a host no longer in the inventory
    assert Store(root).facts(inventory) == {"h1": facts("h1", "5.10")}
    Store(root).put_facts(inventory, "h1", facts("h1", "6.1"))
    assert Store(root).facts(inventory) == {"h1": facts("h1", "6.1")}


# -- rm and prune ---------------------------------------------------------------------------------------

def _ids(root: Path) -> list[str]:
    return sorted(p.stem for p in root.glob("runs/*/*.json"))


def test_rm_removes_runs_by_id_or_prefix_and_nothing_on_an_unknown_id(root, capsys):
    store = Store(root)
    for n in range(3):
        store.put(make("a", n=n))
    ids = _ids(root)
    assert main(["results", "rm", ids[0], ids[1][:18], "--store", str(root), "--dry-run"]) == 0
    assert "would remove 2 runs" in capsys.readouterr().out and _ids(root) == ids
    assert main(["results", "rm", ids[0], "nope", "--store", str(root)]) == 1
    assert "no record nope" in capsys.readouterr().err and _ids(root) == ids
    assert main(["results", "rm", "20240501T0000", "--store", str(root)]) == 1
    assert "ambiguous" in capsys.readouterr().err and _ids(root) == ids
    assert main(["results", "rm", ids[0], ids[1][:18], "--store", str(root)]) == 0
    assert "removed 2 runs" in capsys.readouterr().out
    assert _ids(root) == ids[2:] and [s.id for s in fresh(root).summaries()] == ids[2:]


def test_prune_removes_what_every_criterion_selects(root, capsys):
    store, now, old = Store(root), now_iso(), "2020-01-01T00:00:00+00:00"
    store.put(make("a", n=1, status="failed", created=old))
    store.put(make("a", n=2, status="failed", created=now))
    store.put(make("a", n=3, created=old))
    store.put(make("b", n=4, status="failed", created=now))
    store.put(make("b", n=5, workers=2, created=now))
    _, garbage, newer = _break(root)
    before = _ids(root)

    def prune(*argv: str) -> str:
        assert main(["results", "prune", *argv, "--store", str(root)]) == 0
        return capsys.readouterr().out

    assert "would remove 3 runs" in prune("--failed", "--dry-run") and _ids(root) == before
    assert "would remove 1 run " in prune("--failed", "--older-than", "2023-01-01", "--dry-run")
    assert main(["results", "prune", "--store", str(root)]) == 2
    assert "give what to remove" in capsys.readouterr().err
    assert main(["results", "prune", "--older-than", "soon", "--store", str(root)]) == 2
    assert "--older-than" in capsys.readouterr().err
    assert "removed 1 run " in prune("--failed", "--stack", "b")
    assert make(n=4).id not in _ids(root)
    assert "removed 2 runs" in prune("--older-than", "365d")
    assert [s.id for s in fresh(root).summaries()] == [make(n=2).id, make(n=5).id]
    out = prune("--unreadable")
    assert "removed 2 unreadable files" in out and not garbage.exists()
    assert newer.exists()  # a newer repro's record is data, not junk
    assert "removed 1 run " in prune("--stack", "b", "--workers", "2")
    assert [s.id for s in fresh(root).summaries()] == [make(n=2).id]
