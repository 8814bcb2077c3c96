"""repro/pipeline/runs.py, record_view.py and importing.py without the CLI: they take a store's root and return
typed results (issue 39 item 1); `import --help` and `capture --help` load no heavy module."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import InputError
from repro.pipeline.importing import ImportRequest, import_runs
from repro.pipeline.record_view import show_run
from repro.pipeline.runs import list_runs, parse_filters, prune_runs, remove_runs
from tests.unit.test_cli_startup import HEAVY, _help_run

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "logs"


@pytest.fixture()
def stored(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store holding two imported tf_cnn_benchmarks runs (1 and 2 workers); their ids, 1 worker first."""
    root = tmp_path / "results"
    result = import_runs(ImportRequest(stack="tf114", store=str(root), files=(
        str(LOGS / "tf_cnn_benchmarks_1gpu.log"), str(LOGS / "tf_cnn_benchmarks_horovod_2gpu.log"))))
    assert result.problem is None and result.count("imported") == 2
    return root, [r.id for r in result.runs]


def test_list_runs_filters_and_keeps_the_images_per_sec_column_for_throughput_runs(stored):
    root, ids = stored
    listing = list_runs(root, "tf114", parse_filters(workers=["2"]))
    assert [r.id for r in listing.runs] == [ids[1]] and listing.figures == {}
    assert listing.figure(listing.runs[0]) == (701.28, "images/sec")


def test_remove_runs_dry_run_removes_nothing_and_then_removes(stored):
    root, ids = stored
    removal = remove_runs(root, [ids[0]], dry_run=True)
    assert removal.dry_run and [r.id for r in removal.runs] == [ids[0]] and removal.files == ()
    assert len(list_runs(root).runs) == 2
    remove_runs(root, [ids[0]])
    assert [r.id for r in list_runs(root).runs] == [ids[1]]


def test_prune_runs_needs_a_criterion_and_filters_need_a_stack(stored):
    root, _ = stored
    with pytest.raises(InputError, match="give what to remove"):
        prune_runs(root, dry_run=True)
    with pytest.raises(InputError, match="narrow --stack"):
        prune_runs(root, failed=True, filters=parse_filters(workers=["2"]), dry_run=True)
    assert [r.workers for r in prune_runs(root, stack="tf114", filters=parse_filters(workers=["2"]),
                                          dry_run=True).runs] == [2]


def test_show_run_gives_the_record_and_its_terminal_text(stored):
    root, ids = stored
    shown = show_run(root, ids[1])
    assert shown.data["id"] == ids[1] and shown.data["settings"]["workers"] == 2
    assert shown.text.startswith(f"id:             {ids[1]}\n") and "images_per_sec: 701.28\n" in shown.text


def test_a_store_that_is_not_a_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such directory"):
        list_runs(tmp_path / "nowhere")


@pytest.mark.parametrize("argv", [("import", "--help"), ("capture", "--help")], ids=" ".join)
def test_import_and_capture_help_load_no_heavy_module(argv):
    run = _help_run(*argv)
    assert run["code"] == 0 and "--format" in run["help"]
    assert [m for m in HEAVY if m in run["modules"]] == []
