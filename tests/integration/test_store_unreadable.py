"""`repro bench --resume` goes on past record files it cannot read, and names them (real runs of the probe
workload: the store is the subject, not the framework)."""

from __future__ import annotations

import json
from pathlib import Path

from repro.results.record import SCHEMA_VERSION
from repro.results.store import Store
from tests.integration.cli import run_repro

SWEEP = ["bench", "--stack", "stacks/cpu-tf215.yaml", "--hosts", "inventories/localhost", "--runtime", "host",
         "--workload", "probe", "--workers", "1", "--repeats", "2", "--steps", "3", "--warmup-steps", "1",
         "--batch-size", "4"]


def test_resume_skips_unreadable_record_files_with_a_warning_and_completes_the_sweep(tmp_path: Path):
    store = tmp_path / "results"
    run_repro(*SWEEP, "--store", str(store), timeout=600)
    first, second = Store(store).records()
    Store(store).run_path(second).unlink()  # lose repeat 2
    folder = Store(store).run_path(first).parent
    truncated = folder / "20990101T000000Z-truncate.json"
    truncated.write_text(Store(store).run_path(first).read_text()[:300])
    newer = folder / "20990101T000000Z-newer000.json"
    newer.write_text(json.dumps({**first.model_dump(mode="json"), "schema_version": SCHEMA_VERSION + 1}))
    proc = run_repro(*SWEEP, "--resume", "--store", str(store), timeout=600)
    assert f"warning: {truncated}: unreadable record" in proc.stderr, proc.stderr
    assert f"warning: {newer}: record schema version {SCHEMA_VERSION + 1} is newer" in proc.stderr
    assert "done earlier, skipped (--resume)" in proc.stderr
    records = Store(store, warn=lambda text: None).records()
    assert len(records) == 2 and records[0].id == first.id
    assert {(r.sweep.repeat, r.status) for r in records} == {(0, "ok"), (1, "ok")}
    assert truncated.exists() and newer.exists()  # skipped, never removed
