"""Runs read from the store's index (repro.results.indexed): the same figures as their files, never stale ones.

compare, results scaling and results table take each run from the index's brief and parse a record file only
for provenance; these tests check the brief against the files it was made from, after every way a file can
change: rewritten by hand, changed in place within the index's racy window, changed while a command reads.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from repro.cli import main
from repro.errors import ResultsError
from repro.results import hardware, metrics, steady
from repro.results.indexed import IndexedRun, provenance_key
from repro.results.jsonfile import read_record
from repro.results.record import HostRef, Published, RankResult, RunRecord, Settings, StackRef, SweepRef
from repro.results.select import select
from repro.results.store import Store


def ranks(workers: int, step: float, transient: int = 0) -> list[RankResult]:
    """Ranks of 60 steps; `transient` slow steps after the one warm-up step (a warm-up too short)."""
    times = [step * (3.0 if i < transient else 1 + 0.01 * (i % 3)) for i in range(60)]
    return [RankResult(rank=r, warmup_times=[step * 4], step_times=times, items_per_step=32, device="CPU")
            for r in range(workers)]


def run(n: int, *, stack: str = "a", step: float = 0.1, transient: int = 0, status: str = "ok",
        **fields: object) -> RunRecord:
    return RunRecord(id=f"20240501T0000{n:02d}Z-{n:08x}", created=f"2024-05-01T00:00:{n:02d}+00:00", status=status,
                     failure=None if status == "ok" else "mpirun exited with status 1",
                     stack=StackRef(name=stack, hash=f"{stack}000000000"[:12], file=f"stacks/{stack}.yaml",
                                    manifest={"tensorflow": {"version": "2.15.1"}}),
                     settings=Settings(workload="cnn", model="resnet20", batch_per_worker=32, workers=1 + n % 2),
                     sweep=SweepRef(id="sw", point=f"p{n % 2}", repeat=n // 2),
                     hosts=[HostRef(name="localhost", address="127.0.0.1")],
                     ranks=ranks(1 + n % 2, step, transient) if status == "ok" else [], **fields)


def figures(r: RunRecord) -> dict[str, object]:
    """Every figure a comparison or a table takes from a run, with the parts it reads."""
    out: dict[str, object] = {"id": r.id, "created": r.created, "status": r.status, "origin": r.origin,
                              "stack": (r.stack.name, r.stack.hash, r.stack.file, r.stack.image_hash),
                              "settings": r.settings, "sweep": r.sweep, "hosts": list(r.hosts),
                              "published": r.published, "conditions": r.conditions, "fabric": r.fabric,
                              "source": metrics.source(r), "stored_warmup": metrics.stored_warmup(r),
                              "hardware": hardware.parts(r), "provenance": provenance_key(r)}
    for mode in steady.MODES:
        out[f"throughput {mode}"] = metrics.throughput(r, mode)
        out[f"samples {mode}"] = metrics.sample_count(r, mode)
        out[f"issues {mode}"] = steady.issues(r, mode)
    return out


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    return tmp_path / "results"


def stored(root: Path) -> list[RunRecord]:
    store = Store(root)
    records = [run(0), run(1, transient=12), run(2, step=0.2), run(3, status="failed"),
               run(4, stack="b", origin="published", published=Published(images_per_sec=321.0, system="DGX-1")),
               run(5, stack="b", origin="import", reported_images_per_sec=123.5)]
    for r in records:
        store.put(r)
    return records


def test_a_run_from_the_index_has_every_figure_of_its_file_without_parsing_it(root, monkeypatch):
    records = stored(root)
    import repro.results.store

    parsed: list[Path] = []
    monkeypatch.setattr(repro.results.store, "read_record", lambda path: parsed.append(path) or read_record(path))
    store = Store(root)
    runs = store.indexed(store.summaries())
    assert all(isinstance(r, IndexedRun) for r in runs) and len(runs) == len(records)
    truth = {r.id: figures(r) for r in records}
    assert {r.id: figures(r) for r in runs} == truth
    assert parsed == []  # every figure above came from the index
    assert any(truth[r.id]["issues fixed"] for r in records)  # the warm-up issues were exercised, not only empty
    assert runs[0].stack.manifest == records[0].stack.manifest and len(parsed) == 1  # provenance: its file, once


def test_figures_of_a_record_rewritten_by_hand_are_read_again_never_taken_from_the_stale_index(root, capsys):
    stored(root)
    store = Store(root)
    before = {r.id: metrics.throughput(r) for r in select("a", store).records}
    path = next(root.glob("runs/a*/*0001.json"))
    data = json.loads(path.read_text())
    for rank in data["ranks"]:
        rank["step_times"] = [t / 2 for t in rank["step_times"]]  # twice as fast: a new figure
    path.write_text(json.dumps(data))
    again = {r.id: metrics.throughput(r) for r in select("a", Store(root)).records}
    rid = data["id"]
    assert again[rid] == pytest.approx(2 * before[rid]) and again[rid] == metrics.throughput(read_record(path))
    assert main(["results", "scaling", "a", "--store", str(root), "--format", "json"]) == 0
    printed = {(row["workers"], row["runs"]): row["images_per_sec"] for row in json.loads(capsys.readouterr().out)}
    one_worker = [again[r] for r in again if r.endswith(("0000", "0002")) and again[r]]
    assert printed[(2, 1)] == pytest.approx(again[rid])  # the 2-worker point is that one run: its new figure
    assert printed[(1, 2)] == pytest.approx(metrics.stats.geometric_mean(one_worker))


def test_a_record_changed_in_place_within_the_racy_window_is_read_again(root):
    stored(root)
    path = next(root.glob("runs/a*/*0000.json"))
    st = path.stat()
    Store(root).summaries()  # indexed now, within RACY_NS of the file's mtime
    text = path.read_text()
    assert text.count('"items_per_step": 32') == 1
    with open(path, "r+", encoding="utf-8") as fh:  # same size, same inode, same mtime: only the racy rule sees it
        fh.write(text.replace('"items_per_step": 32', '"items_per_step": 64'))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_ino == st.st_ino
    (indexed,) = [r for r in select("a", Store(root)).records if r.id.endswith("0000")]
    assert metrics.throughput(indexed) == pytest.approx(metrics.throughput(read_record(path)))
    assert metrics.throughput(indexed) == pytest.approx(2 * metrics.throughput(run(0)))


@pytest.mark.parametrize("change", ["status", "figure"])
def test_a_record_changed_after_its_figures_were_taken_is_an_error_when_its_provenance_is_read(root, change):
    stored(root)
    store = Store(root)
    runs = select("a", store).records
    path = next(root.glob("runs/a*/*0002.json"))
    data = json.loads(path.read_text())
    if change == "status":
        data["status"] = "failed"
    else:  # the same run, other step times: the figure taken no longer the file's
        data["ranks"][0]["step_times"] = [t * 2 for t in data["ranks"][0]["step_times"]]
    path.write_text(json.dumps(data))
    changed = next(r for r in runs if r.id == data["id"])
    with pytest.raises(ResultsError, match="changed or removed while repro was reading"):
        _ = changed.stack.manifest
    unchanged = next(r for r in runs if r.id != data["id"])
    assert unchanged.stack.manifest == {"tensorflow": {"version": "2.15.1"}}
