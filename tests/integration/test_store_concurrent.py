"""Concurrent writers into one results store: real processes, real files, the real SQLite index.

Two writers put records at once (into one stack's directory or two) while a reader lists the store over
and over; afterwards every record file is complete and readable and the index lists exactly those files.
Two real `repro bench --runtime host` sweeps (of the probe workload: the store is the subject, not the
framework) into one store check the same through the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.results.index import summarize
from repro.results.record import parse_record
from repro.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
PER_WRITER = 150

WRITER = """
import sys, time
from pathlib import Path
from repro.results.record import RankResult, RunRecord, Settings, StackRef, new_id, now_iso
from repro.results.store import Store

root, stack, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
while not go.exists():
    time.sleep(0.01)
store = Store(root)
for i in range(count):
    workers = (1, 2, 4, 8)[i % 4]
    ranks = [RankResult(rank=r, step_times=[0.03 + 1e-5 * ((i + r + s) % 7) for s in range(100)],
                        warmup_times=[1.5], items_per_step=32) for r in range(workers)]
    store.put(RunRecord(id=new_id(), created=now_iso(), status="ok" if i % 10 else "failed",
                        stack=StackRef(name=stack, hash=(stack * 12)[:12]),
                        settings=Settings(workload="cnn", model="resnet20", batch_per_worker=32, workers=workers),
                        ranks=ranks))
"""

READER = """
import sys, time
from pathlib import Path
from repro.results.index import summarize
from repro.results.store import Store

root, go, done = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
while not go.exists():
    time.sleep(0.01)
rounds = 0
while not done.exists() or rounds < 3:
    store = Store(root, warn=lambda text: print("WARNING", text))
    for summary in store.summaries():
        record = store.read(summary)
        if record is None or summarize(summary.path, record) != summary:
            print("WRONG", summary.path)
    rounds += 1
print("rounds", rounds)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _check_store(root: Path, expected: int) -> None:
    """Every record file complete and valid, no temporary leftovers, the index listing exactly them."""
    files = sorted(root.glob("runs/*/*.json"))
    assert len(files) == expected
    records = {f"{p.parent.name}/{p.name}": parse_record(json.loads(p.read_text())) for p in files}
    assert not list(root.glob("runs/*/.*.tmp"))
    warnings: list[str] = []
    summaries = Store(root, warn=warnings.append).summaries()
    assert warnings == []
    assert {s.path: s for s in summaries} == {path: summarize(path, r) for path, r in records.items()}


@pytest.mark.parametrize("stacks", [("a", "a"), ("a", "b")], ids=["same-stack", "two-stacks"])
def test_two_writers_and_a_reader_at_once_leave_every_record_readable_and_indexed(tmp_path, stacks):
    root, go, done = tmp_path / "results", tmp_path / "go", tmp_path / "done"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), stack, str(PER_WRITER), str(go)],
                                env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for stack in stacks]
    reader = subprocess.Popen([sys.executable, "-c", READER, str(root), str(go), str(done)], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    go.touch()
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, out + err
    done.touch()
    out, err = reader.communicate(timeout=300)
    assert reader.returncode == 0, out + err
    assert "WRONG" not in out and "WARNING" not in out, out
    assert int(out.split()[-1]) >= 3  # the reader did list the store while it was being written
    _check_store(root, 2 * PER_WRITER)


def test_two_bench_sweeps_into_one_store_at_once(tmp_path):
    root = tmp_path / "results"
    common = [sys.executable, "-m", "repro", "bench", "--stack", "stacks/cpu-tf215.yaml", "--hosts",
              "inventories/localhost", "--runtime", "host", "--workload", "probe", "--workers", "1", "--steps", "3",
              "--warmup-steps", "1",
              "--repeats", "2", "--store", str(root)]
    sweeps = [subprocess.Popen([*common, "--batch-size", batch], cwd=ROOT, env=_env(), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for batch in ("4", "8")]
    outputs = [p.communicate(timeout=900) for p in sweeps]
    for proc, (out, err) in zip(sweeps, outputs, strict=True):
        assert proc.returncode == 0, out + err
    _check_store(root, 4)
    records = Store(root).records()
    assert sorted(r.settings.batch_per_worker for r in records) == [4, 4, 8, 8]
    assert all(r.status == "ok" and len(r.ranks) == 1 and len(r.ranks[0].step_times) == 3 for r in records)
    assert len({r.sweep.id for r in records}) == 2
    listing = subprocess.run([sys.executable, "-m", "repro", "results", "--store", str(root), "--json"], cwd=ROOT,
                             env=_env(), text=True, capture_output=True, check=True)
    assert sorted(r["id"] for r in json.loads(listing.stdout)) == sorted(r.id for r in records)
