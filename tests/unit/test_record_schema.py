"""Record schema 2 reads stores written by the previous release (schema 1), and refuses what it cannot read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repro.cli import main
from repro.manifest.software import Software
from repro.results.provenance import HostFacts, ImageLock
from repro.results.record import SCHEMA_VERSION, InvalidRecordError, NewerSchemaError, parse_record
from repro.results.store import Store

V1 = Path(__file__).resolve().parents[1] / "data" / "stores" / "v1"


@pytest.fixture()
def v1_store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(V1, root)
    return root


def _split(runs: Path, old: list[str], new: list[str]) -> tuple[Path, Path]:
    """Two directories of a stack's record files (by id suffix), to compare as OLD and NEW."""
    sides = []
    for name, ids in (("old", old), ("new", new)):
        side = runs.parent.parent.parent / name
        side.mkdir()
        for suffix in ids:
            record = next(runs.glob(f"*-{suffix}.json"))
            shutil.copy(record, side / record.name)
        sides.append(side)
    return sides[0], sides[1]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_every_v1_record_is_migrated_to_typed_provenance(v1_store):
    records = Store(v1_store).records()
    assert len(records) == 16 and all(r.schema_version == SCHEMA_VERSION for r in records)
    docker = [r for r in records if r.runtime == "docker"]
    assert len(docker) == 1 and isinstance(docker[0].image, ImageLock)
    assert docker[0].image.versions["tensorflow"] == "2.15.1" and docker[0].image.sshd.port == 50000
    host = [r for r in records if r.runtime == "host"]
    assert host and all(isinstance(r.host_software["localhost"], Software) for r in host)
    assert {r.host_software["localhost"].mpi for r in host} == {"openmpi 4.1.4"}
    with_facts = [r for r in records if r.facts]
    assert len(with_facts) == 1 and isinstance(with_facts[0].facts["localhost"], HostFacts)
    published = [r for r in records if r.origin == "published"]
    assert published and all(r.hardware is not None and r.hardware.gpu for r in published)
    # the files themselves are not rewritten
    on_disk = json.loads(next((v1_store / "runs").glob("*/*.json")).read_text())
    assert on_disk["schema_version"] == 1


