"""A TensorFlow stack against its PyTorch counterpart (issue 41, item 3): an interleaved sweep runs each stack's
counterpart of the workload (its framework's program of the same family, model, batch and workers), compare gives
the interleaved runs a verdict with a note that the implementations differ, and the command compare suggests for
runs that were not interleaved is one `repro bench` accepts and that measures the points compared."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest

from repro.cli import main
from repro.compare import Options, compare
from repro.compare.render import render
from repro.errors import InputError
from repro.hosts.inventory import load_inventory
from repro.launch.points import SweepSpec
from repro.manifest import load_stack
from repro.pipeline.bench import BenchOptions, bench
from repro.pipeline.suggest import suggest, suggester
from repro.results import stats
from repro.results.record import Comm
from repro.results.store import Store
from repro.workloads.catalog import counterpart, family_of
from tests.unit import real_steps

ROOT = Path(__file__).resolve().parents[2]
TF, TORCH = ROOT / "stacks" / "cpu-tf215.yaml", ROOT / "stacks" / "cpu-torch213.yaml"
LOCALHOST = ROOT / "inventories" / "localhost"
RUNS = real_steps.runs(workers=1)


def _plans(tmp_path: Path, spec: SweepSpec, stacks=(TF, TORCH)):
    loaded = [load_stack(s) for s in stacks]
    return bench(loaded, load_inventory(LOCALHOST), spec, BenchOptions(dry_run=True), Store(tmp_path / "store")).plans


def _module(plan) -> str:
    argv = plan.exec_argv
    return next(argv[i + 1] for i, word in enumerate(argv) if word == "-m" and argv[i + 1].startswith("repro."))


# --------------------------------------------------------------------------- counterparts, from the specs


def test_a_workload_family_names_its_program_for_each_framework():
    assert [counterpart(name, "tensorflow") for name in ("torch_cnn", "torch_allreduce", "torch_tta")] == [
        "cnn", "allreduce", "tta"]
    assert counterpart("torch_cnn", "pytorch") == "torch_cnn" and counterpart("cnn", "pytorch") == "cnn"
    assert counterpart("tf_cnn_benchmarks", "pytorch") is None and counterpart("probe", "pytorch") == "probe"
    assert family_of("torch_cnn") == family_of("cnn") == "cnn"


def test_interleaving_a_tensorflow_stack_with_its_pytorch_counterpart_runs_each_frameworks_program(tmp_path):
    # each stack's own benchmark.workload (cnn; torch_cnn) is one family: before, "must sweep the same points"
    a, b = _plans(tmp_path, SweepSpec(workers=(1,)))
    assert (_module(a), _module(b)) == ("repro.workloads.cnn", "repro.workloads.torch_cnn")
    assert (a.point.model, a.point.batch_per_worker) == (b.point.model, b.point.batch_per_worker) == ("resnet20", 32)
    assert a.point.backend == "mpi" and b.point.comm == Comm(library="torch.distributed", backend="gloo")
    # a PyTorch workload chosen for both: the TensorFlow stack runs its family's TensorFlow program
    a, b = _plans(tmp_path, SweepSpec(workload="torch_cnn", workers=(1,), models=("resnet32",)))
    assert (a.point.workload, _module(a), b.point.workload, _module(b)) == (
        "cnn", "repro.workloads.cnn", "torch_cnn", "repro.workloads.torch_cnn")
    assert a.point.model == b.point.model == "resnet32"


def test_across_frameworks_each_backend_flag_goes_to_the_stacks_whose_program_takes_it(tmp_path):
    spec = SweepSpec(workload="allreduce", workers=(1,), backends=("gloo",), backends_given=True,
                     extra={"dist_backend": "gloo"})
    a, b = _plans(tmp_path, spec)
    assert a.point.backend == "gloo" and "dist_backend" not in a.point.extra  # Horovod's Gloo controller
    assert b.point.comm == Comm(library="torch.distributed", backend="gloo") and b.point.extra["dist_backend"] == "gloo"
    assert "--dist-backend" not in a.exec_argv and "--dist-backend" in b.exec_argv


def test_a_workload_without_a_counterpart_or_points_that_differ_are_refused(tmp_path):
    with pytest.raises(InputError, match="tf_cnn_benchmarks runs on tensorflow, but stack cpu-torch213 pins pytorch"):
        _plans(tmp_path, SweepSpec(workload="tf_cnn_benchmarks"))
    other = tmp_path / "cpu-torch213-r32.yaml"
    other.write_text(TORCH.read_text().replace("model: resnet20", "model: resnet32"))
    with pytest.raises(InputError, match="counterpart points") as refused:
        _plans(tmp_path, SweepSpec(workers=(1,)), (TF, other))
    assert "resnet20" in str(refused.value) and "resnet32" in str(refused.value)
    # one framework: unchanged, each stack as asked
    with pytest.raises(InputError, match="must sweep the same points"):
        _plans(tmp_path, SweepSpec(workers=(1,)), (ROOT / "stacks" / "cpu-torch213-lm.yaml", TORCH))


# --------------------------------------------------------------------------- compare


def _side(framework: str, workload: str, file: Path, *, scale: float, pairs: bool, comm: Comm):
    out = []
    for i, run in enumerate(RUNS[:6]):
        rec = real_steps.record(run, file.stem, n=i, scale=scale * float(np.exp(0.005 * (i % 3))),
                                pair=f"p{i}" if pairs else None)
        stack = rec.stack.model_copy(update={"file": str(file.relative_to(ROOT)),
                                             "manifest": {framework: {"version": "x"}}})
        settings = rec.settings.model_copy(update={"workload": workload, "comm": comm})
        out.append(rec.model_copy(update={"stack": stack, "settings": settings,
                                          "created": f"2026-11-28T01:{10 + i:02d}:00+00:00"}))
    return out


HOROVOD = Comm(library="horovod", backend="mpi")
TORCH_GLOO = Comm(library="torch.distributed", backend="gloo")


def test_compare_gives_interleaved_tensorflow_and_pytorch_runs_a_verdict_and_says_the_implementations_differ():
    old = _side("tensorflow", "cnn", TF, scale=1.0, pairs=True, comm=HOROVOD)
    new = _side("pytorch", "torch_cnn", TORCH, scale=0.8, pairs=True, comm=TORCH_GLOO)
    result = compare(old, new, Options())
    (row,) = result.throughput
    assert row.ratio.method == stats.PAIRED and row.ratio.verdict == stats.FASTER
    (note,) = [n for n in result.notes if "implementations differ" in n]
    assert "TensorFlow's program (repro.workloads.cnn)" in note and "PyTorch's (repro.workloads.torch_cnn)" in note
    assert "implementations differ" in render(result, "table").replace("\n  ", " ")


def test_the_interleaved_command_compare_suggests_across_frameworks_is_one_bench_accepts(tmp_path, monkeypatch,
                                                                                          capsys):
    monkeypatch.chdir(ROOT)
    old = _side("tensorflow", "cnn", TF, scale=1.0, pairs=False, comm=HOROVOD)
    new = _side("pytorch", "torch_cnn", TORCH, scale=0.8, pairs=False, comm=TORCH_GLOO)
    store = Store(tmp_path / "store")
    command, why = suggest(old, new, store=store)
    assert why == "" and command == (
        "repro bench --stack stacks/cpu-tf215.yaml --stack stacks/cpu-torch213.yaml --runtime host --workload cnn "
        "--model resnet20 --batch-size 8 --workers 1 --until-verdict")  # before: --backends mpi, refused by torch
    assert main([*shlex.split(command)[1:], "--dry-run", "--store", str(tmp_path / "store")]) == 0
    printed = capsys.readouterr().out
    assert "repro.workloads.cnn" in printed and "repro.workloads.torch_cnn" in printed
    text = render(compare(old, new, Options(), suggest=suggester(store, None)), "table").replace("\n  ", " ")
    assert command in text


def test_compare_suggests_no_command_that_would_measure_other_points(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    store = Store(tmp_path / "store")
    base = ROOT / "stacks" / "cpu-tf212.yaml"
    xla = _side("tensorflow", "cnn", ROOT / "stacks" / "cpu-tf215-xla.yaml", scale=1.0, pairs=False, comm=HOROVOD)
    xla = [r.model_copy(update={"settings": r.settings.model_copy(update={"compile": True})}) for r in xla]
    plain = [r.model_copy(update={"settings": r.settings.model_copy(update={"compile": False})})
             for r in _side("tensorflow", "cnn", base, scale=1.0, pairs=False, comm=HOROVOD)]
    # XLA is the stacks' own difference (cpu-tf215-xla's default): left to them, not swept on both (--xla off,on)
    command, _ = suggest(plain, xla, store=store)
    assert command is not None and "--xla" not in command and command.endswith("--until-verdict")
    # XLA was a flag of one side's sweep only: no single interleaved command measures both sides' points
    forced = [r.model_copy(update={"stack": r.stack.model_copy(update={"file": "stacks/cpu-tf215.yaml"})})
              for r in xla]
    command, why = suggest(plain, forced, store=store)
    assert command is None and "would not measure the points" in why
    text = render(compare(plain, forced, Options(), suggest=suggester(store, None)), "table").replace("\n  ", " ")
    assert "no interleaved command is suggested" in text and "repro bench --stack" not in text
    # a manifest that is gone: `repro bench` would refuse it, so nothing is suggested
    gone = [r.model_copy(update={"stack": r.stack.model_copy(update={"file": "stacks/no-such.yaml"})}) for r in xla]
    command, why = suggest(plain, gone, store=store)
    assert command is None and "would refuse it" in why


def test_the_suggested_command_line_is_the_sweep_that_was_checked(tmp_path, monkeypatch):
    # the argv and the checked SweepSpec are one value: `repro bench`'s own parser reads the argv back into it
    from repro.cli import build_parser
    from repro.cli.bench_cmds import sweep_spec
    from repro.pipeline.suggest import command_for

    monkeypatch.chdir(ROOT)
    old = _side("tensorflow", "cnn", TF, scale=1.0, pairs=False, comm=Comm(library="horovod", backend="gloo"))
    new = _side("pytorch", "torch_cnn", TORCH, scale=0.8, pairs=False, comm=TORCH_GLOO)
    new = [r.model_copy(update={"settings": r.settings.model_copy(update={"extra": {"dist_backend": "gloo"}})})
           for r in new]
    made = command_for(old, new, store_flag=str(tmp_path / "store"))
    argv = made.argv()
    assert "--backends" in argv and "--dist-backend" in argv
    assert sweep_spec(build_parser().parse_args(argv[1:])) == made.spec
    command, why = suggest(old, new, store=Store(tmp_path / "store"), store_flag=str(tmp_path / "store"))
    assert (command, why) == (shlex.join(argv), "")
