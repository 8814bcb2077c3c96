"""The plumbing probe (repro.workloads.probe): its place in the registries, its rank from each launcher's
environment, the merge of the ranks' lines, and single-process runs of the real program (no MPI)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from repro.launch.workloads import WORKLOADS, find_result
from repro.results.record import Settings
from repro.workloads import WorkloadError, catalog, probe
from repro.workloads import _common as common

ROOT = Path(__file__).resolve().parents[2]


def run_probe(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "repro.workloads.probe", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_probe_is_registered_like_any_workload():
    assert "probe" in WORKLOADS.names()
    assert catalog.kind_of("probe") == "throughput" and catalog.spec_of("probe") is probe.SPEC
    point = Settings(workload="probe", workers=2, batch_per_worker=8, warmup_steps=1, steps=3, threads=1,
                     extra={"step_time": 0.02, "fail_at_step": 2})
    argv = WORKLOADS.get("probe").command(point, "python3")
    assert argv[:3] == ["python3", "-m", "repro.workloads.probe"]
    assert argv[3:] == ["--batch-size", "8", "--warmup-steps", "1", "--steps", "3", "--step-time", "0.02",
                        "--fail-at-step", "2", "--intra-threads", "1"]


def test_the_probe_imports_nothing_from_repro_outside_its_package():
    # it is copied into images and runs on hosts without repro: only repro.workloads and the standard library
    source = Path(probe.__file__).read_text()
    assert "from repro" not in source.replace("from repro.workloads", "") and "import tensorflow" not in source


@pytest.mark.parametrize(("env", "world"), [
    ({}, (0, 1, 0, 1, "none")),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
      "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, (3, 4, 1, 2, "mpirun")),
    ({"PMIX_RANK": "1", "SLURM_NTASKS": "2", "SLURM_PROCID": "1", "SLURM_LOCALID": "0",
      "SLURM_NTASKS_PER_NODE": "1(x2)"}, (1, 2, 0, 1, "pmix")),
    ({"SLURM_PROCID": "2", "SLURM_STEP_NUM_TASKS": "4", "SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": "2"},
     (2, 4, 0, 2, "srun")),
    ({"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}, (1, 2, 1, 2, "torchrun")),
])
def test_rank_and_size_come_from_the_launchers_environment(env, world):
    found = probe.world_of(env)
    assert (found["rank"], found["size"], found["local_rank"], found["local_size"], found["launcher"]) == world


def test_a_rank_outside_its_world_is_refused():
    with pytest.raises(WorkloadError, match="not a rank of a world of 2"):
        probe.world_of({"RANK": "2", "WORLD_SIZE": "2"})


def rank_line(rank: int, steps: int = 3) -> str:
    record = {"rank": rank, "local_rank": 0, "hostname": f"h{rank + 1}", "addresses": [f"10.0.0.{rank + 1}"],
              "device": "CPU", "warmup_times": [0.5], "step_times": [0.1 * (rank + 1)] * steps, "items_per_step": 8}
    return probe.RANK_PREFIX + json.dumps(record)


def rank0_result(size: int) -> dict:
    line = rank_line(0)[len(probe.RANK_PREFIX):]
    return {"format": common.FORMAT, "workload": "probe", "world": {"size": size}, "ranks": [json.loads(line)],
            "metrics": probe.metrics([json.loads(line)])}


def test_merge_completes_rank_0s_result_with_every_other_ranks_line():
    # the lines as mpirun --tag-output or srun --label would show them, and in any order
    output = "\n".join([f"[1,2]<stdout>:{rank_line(2)}", "noise", f"1: {rank_line(1)}"])
    merged = probe.merge(rank0_result(3), output)
    assert merged is not None
    assert [r["rank"] for r in merged["ranks"]] == [0, 1, 2]
    # the slowest rank (0.3 s a step) sets the job's rate: 3 ranks x 8 items x 3 steps / 0.9 s
    assert merged["metrics"]["images_per_sec"] == pytest.approx(24 * 3 / 0.9)
    assert merged["metrics"]["step_time_median"] == pytest.approx(0.3)


def test_merge_gives_no_result_when_a_rank_reported_nothing():
    assert probe.merge(rank0_result(3), rank_line(2)) is None  # rank 1 failed or was lost
    assert probe.merge(None, rank_line(1)) is None  # rank 0 printed nothing
    assert probe.merge(rank0_result(2), rank_line(1) + "\n" + rank_line(1)) is not None  # a repeated line counts once
    assert probe.merge(rank0_result(2), rank_line(1)[:40]) is None  # a cut line is no report


def test_the_fault_rank_defaults_to_the_last_and_must_exist():
    args = probe.build_parser().parse_args(["--fail-at-step", "2"])
    assert [probe.faulty(args, {"rank": r, "size": 3}) for r in range(3)] == [False, False, True]
    args = probe.build_parser().parse_args(["--fault-rank", "0"])
    assert [probe.faulty(args, {"rank": r, "size": 2}) for r in range(2)] == [True, False]
    with pytest.raises(WorkloadError, match="--fault-rank 5"):
        probe.faulty(probe.build_parser().parse_args(["--fault-rank", "5"]), {"rank": 0, "size": 2})


def test_bad_flags_are_one_line_errors():
    with pytest.raises(WorkloadError, match="--step-kind"):
        probe.build_parser().parse_args(["--step-kind", "nap"])
    with pytest.raises(WorkloadError, match="--step-time"):
        probe.build_parser().parse_args(["--step-time", "-1"])


@pytest.mark.parametrize("kind", probe.STEP_KINDS)
def test_one_process_prints_a_result_records_read(kind, tmp_path):
    output = tmp_path / "result.json"
    proc = run_probe("--step-kind", kind, "--step-time", "0.02", "--warmup-steps", "1", "--steps", "3",
                     "--batch-size", "4", "--output", str(output))
    assert proc.returncode == 0, proc.stderr
    result = WORKLOADS.get("probe").parse(proc.stdout)
    assert result is not None and result == find_result(proc.stdout) == json.loads(output.read_text())
    (rank,) = result["ranks"]
    assert len(rank["warmup_times"]) == 1 and len(rank["step_times"]) == 3 and rank["items_per_step"] == 4
    assert all(t >= 0.02 for t in rank["step_times"])  # each step lasts at least --step-time, whatever its kind
    assert result["settings"]["step_kind"] == kind and result["world"] == {
        "size": 1, "controller": "none", "launcher": "none", "gpu": False}
    assert result["metrics"]["images_per_sec"] == pytest.approx(4 * 3 / sum(rank["step_times"]))


def test_fail_at_step_exits_with_the_error_and_prints_no_result():
    proc = run_probe("--fail-at-step", "2", "--steps", "3")
    assert proc.returncode == 2
    assert "repro-workload error: probe: rank 0 fails at step 2 (--fail-at-step)" in proc.stderr
    assert common.RESULT_PREFIX not in proc.stdout


def test_hang_at_step_stops_there_until_killed():
    with pytest.raises(subprocess.TimeoutExpired) as killed:
        run_probe("--hang-at-step", "2", "--warmup-steps", "0", "--steps", "3", timeout=4)
    said = killed.value.stderr.decode() if isinstance(killed.value.stderr, bytes) else str(killed.value.stderr)
    assert "probe: rank 0 hangs at step 2 (--hang-at-step)" in said


def test_only_rank_0_prints_the_result_the_others_their_rank_line():
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}
    proc = run_probe("--steps", "2", "--warmup-steps", "0", env=env)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert line.startswith(probe.RANK_PREFIX) and json.loads(line[len(probe.RANK_PREFIX):])["rank"] == 1