def test_a_v1_store_still_lists_shows_and_compares(capsys, v1_store):
    code, out, _ = run(capsys, "results", "--store", str(v1_store))
    assert code == 0 and out.count("cpu-tf215") == 7 and "kuza55" in out
    docker = next(r for r in Store(v1_store).records() if r.runtime == "docker")
    code, out, _ = run(capsys, "results", "--store", str(v1_store), "show", docker.id)
    assert code == 0 and docker.id in out and "2.15.1" in out
    code, out, _ = run(capsys, "results", "--store", str(v1_store), "show", docker.id, "--json")
    assert code == 0 and json.loads(out)["image"]["image"]["tag"] == docker.image.tag
    code, _, err = run(capsys, "compare", "cpu-tf215", "cpu-tf215", "--store", str(v1_store))
    assert code == 2 and "OLD and NEW are the same runs" in err  # a stack against itself says nothing
    old, new = _split(v1_store / "runs" / "bd779ae04811", ["eafd67dd", "fecc1369"], ["2ba4a0fd", "74ce4aa3",
                                                                                        "191aac65"])
    code, out, _ = run(capsys, "compare", str(old), str(new), "--store", str(v1_store), "--model", "resnet20",
                       "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["throughput"] and 1 in {row["point"]["workers"] for row in data["throughput"]}


def test_a_newer_schema_or_a_non_record_is_refused_with_its_file_named():
    data = json.loads(next(V1.glob("runs/*/*.json")).read_text())
    with pytest.raises(NewerSchemaError, match=r"x\.json: record schema version 99 is newer"):
        parse_record({**data, "schema_version": 99}, "x.json")
    with pytest.raises(InvalidRecordError, match=r"y\.json: not a record"):
        parse_record([1, 2], "y.json")
    with pytest.raises(InvalidRecordError, match=r"z\.json: invalid record: status"):
        parse_record({**data, "status": "maybe"}, "z.json")


V2 = Path(__file__).resolve().parents[1] / "data" / "stores" / "v2"


def test_v2_batch_jobs_become_one_generic_batch_job_with_the_schedulers_part(tmp_path):
    from repro.results.provenance import SlurmJob

    shutil.copytree(V2, tmp_path / "store")
    records = {r.id: r for r in Store(tmp_path / "store").records()}
    slurm, kube = records["20261126T101530Z-7a3e9b11"], records["20261126T102000Z-c4d2e8f0"]
    assert (slurm.batch.scheduler, slurm.batch.id, slurm.batch.nodes, slurm.batch.state) == (
        "slurm", "42", ["h1", "h2"], "COMPLETED")
    assert isinstance(slurm.batch.detail, SlurmJob) and slurm.batch.detail.pmi == "pmix"
    assert slurm.batch.script.startswith("#!/bin/bash\n#SBATCH --job-name=repro-7a3e9b11")
    assert (kube.batch.scheduler, kube.batch.id, kube.batch.nodes, kube.batch.state) == (
        "kubernetes", "repro-c4d2e8f0", ["h1", "h2"], "ok")
    assert "kind: TrainJob" in kube.batch.script and kube.batch.detail["cluster_version"] == "v1.33.2"
    assert "manifest" not in kube.batch.detail and all(r.schema_version == SCHEMA_VERSION for r in records.values())
    # a migrated record written back (as `results show --json` prints it) reads as the same record
    again = parse_record(json.loads(slurm.model_dump_json()))
    assert again == slurm and isinstance(again.batch.detail, SlurmJob)


def test_a_v2_store_lists_shows_and_compares_exactly_as_schema_2_did(capsys, tmp_path, monkeypatch):
    store = tmp_path / "store"
    shutil.copytree(V2, store)
    shutil.rmtree(store / "golden")
    golden = V2 / "golden"
    _, out, _ = run(capsys, "results", "--store", str(store))
    assert out == (golden / "results.txt").read_text()
    for rid in ("20261126T101530Z-7a3e9b11", "20261126T102000Z-c4d2e8f0"):
        _, out, _ = run(capsys, "results", "--store", str(store), "show", rid)
        assert out == (golden / f"show-{rid}.txt").read_text()
    monkeypatch.chdir(tmp_path)  # the selections are named by relative paths in the comparison's text
    old, new = _split(Path("store/runs") / next(p.name for p in (store / "runs").iterdir() if p.is_dir()),
                      ["5f1c2a90", "7a3e9b11"], ["c4d2e8f0"])
    _, out, _ = run(capsys, "compare", str(old), str(new), "--store", str(store), "--model", "resnet20")
    assert out == (golden / "compare.txt").read_text()


GOLDEN_STORES = Path(__file__).resolve().parents[1] / "data" / "stores"


@pytest.mark.parametrize(("version", "stack"), [("v1", "cpu-tf215"), ("v3", "cpu-torch213")])
def test_an_older_store_lists_shows_and_compares_exactly_as_its_schema_did(capsys, tmp_path, version, stack):
    """golden/ holds what repro printed on the store before schema 4 (its README says which commit)."""
    store = tmp_path / "store"
    shutil.copytree(GOLDEN_STORES / version, store, ignore=shutil.ignore_patterns("golden", "README.md"))
    golden = GOLDEN_STORES / version / "golden"
    _, out, _ = run(capsys, "results", "--store", str(store))
    assert out == (golden / "results.txt").read_text()
    shown = ""
    for rid in sorted(p.stem for p in store.glob("runs/*/*.json")):
        _, out, _ = run(capsys, "results", "--store", str(store), "show", rid)
        shown += out
    assert shown == (golden / "show.txt").read_text()
    # golden/compare.txt is what `compare STACK STACK` printed before schema 4; comparing a selection with itself
    # is refused since (issue 41: OLD = NEW measures nothing), so that command now exits 2
    code, _, err = run(capsys, "compare", stack, stack, "--store", str(store), "--model", "resnet20")
    assert code == 2 and "same" in err, err


def test_v3_records_become_framework_neutral_comm_compile_and_frameworks(tmp_path):
    shutil.copytree(GOLDEN_STORES / "v3", tmp_path / "store")
    records = Store(tmp_path / "store").records()
    assert records and all(r.schema_version == SCHEMA_VERSION == 4 for r in records)
    torch = next(r for r in records if r.settings.workload == "torch_cnn")
    # PyTorch's backend was in extra.dist_backend (or, with auto, only in what the program reported)
    assert torch.settings.comm.model_dump() == {"library": "torch.distributed", "backend": "gloo"}
    assert torch.settings.backend is None and torch.settings.compile is False and torch.settings.xla is False
    found = torch.host_software["localhost"]
    assert found.framework("pytorch").version == "2.13.0+cpu"
    assert found.framework("pytorch").build["backends"]["gloo"] is True
    assert "torch" not in found.model_dump() and "tensorflow" not in found.model_dump()
    tf = next(r for r in Store(V1).records() if r.settings.workload == "cnn" and r.origin == "bench")
    assert tf.settings.comm.model_dump() == {"library": "horovod", "backend": tf.settings.backend}
    assert tf.settings.backend in ("mpi", "gloo")
    # a migrated record written back (as `results show --json` prints it) reads as the same record
    assert parse_record(json.loads(torch.model_dump_json())) == torch


def test_torch_cnn_records_align_with_cnn_records_of_the_pytorch_program(tmp_path):
    from repro.compare.align import align

    shutil.copytree(GOLDEN_STORES / "v3", tmp_path / "store")
    old = [r for r in Store(tmp_path / "store").records() if r.status == "ok"]
    new = [r.model_copy(update={"settings": r.settings.model_copy(update={"workload": "cnn"})}) for r in old]
    aligned = align(old, new)
    assert {p.key for p in aligned.pairs} and len(aligned.pairs) == 2  # workers 1 and 2, paired across the names
    assert [(c.path, c.old, c.new) for c in aligned.compared] == [("workload", "torch_cnn", "cnn")]


def test_a_v3_import_of_a_pytorch_ddp_log_keeps_torchs_backend_not_horovods():
    data = json.loads(next((GOLDEN_STORES / "v3").glob("runs/*/*.json")).read_text())
    settings = {"workload": "throughput", "workers": 16, "backend": "nccl",
                "extra": {"framework": "pytorch", "program": "torch_ddp_benchmark"}}
    rec = parse_record({**data, "schema_version": 3, "origin": "import", "settings": settings}, "x.json")
    assert rec.settings.comm.model_dump() == {"library": "torch.distributed", "backend": "nccl"}
    assert rec.settings.backend is None and rec.settings.shown()["backend"] is None
