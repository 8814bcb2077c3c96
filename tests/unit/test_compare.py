"""`repro compare`: selection, alignment, statistics, what changed, hardware, renderers, plots, exit codes.

Records are built directly (RunRecord) and stored in a tmp_path store; the command runs through
repro.cli.main, as a user would run it.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from repro.cli import main
from repro.compare import Options, compare
from repro.errors import InputError, ResultsError
from repro.manifest import load_stack
from repro.results import stats
from repro.results.provenance import HostFacts, ImageLock, LockImage, LockSshd, LockStack
from repro.results.record import Hardware, Published, RankResult, RunRecord, Settings, StackRef, new_id
from repro.results.select import Filters, select
from repro.results.store import Store

ROOT = Path(__file__).resolve().parents[2]
V100 = "GPU:0 Tesla V100-SXM2-16GB"
A100 = "GPU:0 NVIDIA A100-SXM4-80GB"


def stack_ref(name: str, manifest: dict | None = None, digest: str | None = None) -> StackRef:
    import hashlib

    return StackRef(name=name, hash=digest or hashlib.sha256(name.encode()).hexdigest()[:12],
                    manifest=manifest or {})


def record(stack: StackRef, ips: float, *, workers: int = 1, hosts: int = 1, steps: int = 30, noise: float = 0.01,
           run_noise: float = 0.0, seed: int = 0, model: str = "resnet50", batch: int = 64, xla: bool = False,
           device: str = V100, lock: dict | None = None, status: str = "ok", facts: dict | None = None,
           hardware: Hardware | None = None, workload: str = "cnn", metrics: dict | None = None) -> RunRecord:
    """One repeat whose job processes `ips` images/sec (per-step noise, and run-to-run noise of the mean)."""
    rng = np.random.default_rng(seed)
    step = batch * workers / ips * (1 + run_noise * rng.standard_normal())
    ranks = []
    if status == "ok" and steps:
        shared = step * (1 + noise * rng.standard_normal(steps))
        ranks = [RankResult(rank=r, device=device, step_times=[float(x) for x in shared], items_per_step=batch)
                 for r in range(workers)]
    return RunRecord(id=new_id(), created="2024-05-01T00:00:00+00:00", status=status,
                     failure=None if status == "ok" else "mpirun exited with status 1", stack=stack,
                     image=image_lock(lock) if lock else None,
                     settings=Settings(workload=workload, model=model, batch_per_worker=batch, xla=xla,
                                       workers=workers, hosts=hosts, global_batch=batch * workers),
                     ranks=ranks, facts={h: HostFacts.model_validate(f) for h, f in (facts or {}).items()},
                     hardware=hardware, metrics=metrics or {})


def image_lock(versions: dict) -> ImageLock:
    """The lock of an image in which these versions were found (the rest the same for every image)."""
    return ImageLock(stack=LockStack(name="s", hash="h"), image=LockImage(tag="t", id="sha256:0"),
                     sshd=LockSshd(port=50000), versions=versions)


def put(store: Store, records: list[RunRecord]) -> None:
    for r in records:
        store.put(r)


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["compare", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if code == 0 or out.strip().startswith("{") else {})


def sweep(stack: StackRef, per_worker: float, *, workers=(1, 2, 4), repeats: int = 3, seed: int = 0,
          efficiency: float = 0.9, **kw) -> list[RunRecord]:
    out = []
    for w in workers:
        ips = per_worker * w * (efficiency if w > 1 else 1.0)
        out += [record(stack, ips, workers=w, seed=seed + 100 * w + i, **kw) for i in range(repeats)]
    return out


# -- statistics through `repro compare` ---------------------------------------------------------------

@pytest.fixture()
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "results")


def _one_point(capsys, store: Store, old: list[RunRecord], new: list[RunRecord], *extra: str) -> dict:
    put(store, old + new)
    code, data = run_json(capsys, old[0].stack.name, new[0].stack.name, "--store", str(store.root), *extra)
    assert code == 0
    assert len(data["throughput"]) == 1
    return data["throughput"][0]


def test_identical_distributions_are_equivalent_within_the_threshold(capsys, store):
    old = [record(stack_ref("old"), 300, noise=0.02, seed=i) for i in range(3)]
    new = [record(stack_ref("new"), 300, noise=0.02, seed=10 + i) for i in range(3)]
    row = _one_point(capsys, store, old, new)
    assert row["verdict"] == stats.EQUIVALENT
    assert 1 / 1.02 < row["low"] < 1 < row["high"] < 1.02


def test_a_five_percent_shift_with_low_noise_is_significant(capsys, store):
    old = [record(stack_ref("old"), 300, noise=0.005, seed=i) for i in range(3)]
    new = [record(stack_ref("new"), 315, noise=0.005, seed=10 + i) for i in range(3)]
    row = _one_point(capsys, store, old, new)
    assert row["verdict"] == stats.FASTER
    assert row["ratio"] == pytest.approx(1.05, abs=0.005)
    assert row["low"] > 1.02


def test_a_five_percent_shift_buried_in_ten_percent_run_to_run_noise_is_inconclusive(capsys, store):
    old = [record(stack_ref("old"), 300, noise=0.02, run_noise=0.1, seed=i) for i in range(3)]
    new = [record(stack_ref("new"), 315, noise=0.02, run_noise=0.1, seed=10 + i) for i in range(3)]
    row = _one_point(capsys, store, old, new)
    assert row["verdict"] == stats.INCONCLUSIVE and row["low"] < 1 / 1.02 and row["high"] > 1.02
    assert row["high"] - row["low"] > 0.1  # the interval shows how little the data can tell


def test_one_sample_is_not_enough_data(capsys, store):
    old = [record(stack_ref("old"), 300, steps=1)]
    new = [record(stack_ref("new"), 330, steps=1)]
    row = _one_point(capsys, store, old, new)
    assert row["verdict"] == stats.NOT_ENOUGH
    assert row["ratio"] == pytest.approx(1.1, rel=0.05)


def test_threshold_option_turns_a_small_significant_change_into_an_equivalence(capsys, store):
    old = [record(stack_ref("old"), 300, noise=0.002, seed=i) for i in range(3)]
    new = [record(stack_ref("new"), 309, noise=0.002, seed=10 + i) for i in range(3)]
    assert _one_point(capsys, store, old, new)["verdict"] == stats.FASTER
    code, data = run_json(capsys, "old", "new", "--store", str(store.root), "--threshold", "0.05")
    assert code == 0 and data["throughput"][0]["verdict"] == stats.EQUIVALENT  # 3%, precisely, within ±5%
    assert data["options"]["threshold"] == 0.05


# -- alignment ---------------------------------------------------------------------------------------

def test_points_on_one_side_only_are_listed_not_dropped(capsys, store):
    old = sweep(stack_ref("old"), 100, workers=(1, 2, 4))
    new = sweep(stack_ref("new"), 110, workers=(1, 2, 8))
    put(store, old + new)
    code, data = run_json(capsys, "old", "new", "--store", str(store.root))
    assert code == 0
    assert [r["point"]["workers"] for r in data["throughput"]] == [1, 2]
    assert [o["point"]["workers"] for o in data["old_only"]] == [4]
    assert [o["point"]["workers"] for o in data["new_only"]] == [8]
    main(["compare", "old", "new", "--store", str(store.root)])
    text = capsys.readouterr().out
    assert "Only in OLD (1 point" in text and "Only in NEW (1 point" in text


def test_scaling_efficiency_change_is_computed_per_side(capsys, store):
    old = sweep(stack_ref("old"), 100, workers=(1, 4), efficiency=0.80, noise=0.001)
    new = sweep(stack_ref("new"), 100, workers=(1, 4), efficiency=0.90, noise=0.001)
    put(store, old + new)
    _, data = run_json(capsys, "old", "new", "--store", str(store.root))
    four = next(r for r in data["throughput"] if r["point"]["workers"] == 4)
    assert four["efficiency_old"] == pytest.approx(0.80, abs=0.01)
    assert four["efficiency_new"] == pytest.approx(0.90, abs=0.01)
    assert four["efficiency_change"] == pytest.approx(0.10, abs=0.015)


def _stack_from_manifest(path: Path) -> StackRef:
    loaded = load_stack(path)
    return StackRef(name=loaded.stack.name, hash=loaded.hash, file=str(path),
                    manifest=loaded.stack.model_dump(mode="json"))


def test_xla_on_versus_off_is_the_compared_dimension_not_a_key(capsys, store):
    plain, xla = ROOT / "stacks" / "cpu-tf215.yaml", ROOT / "stacks" / "cpu-tf215-xla.yaml"
    a, b = _stack_from_manifest(plain), _stack_from_manifest(xla)
    old = sweep(a, 100, workers=(1, 2), xla=False, device="CPU")
    new = sweep(b, 120, workers=(1, 2), xla=True, device="CPU", seed=7)
    put(store, old + new)
    code, data = run_json(capsys, str(plain), str(xla), "--store", str(store.root))
    assert code == 0
    assert "xla" not in data["keys"]
    assert len(data["throughput"]) == 2 and not data["old_only"] and not data["new_only"]
    assert [c["text"] for c in data["changes"]["settings"]] == ["xla: false → true"]
    assert "benchmark.xla: false → true" in [c["text"] for c in data["changes"]["manifest"]]
    assert "XLA off → on" in data["changes"]["headline"]
    assert all(r["verdict"] == stats.FASTER for r in data["throughput"])


def test_a_setting_that_varies_on_a_side_stays_an_alignment_key(store):
    s_old, s_new = stack_ref("old"), stack_ref("new")
    old = [record(s_old, 100, xla=False, seed=1), record(s_old, 120, xla=True, seed=2)]
    new = [record(s_new, 125, xla=True, seed=3)]
    result = compare(old, new)
    assert "xla" in result.keys
    assert [dict(r.key)["xla"] for r in result.throughput] == [True]
    assert [dict(o.key)["xla"] for o in result.old_only] == [False]


def test_failed_records_count_as_failures_never_as_data(capsys, store):
    old = [record(stack_ref("old"), 300, seed=i) for i in range(3)]
    old.append(record(stack_ref("old"), 1, status="failed"))
    new = [record(stack_ref("new"), 300, seed=10 + i) for i in range(3)]
    row = _one_point(capsys, store, old, new)
    assert row["failed_old"] == 1 and row["runs_old"] == 3
    assert row["images_per_sec_old"] == pytest.approx(300, rel=0.01)


# -- what changed ------------------------------------------------------------------------------------

def test_manifest_and_lock_differences_are_printed_above_the_table(capsys, store):
    m_old = {"name": "tf110", "tensorflow": {"version": "1.10.0"}, "cuda": "9.1", "benchmark": {"xla": False}}
    m_new = {"name": "tf114", "tensorflow": {"version": "1.14.0"}, "cuda": "10.0", "benchmark": {"xla": False}}
    old = sweep(stack_ref("tf110", m_old), 100, lock={"tensorflow": "1.10.0", "horovod": "0.15.2", "nccl": "2.2.15"})
    new = sweep(stack_ref("tf114", m_new), 108, lock={"tensorflow": "1.14.0", "horovod": "0.19.0", "nccl": "2.2.15"})
    put(store, old + new)
    assert main(["compare", "tf110", "tf114", "--store", str(store.root)]) == 0
    text = capsys.readouterr().out
    head, _, table = text.partition("Throughput")
    assert "What changed: TensorFlow 1.10.0 → 1.14.0, CUDA 9.1 → 10.0" in head
    assert "tensorflow.version: 1.10.0 → 1.14.0" in head
    assert "cuda: 9.1 → 10.0" in head
    assert "horovod: 0.15.2 → 0.19.0" in head  # lock
    assert "nccl" not in head  # unchanged entries are not differences
    assert "name:" not in head  # labels are not content
    assert "1.08x faster" in table


# -- hardware ----------------------------------------------------------------------------------------

def test_different_gpus_are_refused_unless_allowed(capsys, store):
    put(store, sweep(stack_ref("old"), 100, device=V100) + sweep(stack_ref("new"), 250, device=A100))
    assert main(["compare", "old", "new", "--store", str(store.root)]) == 1
    err = capsys.readouterr().err
    assert "different hardware" in err and "Tesla V100-SXM2-16GB → NVIDIA A100-SXM4-80GB" in err
    assert "--allow-different-hardware" in err
    code, data = run_json(capsys, "old", "new", "--store", str(store.root), "--allow-different-hardware")
    assert code == 0
    assert [c["text"] for c in data["changes"]["hardware"]] == ["gpu: Tesla V100-SXM2-16GB → NVIDIA A100-SXM4-80GB"]


def test_a_published_gpu_name_matches_the_device_string_it_abbreviates():
    published = RunRecord(id=new_id(), created="2020-01-01T00:00:00+00:00", status="ok", origin="published",
                          stack=stack_ref("paper"),
                          settings=Settings(workload="cnn", model="resnet50", batch_per_worker=64),
                          published=Published(images_per_sec=300.0), hardware=Hardware(gpu="V100"))
    result = compare([published], [record(stack_ref("mine"), 330, device=V100)])
    assert not result.changes.hardware and result.throughput[0].ratio.ratio == pytest.approx(1.1, rel=0.01)
    with pytest.raises(ResultsError, match="gpu: V100 → NVIDIA A100-SXM4-80GB"):
        compare([published], [record(stack_ref("mine"), 330, device=A100)])


def _host_facts(kind: str, gbps: float) -> dict:
    return {"format": "repro.facts/1", "host": "h", "gpus": [{"index": 0, "name": "Tesla V100-SXM2-16GB"}],
            "interfaces": [{"name": "ib0", "kind": kind}], "interface": {"name": "ib0", "link_gbps": gbps}}


def test_host_facts_recorded_by_bench_give_the_interconnect():
    old = [record(stack_ref("old"), 100, seed=i, facts={"c4140-1": _host_facts("infiniband", 100.0)})
           for i in range(2)]
    new = [record(stack_ref("new"), 100, seed=5 + i, facts={"c4140-1": _host_facts("ether", 10.0)})
           for i in range(2)]
    with pytest.raises(ResultsError, match="interconnect: infiniband 100 Gb/s → ether 10 Gb/s"):
        compare(old, new)
    assert compare(old, old).old.hardware.gpus == ("Tesla V100-SXM2-16GB",)


def test_interconnect_from_facts_and_host_count_are_hardware(store):
    old = [record(stack_ref("old"), 100, workers=8, hosts=2, seed=i, hardware=Hardware(interconnect="ib"))
           for i in range(2)]
    new = [record(stack_ref("new"), 100, workers=8, hosts=1, seed=9 + i, hardware=Hardware(interconnect="ethernet"))
           for i in range(2)]
    with pytest.raises(ResultsError, match="interconnect: ib → ethernet; hosts: 2 → 1"):
        compare(old, new)
    result = compare(old, new, Options(allow_different_hardware=True))
    assert len(result.throughput) == 1  # 8 workers on 2 hosts vs 8 on 1: aligned, hosts is what differs
    assert {c.path for c in result.changes.hardware} == {"interconnect", "hosts"}


# -- other workloads ---------------------------------------------------------------------------------

def _allreduce(stack: StackRef, lat: float, seed: int, backend: str = "mpi") -> RunRecord:
    rng = np.random.default_rng(seed)
    rows = []
    for nbytes in (4096, 4194304):
        lats = [float(lat * nbytes / 4096 * (1 + 0.01 * x)) for x in rng.standard_normal(20)]
        med = float(np.median(lats))
        rows.append({"dtype": "float32", "elements": nbytes // 4, "bytes": nbytes, "latencies": lats,
                     "latency_median": med, "algbw_median": nbytes / med, "busbw_median": nbytes / med})
    return RunRecord(id=new_id(), created="2024-05-01T00:00:00+00:00", status="ok", stack=stack,
                     settings=Settings(workload="allreduce", workers=2, backend=backend),
                     metrics={"backend": backend, "results": rows})


def test_allreduce_is_compared_per_dtype_and_size_with_bandwidth_ratio(store):
    old = [_allreduce(stack_ref("old"), 1e-4, i) for i in range(3)]
    new = [_allreduce(stack_ref("new"), 0.8e-4, 10 + i) for i in range(3)]
    result = compare(old, new)
    assert [(r.dtype, r.bytes) for r in result.allreduce] == [("float32", 4096), ("float32", 4194304)]
    for r in result.allreduce:
        assert r.bandwidth.verdict == stats.FASTER
        assert r.bandwidth.ratio == pytest.approx(1.25, rel=0.02)
        assert r.time_ratio == pytest.approx(0.8, rel=0.02)
        assert r.time_ratio * r.bandwidth.ratio == pytest.approx(1.0)
    assert not result.throughput


def _tta(stack: StackRef, seconds: float, top1: float, reached: bool = True) -> RunRecord:
    return RunRecord(id=new_id(), created="2024-05-01T00:00:00+00:00", status="ok", stack=stack,
                     settings=Settings(workload="tta", model="digits_cnn", batch_per_worker=32, workers=2),
                     metrics={"target": 0.95, "reached": reached, "time_to_accuracy_s": seconds if reached else None,
                              "epochs": 5, "final_top1": top1, "final_top5": 0.999, "compute_s": seconds * 0.7,
                              "communication_s": seconds * 0.2})


def test_time_to_accuracy_speedup_and_the_lower_accuracy_flag():
    old = [_tta(stack_ref("old"), t, 0.97) for t in (100, 102, 98)]
    new = [_tta(stack_ref("new"), t, 0.955) for t in (80, 81, 79)]
    (row,) = compare(old, new).tta
    assert row.speedup.ratio == pytest.approx(100 / 80, rel=0.01)
    assert row.speedup.verdict == stats.FASTER
    assert "NEW is faster but ends at a lower final top-1" in row.flag
    (same,) = compare(old, [_tta(stack_ref("new"), 80, 0.99)]).tta
    assert same.speedup.verdict == stats.NOT_ENOUGH and same.flag == ""
    (never,) = compare(old, [_tta(stack_ref("new"), 0, 0.5, reached=False)]).tta
    assert never.speedup.ratio is None and "NEW never reached the target" in never.flag


def test_published_figures_give_a_ratio_with_not_enough_data():
    def pub(stack, gpus, ips):
        return RunRecord(id=new_id(), created="2020-01-01T00:00:00+00:00", status="ok", origin="published",
                         stack=stack, settings=Settings(workload="cnn", model="resnet50", workers=gpus),
                         published=Published(images_per_sec=ips, system="C4140"))

    result = compare([pub(stack_ref("tf110"), 8, 2000.0)], [pub(stack_ref("tf114"), 8, 2700.0)])
    (row,) = result.throughput
    assert row.ratio.ratio == pytest.approx(1.35)
    assert row.ratio.verdict == stats.NOT_ENOUGH
    assert row.old.published and row.old.noise is None


# -- selection ---------------------------------------------------------------------------------------

def test_a_selector_matching_nothing_names_the_selector_and_the_store(capsys, store):
    put(store, sweep(stack_ref("old"), 100))
    assert main(["compare", "old", "nosuchstack", "--store", str(store.root)]) == 2
    err = capsys.readouterr().err
    assert "'nosuchstack' matches no runs in" in err and str(store.root) in err


def test_selectors_by_hash_prefix_directory_and_saved_selection(capsys, store, tmp_path):
    old_stack, new_stack = stack_ref("old"), stack_ref("new")
    put(store, sweep(old_stack, 100) + sweep(new_stack, 120))
    # a directory of record JSON files
    loose = tmp_path / "loose"
    loose.mkdir()
    for r in store.records(stack_hash=new_stack.hash):
        (loose / f"{r.id}.json").write_text(json.dumps(r.model_dump(mode="json")))
    # a saved selection: the old stack, 1 and 2 workers only
    sel = tmp_path / "old.selection.json"
    assert main(["results", "--store", str(store.root), "--stack", "old", "--workers", "1,2",
                 "--save-selection", str(sel), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {r["workers"] for r in listed} == {1, 2}
    code, data = run_json(capsys, str(sel), str(loose))
    assert code == 0
    assert [r["point"]["workers"] for r in data["throughput"]] == [1, 2]
    assert [o["point"]["workers"] for o in data["new_only"]] == [4]
    code, data = run_json(capsys, old_stack.hash[:6], new_stack.hash[:8], "--store", str(store.root),
                          "--model", "resnet50", "--workers", "4")
    assert code == 0 and [r["point"]["workers"] for r in data["throughput"]] == [4]


def test_filters_that_keep_nothing_are_an_error(store):
    put(store, sweep(stack_ref("old"), 100))
    with pytest.raises(InputError, match="no run matching --model vgg16"):
        select("old", store, Filters(models=("vgg16",)))


def test_bad_filter_values_are_input_errors(capsys, store):
    put(store, sweep(stack_ref("old"), 100))
    assert main(["compare", "old", "old", "--store", str(store.root), "--workers", "two"]) == 2
    assert "--workers: expected a whole number, found 'two'" in capsys.readouterr().err


# -- output formats, plots, exit codes ---------------------------------------------------------------

@pytest.fixture()
def two_stacks(store) -> Store:
    put(store, sweep(stack_ref("old"), 100, workers=(1, 2, 4))
        + sweep(stack_ref("new"), 110, workers=(1, 2, 4), seed=5))
    return store


def test_json_and_csv_outputs_parse(capsys, two_stacks):
    code, data = run_json(capsys, "old", "new", "--store", str(two_stacks.root))
    assert code == 0 and data["format"] == "repro.comparison/1" and len(data["throughput"]) == 3
    assert data["summary"][0]["model"] == "resnet50"
    assert data["summary"][0]["geomean"] == pytest.approx(1.1, rel=0.01)
    assert main(["compare", "old", "new", "--store", str(two_stacks.root), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["kind"] for r in rows] == ["throughput"] * 3
    assert [int(r["workers"]) for r in rows] == [1, 2, 4]
    assert all(float(r["ratio"]) == pytest.approx(1.1, rel=0.02) for r in rows)


def test_markdown_output_is_a_markdown_table(capsys, two_stacks):
    assert main(["compare", "old", "new", "--store", str(two_stacks.root), "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    assert "| workers |" in text and "|---" in text and text.startswith("- OLD: old")
    assert "model resnet50" in text  # the same on every row: in the caption


def test_plot_writes_a_real_png_and_an_svg(capsys, two_stacks, tmp_path):
    import matplotlib.image

    png, svg = tmp_path / "cmp.png", tmp_path / "plots" / "cmp.svg"
    for path in (png, svg):
        assert main(["compare", "old", "new", "--store", str(two_stacks.root), "--plot", str(path)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = matplotlib.image.imread(png)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    text = svg.read_text()
    assert "<svg" in text and "1.10x" in text  # the ratio is annotated over the bars
    assert main(["compare", "old", "new", "--store", str(two_stacks.root), "--plot", str(tmp_path / "x.gif")]) == 2


def test_fail_on_regression_exit_codes(capsys, store):
    put(store, sweep(stack_ref("base"), 100, noise=0.002) + sweep(stack_ref("worse"), 90, noise=0.002, seed=3)
        + sweep(stack_ref("same"), 100, noise=0.002, seed=6))
    args = ["--store", str(store.root), "--fail-on-regression"]
    assert main(["compare", "base", "worse", *args]) == 4
    assert "significantly slower" in capsys.readouterr().err
    assert main(["compare", "base", "same", *args]) == 0
    assert main(["compare", "worse", "base", *args]) == 0  # faster is not a regression
    assert main(["compare", "base", "worse", "--store", str(store.root)]) == 0  # only with the flag
    capsys.readouterr()


def test_compare_help_documents_the_regression_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "4 with --fail-on-regression" in capsys.readouterr().out
