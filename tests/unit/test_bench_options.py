"""Every `repro bench` option is checked before anything starts: exit 2, one line naming the option, no traceback,
no record (the issue's list of options that failed late or crashed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.cli import main

ROOT = Path(__file__).resolve().parents[2]
BASE = ["bench", "--stack", str(ROOT / "stacks" / "cpu-tf215.yaml"), "--hosts", str(ROOT / "inventories" / "localhost")]


@pytest.mark.parametrize(("extra", "says"), [
    (["--precision", "fp8"], "--precision: expected one of fp32, fp16"),
    (["--precision", "FP16"], "--precision: expected one of fp32, fp16"),
    (["--model", "nosuchnet"], "--model: expected one of"),
    (["--backends", "foo"], "--backends: expected mpi or gloo"),
    (["--steps", "0"], "--steps"),
    (["--timeout", "-5"], "--timeout"),
    (["--workload", "allreduce", "--dtypes", "fp64"], "--dtypes: expected a comma-separated list of fp32, fp16"),
    (["--workload", "tta", "--dataset", "mnist"], "--dataset: expected digits, cifar10:DIR or imagenet:DIR"),
    (["--workload", "allreduce", "--model", "resnet50"], "workload allreduce takes no --model"),
    (["--workload", "tta", "--precision", "fp16"], "workload tta takes no --precision"),
    (["--workload", "tta", "--xla", "on"], "workload tta takes no --xla"),
    (["--workers", "1", "--workers", "x"], "--workers"),
    (["--repeats", "0"], "--repeats"),
    (["--steps", "5", "--steps", "6"], "--steps given 2 times"),
])
def test_a_bad_option_is_refused_before_anything_starts(extra, says, tmp_path, capsys):
    try:
        code = main([*BASE, *extra, "--store", str(tmp_path), "--dry-run"])
    except SystemExit as exc:  # argparse's own type checks exit 2 too
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert says in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_repeated_list_flags_accumulate(tmp_path, capsys):
    assert main([*BASE, "--workers", "1", "--workers", "2", "--model", "resnet20,resnet32", "--dry-run",
                 "--store", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for model in ("resnet20", "resnet32"):
        for workers in (1, 2):
            assert f"model={model} workers={workers}" in out
