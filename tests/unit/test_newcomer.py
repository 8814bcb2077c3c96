"""What a newcomer tripped on in the first hour (issue 41): short errors with a did-you-mean, exit 2 for bad input,
one selector flag, figures that say what they are, PyTorch's names on a PyTorch stack and no false failures."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from repro.cli import build_parser, main
from repro.results.store import Store
from tests.unit import real_steps
from tests.unit.test_steady import QUIET, slow_start

ROOT = Path(__file__).resolve().parents[2]


def _exit(argv: list[str]) -> int:
    """The exit status of `repro argv`, whether argparse or a command ends it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


# -- did you mean ---------------------------------------------------------------------------------------------

def test_a_mistyped_flag_gets_did_you_mean_and_a_short_error(capsys):
    assert _exit(["bench", "--stack", "cpu-tf215", "--warmup_steps", "2"]) == 2
    err = capsys.readouterr().err
    assert "did you mean --warmup-steps" in err
    assert len(err.splitlines()) <= 5  # not the 35 lines of bench's usage
    assert "repro bench --help" in err


def test_a_mistyped_subcommand_gets_did_you_mean(capsys):
    assert _exit(["result"]) == 2
    assert "did you mean results" in capsys.readouterr().err


def _store_with(tmp_path: Path, *stacks: str) -> Store:
    store = Store(tmp_path / "results")
    for i, name in enumerate(stacks):
        for n in range(2):
            store.put(real_steps.record(real_steps.runs(1)[n], name, n=10 * i + n))
    return store


def test_a_misspelt_stack_in_the_store_gets_did_you_mean_and_exit_2(capsys, tmp_path):
    store = _store_with(tmp_path, "cpu-torch213", "cpu-tf215")
    assert main(["compare", "cpu-tf215", "cpu-torch2133", "--store", str(store.root)]) == 2
    err = capsys.readouterr().err
    assert "did you mean cpu-torch213" in err and "Traceback" not in err


def test_compare_against_an_empty_store_is_bad_input(capsys, tmp_path):
    (tmp_path / "results").mkdir()
    assert main(["compare", "cpu-tf215", "cpu-tf215-xla", "--store", str(tmp_path / "results")]) == 2
    assert "holds no runs" in capsys.readouterr().err


def test_compare_refuses_old_equal_to_new(capsys, tmp_path):
    store = _store_with(tmp_path, "cpu-tf215")
    assert main(["compare", "cpu-tf215", "cpu-tf215", "--store", str(store.root)]) == 2
    assert "OLD and NEW are the same runs" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["results"], ["results", "table"], ["compare", "a", "b"]], ids=" ".join)
def test_a_store_that_is_not_a_directory_is_an_error(capsys, tmp_path, argv):
    missing = str(tmp_path / "nonexistent")
    assert main([*argv, "--store", missing]) == 2
    assert f"--store {missing}: no such directory" in capsys.readouterr().err


# -- one spelling per meaning ---------------------------------------------------------------------------------

def test_import_takes_log_format_and_keeps_format_as_an_alias(capsys):
    parser = build_parser()
    for flag in ("--log-format", "--format"):
        args = parser.parse_args(["import", "x.log", "--stack", "s", flag, "mlperf"])
        assert args.log_format == "mlperf"
    with pytest.raises(SystemExit):
        parser.parse_args(["import", "--help"])
    assert "deprecated" in capsys.readouterr().out


def test_results_table_takes_stack_like_results(capsys, tmp_path):
    store = _store_with(tmp_path, "cpu-tf215", "cpu-tf215-xla")
    assert main(["results", "table", "--stack", "cpu-tf215", "--store", str(store.root)]) == 0
    one = capsys.readouterr().out
    assert "cpu-tf215" in one and "cpu-tf215-xla" not in one
    assert main(["results", "--stack", "cpu-tf215", "table", "--store", str(store.root)]) == 0
    assert capsys.readouterr().out == one


# -- -v shows what runs ---------------------------------------------------------------------------------------

