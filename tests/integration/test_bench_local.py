"""`repro bench` on this machine with the host runtime and Open MPI: real TensorFlow and Horovod where the
framework is the subject (the README's job, time to accuracy), the probe workload (no framework) where the
plumbing is (scaling modes, resume, interleaving, interrupts)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.hosts.inventory import load_inventory
from repro.launch.points import SweepSpec
from repro.manifest import load_stack
from repro.pipeline.bench import BenchOptions, bench
from repro.results.store import Store
from tests.integration.cli import run_repro

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "stacks" / "cpu-tf215.yaml"
LOCAL = ROOT / "inventories" / "localhost"
FAST = ["--warmup-steps", "1", "--steps", "4", "--batch-size", "8"]
PROBE = ["--workload", "probe", *FAST]


def repro(*args: str, store: Path, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    return run_repro(*args, "--store", str(store), timeout=timeout, check=check)


def workers_marked(marker: str) -> list[int]:
    """Pids of repro.workloads processes whose environment carries `marker` (this test's, not another run's)."""
    found = []
    needle = marker.encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if b"repro.workloads" in (proc / "cmdline").read_bytes() and needle in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:  # gone meanwhile
            continue
    return found


@pytest.mark.tf
def test_readme_main_job_benchmarks_1_and_2_workers_and_prints_the_scaling_table(readme_job):
    # the README's main job (1 and 2 workers, FAST's settings), run once per session by tests/conftest.py
    store, proc = readme_job.store, readme_job.proc
    assert "speedup" in proc.stdout and "efficiency" in proc.stdout, proc.stdout
    records = Store(store).records()
    # the default: 3 runs of every point, enough for compare's verdicts
    assert sorted((r.status, r.settings.workers, len(r.ranks), r.sweep.repeat) for r in records) == [
        ("ok", 1, 1, 0), ("ok", 1, 1, 1), ("ok", 1, 1, 2), ("ok", 2, 2, 0), ("ok", 2, 2, 1), ("ok", 2, 2, 2)]
    for r in records:
        assert r.runtime == "host" and r.host_software["localhost"].framework("tensorflow").version == "2.15.1"
        assert all(len(rank.step_times) == 4 and len(rank.warmup_times) == 1 for rank in r.ranks)
        assert r.command[0] == "mpirun" and r.stack.hash == load_stack(STACK).hash


def test_strong_scaling_records_the_divided_batch_and_weak_the_fixed_one(tmp_path):
    loaded, inv, store = load_stack(STACK), load_inventory(LOCAL), Store(tmp_path)
    quiet = lambda line: None  # noqa: E731
    strong = bench(loaded, inv, SweepSpec(workers=(1, 2), batch_sizes=(16,), scaling="strong", warmup_steps=1,
                                          steps=3, workload="probe"), BenchOptions(), store, quiet)
    assert [(r.settings.batch_per_worker, r.settings.global_batch) for r in strong.records] == [(16, 16), (8, 16)]
    assert [rank.items_per_step for rank in strong.records[1].ranks] == [8, 8]  # what the workers really ran
    weak = bench(loaded, inv, SweepSpec(workers=(2,), batch_sizes=(16,), scaling="weak", warmup_steps=1, steps=3,
                                        workload="probe"), BenchOptions(), store, quiet)
    (rec,) = weak.records
    assert (rec.settings.batch_per_worker, rec.settings.global_batch) == (16, 32)
    assert [rank.items_per_step for rank in rec.ranks] == [16, 16]


def test_resume_runs_only_what_is_missing(tmp_path):
    store = tmp_path / "store"
    sweep = ["bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workers", "1,2", *PROBE]
    repro(*sweep, store=store)
    first = Store(store).records()
    assert len(first) == 6 and all(r.status == "ok" for r in first)
    lost = next(r for r in first if r.settings.workers == 2 and r.sweep.repeat == 1)
    Store(store).run_path(lost).unlink()  # lose one run of the 2-worker point
    proc = repro(*sweep, "--resume", store=store)
    assert proc.stderr.count("skipped (--resume)") == 5, proc.stderr
    after = Store(store).records()
    assert len(after) == 6
    kept = {r.id for r in first} - {lost.id}
    assert kept <= {r.id for r in after}  # the kept runs were not re-run
    (again,) = [r for r in after if r.id not in kept]  # the lost one was
    assert (again.settings.workers, again.sweep.repeat, again.status) == (2, 1, "ok")


def test_interleaved_a_b_runs_alternate_on_the_same_host_and_compare_pairs_them(tmp_path):
    """Seed 003's question asked the careful way: both stacks' runs alternate (A B A B), and compare pairs them."""
    twin = tmp_path / "cpu-tf215-twin.yaml"  # the same software; one extra variable, so another stack hash
    twin.write_text(f"extends: {STACK}\ndescription: cpu-tf215 twin\nenv: {{REPRO_TWIN: '1'}}\n")
    store = tmp_path / "store"
    # steps of 0.3 s: each run lasts over a second, so the records' creation times (whole seconds) give their order
    proc = repro("bench", "--stack", str(STACK), "--stack", str(twin), "--hosts", str(LOCAL), "--workers", "1",
                 *PROBE, "--step-time", "0.3", "--repeats", "2", store=store)
    assert "interleaved runs are paired" in proc.stdout, proc.stdout
    records = sorted(Store(store).records(), key=lambda r: (r.created, r.id))
    hashes = [r.stack.hash for r in records]
    assert len(records) == 4 and all(r.status == "ok" for r in records)
    assert hashes[0] == hashes[2] != hashes[1] == hashes[3], "A B A B"
    pairs = [r.sweep.pair for r in records]
    assert pairs[0] == pairs[1] != pairs[2] == pairs[3] and None not in pairs
    compared = repro("compare", str(STACK), str(twin), store=store).stdout
    assert "2 interleaved pairs: paired comparison" in compared, compared
    assert "env.REPRO_TWIN" in compared  # what changed


def test_dry_run_prints_the_commands_and_runs_nothing(tmp_path):
    proc = repro("bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workers", "1,2", "--dry-run",
                 store=tmp_path)
    assert proc.stdout.count("mpirun --allow-run-as-root") == 2
    assert "-np 2 -H localhost:2" in proc.stdout
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupt_ends_the_point_keeps_finished_points_and_leaves_no_workers(tmp_path, sig):
    # The workers inherit repro's environment (local ranks): the marker tells them from other runs' workers.
    marker = f"REPRO_TEST_MARKER={os.getpid()}-{tmp_path.name}"
    env = dict(os.environ, REPRO_TEST_MARKER=marker.split("=", 1)[1])
    args = [sys.executable, "-m", "repro", "bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workload", "probe",
            "--workers", "1,2", "--warmup-steps", "1", "--batch-size", "8", "--steps", "2000", "--step-time", "0.05",
            "--store", str(tmp_path)]
    # SIGINT at its default, as in a terminal: a launcher may have left it ignored (a background job of a
    # script, nohup), and an ignored SIGINT is inherited and would never reach repro
    proc = subprocess.Popen(["env", "--default-signal=INT", *args], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    # interrupt once the first point's worker has started (2000 steps of 50 ms: it is still measuring then)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None and not workers_marked(marker):
        time.sleep(0.5)
    assert workers_marked(marker), "the first point never started a worker"
    time.sleep(3)
    os.kill(proc.pid, sig)
    _out, err = proc.communicate(timeout=300)  # a guard against a hang, not a speed check
    assert proc.returncode == 130, err
    records = Store(tmp_path).records()
    # an interrupt that was ignored would let the 2000 steps finish and store the point as ok
    assert records and records[-1].status == "failed" and "interrupted" in records[-1].failure
    deadline = time.monotonic() + 60
    while workers_marked(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not workers_marked(marker), f"workers survived signal {sig}"


@pytest.mark.tf
def test_time_to_accuracy_reaches_its_target_on_1_and_2_workers(tmp_path):
    proc = repro("bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workload", "tta", "--workers", "1,2",
                 "--repeats", "1", "--dataset", "digits", "--target-accuracy", "0.95", "--max-epochs", "40",
                 store=tmp_path)
    records = Store(tmp_path).records()
    assert [r.settings.workers for r in records] == [1, 2]
    for r in records:
        m = r.metrics
        assert r.status == "ok" and m["reached"] is True, m
        assert m["time_to_accuracy_s"] > 0 and m["final_top1"] >= 0.95
        assert m["compute_s"] > 0 and m["communication_s"] >= 0
        assert m["validation_size"] > 0 and m["train_size"] + m["validation_size"] == 1797
    assert "time to accuracy" in proc.stdout
    json.dumps([r.model_dump(mode="json") for r in records])  # records serialise whole


def test_a_hung_point_ends_at_its_time_limit_and_leaves_no_workers(tmp_path):
    """--timeout outside Slurm: a rank that hangs (the probe's --hang-at-step) ends the point at the limit."""
    marker = f"{os.getpid()}-{tmp_path.name}"
    proc = subprocess.run([sys.executable, "-m", "repro", "bench", "--stack", str(STACK), "--hosts", str(LOCAL),
                           "--workers", "2", *PROBE, "--hang-at-step", "2", "--repeats", "1", "--timeout", "15",
                           "--store", str(tmp_path)], cwd=ROOT, text=True, capture_output=True, timeout=300,
                          env=dict(os.environ, REPRO_TEST_MARKER=marker), check=False)
    assert proc.returncode == 1, proc.stderr
    (rec,) = Store(tmp_path).records()
    assert rec.status == "failed" and "did not finish within its time limit of 15 s" in rec.failure, rec.failure
    deadline = time.monotonic() + 60
    while workers_marked(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not workers_marked(marker), "the hung workers survived the time limit"


def test_a_rank_that_fails_fails_the_point_with_its_error(tmp_path):
    proc = repro("bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workers", "2", *PROBE, "--fail-at-step",
                 "3", "--repeats", "1", store=tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr
    (rec,) = Store(tmp_path).records()
    assert rec.status == "failed" and rec.ranks == []
    assert "probe: rank 1 fails at step 3 (--fail-at-step)" in rec.failure + rec.log_tail, (rec.failure, rec.log_tail)


def test_threads_are_swept_and_reach_the_workers(tmp_path):
    repro("bench", "--stack", str(STACK), "--hosts", str(LOCAL), "--workers", "1", *PROBE, "--threads", "1,2",
          "--step-kind", "matmul", "--repeats", "1", store=tmp_path)
    records = sorted(Store(tmp_path).records(), key=lambda r: r.settings.threads)
    assert [(r.status, r.settings.threads) for r in records] == [("ok", 1), ("ok", 2)]
    # what each worker ran with, as it reported it
    assert [(r.resolved["intra_threads"], r.resolved["env"]["OMP_NUM_THREADS"]) for r in records] == [
        (1, "1"), (2, "2")]
    assert [r.command.count("--intra-threads") for r in records] == [1, 1]
