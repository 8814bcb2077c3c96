"""Issue 40, item 1: pytorch/examples' ImageNet training lines (imagenet/main.py) become throughput records whose
images/sec is derived, as the program defines its figures, and says so (real logs: tests/data/logs/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.results.importers import import_file, import_stack, parse_overrides, read_log
from repro.results.importers.records import FORMATS
from tests.unit.test_results_cli import run  # the same CLI runner

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs" / "real"
HAMI_30 = REAL / "blog-hami-pytorch-examples-imagenet-resnet18-a40-30pct.log"
HAMI_60 = REAL / "blog-hami-pytorch-examples-imagenet-resnet18-a40-60pct.log"
ASCEND = REAL / "docs-ascend-pytorch-examples-imagenet-resnet50-npu-b32.log"
STACK = import_stack("imagenet")


def test_the_figure_is_the_batch_over_the_mean_logged_time_without_each_epochs_first_iteration():
    (record,) = import_file(str(ASCEND), STACK, (), {}).records
    assert record.settings.workload == "pytorch_imagenet" and "pytorch_imagenet" in FORMATS
    assert (record.settings.global_batch, record.settings.workers, record.settings.model) == (32, 1, "resnet50")
    assert record.reported_images_per_sec == pytest.approx(32 / ((0.097 + 0.096) / 2), abs=1e-3)
    assert record.ranks[0].warmup_times == [8.287] and record.ranks[0].step_times == [0.097, 0.096]
    derived = record.metrics["provenance"]["derived"]
    assert "figure" in derived and "-b" in derived["figure"]
    assert "Time per iteration" in record.metrics["provenance"]["stated"]


def test_the_programs_default_batch_is_used_where_the_command_leaves_it_out_and_said_to_be_derived():
    (record,) = import_file(str(HAMI_30), STACK, (), {}).records
    assert record.settings.global_batch == 256
    provenance = record.metrics["provenance"]
    assert "global_batch" not in provenance["stated"] and "default" in provenance["derived"]["global_batch"]
    assert provenance["stated"]["workers"] == "line 6"  # the warning main.py prints with one GPU


def test_without_a_command_the_batch_is_asked_for_and_then_taken_from_set():
    text = "\n".join(ASCEND.read_text().splitlines()[1:])  # the same real output without its command line
    with pytest.raises(InputError) as refused:
        read_log(text, "cut.log")
    message = refused.value.render()
    assert "cut.log:4:" in message and "batch=N" in message
    (run_,) = read_log(text, "cut.log", given={"batch_per_worker": 32})
    assert run_.figure == pytest.approx(331.606, abs=1e-3)


def test_several_processes_take_their_batch_and_workers_from_set():
    lines = ASCEND.read_text().splitlines()
    text = "\n".join([lines[0].replace("--gpu 1", "--multiprocessing-distributed --world-size 1"),
                      "Use GPU: 0 for training", *lines[1:]])
    with pytest.raises(InputError):
        read_log(text, "ddp.log")  # -b is the node's batch, shared by its processes: not one process's
    (run_,) = read_log(text, "ddp.log", given={"batch_per_worker": 16, "workers": 2})
    assert run_.figure == pytest.approx(32 / 0.0965, abs=1e-3) and run_.settings["extra.distributed"] is True


def test_two_runs_in_one_file_are_two_records():
    text = HAMI_30.read_text() + HAMI_60.read_text()
    runs = read_log(text, "both.log")
    assert [r.figure for r in runs] == [pytest.approx(425.626, abs=1e-3), pytest.approx(816.051, abs=1e-3)]


def test_results_show_says_which_figures_the_log_stated_and_which_were_derived(capsys, tmp_path):
    store = str(tmp_path / "store")
    code, out, err = run(capsys, "import", str(ASCEND), "--stack", "npu", "--store", store)
    assert code == 0, out + err
    out = run(capsys, "results", "--store", store, "--format", "json")[1]
    (rec,) = json.loads(out)
    shown = run(capsys, "results", "show", rec["id"], "--store", store)[1]
    assert "stated by the log:" in shown and "derived by repro:" in shown and "Time per iteration" in shown


def test_a_set_batch_that_contradicts_the_command_is_refused():
    result = import_file(str(ASCEND), STACK, parse_overrides(["batch=64"]), {})
    assert result.status == "failed" and "--set" in result.error.render()