def test_verbose_passes_the_workloads_own_output_on_as_it_runs():
    from repro.hosts.inventory import Host
    from repro.hosts.remote import Remote
    from repro.launch.runtimes.watch import Echo, Watch, supervise

    code = "import sys; print('step 1 loss 2.30'); print('REPRO_PROGRESS [1/1] step 1', file=sys.stderr)"
    host = Host(name="localhost", address="127.0.0.1", local=True)
    for verbose in (False, True):
        progress: list[str] = []
        output: list[str] = []
        with Remote(host) as remote, Watch([host]) as watch:
            proc = remote.start([sys.executable, "-c", code])
            callback = Echo(progress.append, output.append) if verbose else progress.append
            assert supervise(proc, watch, 60, time.monotonic(), callback) == (0, None)
        assert progress[:1] == ["[1/1] step 1"]
        assert output == (["step 1 loss 2.30"] if verbose else [])


def test_dash_v_asks_bench_for_command_lines_and_output():
    from repro.cli.bench_cmds import options

    parser = build_parser()
    assert options(parser.parse_args(["bench", "--stack", "cpu-tf215", "-v"])).verbose
    assert not options(parser.parse_args(["bench", "--stack", "cpu-tf215"])).verbose


# -- figures say what they are --------------------------------------------------------------------------------

def test_live_and_stored_all_reduce_figures_name_their_statistic():
    from repro.compare.kinds.allreduce.sweep import allreduce_document
    from repro.formats import render
    from repro.workloads.allreduce import progress_row
    from tests.unit.test_torch_compare import _record

    live = progress_row("fp32", 1000, {"horovod": [0.001, 0.002, 0.003], "wrong": 0}, 2)
    assert "rank 0" in live and "median" in live
    stored = render(allreduce_document([_record("allreduce", "hvd", 1e-4, 1, backend="gloo", extra={})]), "table")
    assert "median latency of one all-reduce (us), over the timed iterations of the 1 run pooled" in stored
    assert "rank 0's median in one run" in stored


def test_the_torch_all_reduce_table_says_torch_not_horovod():
    from repro.compare.kinds.allreduce.sweep import allreduce_document
    from repro.formats import render
    from tests.unit.test_torch_compare import _record

    rec = _record("torch_allreduce", "torch", 0.5e-4, 1, backend=None, extra={"dist_backend": "gloo"})
    rec = rec.model_copy(update={"metrics": {**rec.metrics, "path": "torch.distributed.all_reduce (gloo, cpu)"}})
    text = render(allreduce_document([rec]), "table")
    assert "torch time" in text and "torch.distributed" in text
    assert "hvd" not in text and "Horovod" not in text


def test_captions_say_n_a_for_the_probe_and_torch_compile_for_pytorch():
    from repro.compare.cells import setting_words
    from repro.compare.kinds.throughput.sweep import setting_text

    probe = {"workload": "probe", "precision": None, "xla": None, "extra": {}}
    assert setting_text("precision", probe) == "precision n/a" and setting_text("xla", probe) == "XLA n/a"
    imported = {"workload": "tf_cnn_benchmarks_log", "precision": None, "extra": {}}
    assert setting_text("precision", imported) == "precision unknown"  # a log that did not say
    assert setting_text("xla", {"workload": "torch_cnn", "xla": False, "extra": {}}) == "torch.compile off"
    assert setting_text("xla", {"workload": "cnn", "xla": True, "extra": {}}) == "XLA on"
    assert setting_words("xla", True, workload="torch_cnn") == "torch.compile on"


def test_warm_up_warnings_only_above_a_material_effect():
    from repro.results import steady

    small = real_steps.record(slow_start(QUIET, 2, 1.3), "a")  # the transient moves the mean by about 2%
    (rank,) = small.ranks
    found = steady.rank_steady(rank)
    assert found.warmup > len(rank.warmup_times) and 0.01 < steady._effect(rank, found.warmup) < 0.05
    assert steady.warnings(small) == ()
    large = real_steps.record(slow_start(QUIET, 2, 2.0), "a")  # about 7%
    assert len(steady.warnings(large)) == 1


def test_a_null_manifest_value_is_said_in_repros_words(tmp_path):
    from repro.errors import InputError
    from repro.manifest import load_stack

    text = (ROOT / "stacks" / "cpu-tf215.yaml").read_text().replace("python: \"3.11\"", "python: null")
    assert "python: null" in text
    path = tmp_path / "null.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_stack(path)
    said = exc.value.render()
    assert "python: has no value (`key: null`)" in said and "expected: text" in said
    assert "Input should be" not in said and "None" not in said


# -- plots ----------------------------------------------------------------------------------------------------

def test_a_plots_legend_stays_inside_the_figure():
    pytest.importorskip("matplotlib")
    from repro.results.plots import figure, finish

    fig, rows = figure(1)
    labels = [f"stack-with-a-long-name-{i} (hash 0123456789ab, 4 runs, interleaved with the other)" for i in range(4)]
    for i, label in enumerate(labels):
        rows[0].bars.plot([1, 2], [i, i + 1], label=label)
    handles, names = rows[0].bars.get_legend_handles_labels()
    finish(fig, "title", handles, names)
    renderer = fig.canvas.get_renderer()
    legend = fig.legends[0].get_window_extent(renderer)
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.width


def test_a_conditions_differed_pair_is_marked_unlike_a_verdict():
    from types import SimpleNamespace

    from repro.compare.cells import ratio_label
    from repro.results import stats

    label = {v: ratio_label(SimpleNamespace(ratio=1.1, verdict=v, low=None, high=None))
             for v in (stats.CONDITIONS, stats.SAME, stats.FASTER)}
    assert len(set(label.values())) == 3 and "≠" in label[stats.CONDITIONS] and "≠" not in label[stats.SAME]


# -- PyTorch: no false failures -------------------------------------------------------------------------------

def _torch_host_software():
    from repro.manifest.software import Software

    return Software(python="3.11.2", torch="2.13.0+cpu", torch_backends={"gloo": True, "mpi": False, "nccl": False},
                    mpi="openmpi 4.1.4")


def test_readiness_of_a_pytorch_stack_checks_its_workloads_backend():
    from repro.hosts.readiness import OK, _software
    from repro.manifest import load_stack
    from repro.pipeline.sweep_plan import stack_backend

    loaded = load_stack(ROOT / "stacks" / "cpu-torch213.yaml")
    assert stack_backend(loaded) == "gloo"  # torch_cnn's auto on a CPU stack
    assert stack_backend(load_stack(ROOT / "stacks" / "cpu-tf215.yaml")) == "mpi"  # Horovod's controller
    (check,) = _software("localhost", _torch_host_software(), loaded.stack, stack_backend(loaded))
    assert check.status == OK and "torch 2.13.0+cpu" in check.message and "tensorflow" not in check.message


def test_the_probe_needs_no_framework_backend_on_a_pytorch_stack():
    from repro.launch.points import SweepSpec
    from repro.manifest import load_stack
    from repro.manifest.software import mismatches
    from repro.pipeline.sweep_plan import runtime_backend
    from repro.results.record import Settings

    loaded = load_stack(ROOT / "stacks" / "cpu-torch213.yaml")
    point = Settings(workload="probe", workers=1)
    backend = runtime_backend(point, SweepSpec(workload="probe"), loaded)
    assert backend == ""
    assert mismatches(loaded.stack, _torch_host_software(), where="host", backend=backend) == []


def test_preflight_names_pytorch_for_a_pytorch_stack():
    from repro.launch.runtimes.host import HostRuntime
    from repro.manifest import load_stack
    from repro.pipeline.running import _preparing

    torch = load_stack(ROOT / "stacks" / "cpu-torch213.yaml")
    said = _preparing(HostRuntime(torch.stack), torch)
    assert "PyTorch" in said and "TensorFlow" not in said and "Horovod" not in said
    tf = load_stack(ROOT / "stacks" / "cpu-tf215.yaml")
    assert "TensorFlow, Horovod and MPI" in _preparing(HostRuntime(tf.stack), tf)
