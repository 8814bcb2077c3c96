"""NVIDIA DLLogger output as imported records (issue 40; real excerpts: tests/data/logs/SOURCES.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.results.importers import import_file, import_stack, parse_overrides
from repro.results.importers.dllogger import DLLOGGER, groups
from repro.results.importers.lines import split_lines
from repro.results.importers.records import read_log, to_record
from repro.workloads.catalog import kind_of

LOGS = Path(__file__).resolve().parents[2] / "tests" / "data" / "logs"
REAL = LOGS / "real"
BERT_SUMMARY = REAL / "github-performancereport-ngc-tf1-bert-base-dllogger-bs64-fp32.log"
BERT_NO_SUMMARY = REAL / "github-performancereport-ngc-tf1-bert-base-dllogger-bs32-fp32-no-summary.log"
INTEL_2TILE = REAL / "github-intel-ai-reference-models-bert-large-tf2-dllogger-2tile.log"
NNUNET = REAL / "github-aichipbenchmark-nnunet-3d-dllogger-benchmark-4runs.log"
STACK = import_stack("dll")


def _imported(path: Path, *sets: str):
    return import_file(str(path), STACK, parse_overrides(list(sets)), {})


def test_a_summary_entry_is_the_stated_figure_with_its_line():
    (record,) = _imported(BERT_SUMMARY, "workers=1").records
    assert record.reported_images_per_sec == 153.458
    assert record.metrics["source"]["figure_line"] == 5
    assert record.metrics["items"] == "samples" and kind_of(record.settings.workload) == "lm"
    provenance = record.metrics["provenance"]
    assert provenance["stated"]["figure"] == "line 5"
    assert "summary entry (line 5)" in provenance["stated"]["throughput_train"]


def test_without_a_summary_the_figure_is_the_mean_after_the_first_iteration_marked_derived():
    (record,) = _imported(BERT_NO_SUMMARY, "workers=1").records
    assert record.reported_images_per_sec == pytest.approx((145.250 + 145.226 + 145.141) / 3, abs=1e-4)
    derived = record.metrics["provenance"]["derived"]
    assert "after the first (warm-up), lines 2-4" in derived["figure"]
    assert "figure" not in record.metrics["provenance"]["stated"]


def test_a_launcher_prefix_is_read_and_horovods_size_gives_the_workers():
    (record,) = _imported(INTEL_2TILE).records
    assert record.reported_images_per_sec == 197.408
    assert record.settings.workers == 2
    assert record.metrics["provenance"]["stated"]["workers"] == "line 8"


def test_nnunet_summaries_count_images_each_its_own_run():
    result = _imported(NNUNET, f"{NNUNET.name}#1:workers=1", f"{NNUNET.name}#2:workers=4",
                       f"{NNUNET.name}#3:workers=8", f"{NNUNET.name}#4:workers=16")
    assert [r.reported_images_per_sec for r in result.records] == [37.348, 141.478, 251.769, 403.595]
    assert {r.settings.workload for r in result.records} == {DLLOGGER}
    assert kind_of(DLLOGGER) == "throughput" and result.records[0].metrics["items"] == "images"


def test_workers_the_log_does_not_show_are_asked_for_naming_file_line_and_field():
    result = _imported(BERT_SUMMARY)
    assert result.status == "failed"
    text = result.error.render()
    assert f"{BERT_SUMMARY}:1:" in text and "workers" in text and "--set" in text


def _dlll(step, data) -> str:
    return "DLLL " + json.dumps({"timestamp": "1616500118.8", "elapsedtime": "12.5", "type": "LOG", "step": step,
                                 "data": data})


def test_the_json_form_with_a_metadata_unit_and_a_summary():
    # the figures of the stdout excerpts, written as DLLogger's JSONStreamBackend writes entries
    meta = 'DLLL {"timestamp": "1616500100.0", "type": "METADATA", "metric": "train.total_ips", ' \
           '"metadata": {"unit": "images/s"}}'
    text = "\n".join([_dlll("PARAMETER", {"batch_size": 256}), meta,
                      _dlll([0, 10], {"train.total_ips": 2800.5}), _dlll([0, 20], {"train.total_ips": 2879.14}),
                      _dlll([], {"train.total_ips": 2870.0})])
    (run,) = read_log(text, "dll.json", given={"workers": 8})
    assert run.format == DLLOGGER and run.figure == 2870.0 and run.figure_line == 5
    assert run.metrics["unit"] == "images/s" and run.metrics["items"] == "images"
    record = to_record(run, STACK)
    assert record.settings.workers == 8 and record.reported_images_per_sec == 2870.0


def test_a_step_that_goes_back_starts_a_new_run():
    line = "DLL 2021-03-23 11:48:{:02d}.824370 - ({}, {}) total_ips : {} images/s"
    text = "\n".join([line.format(1, 0, 10, 100.0), line.format(2, 0, 20, 110.0), line.format(3, 0, 10, 200.0),
                      line.format(4, 0, 20, 210.0)])
    runs = read_log(text, "two.log", given={"workers": 1})
    assert [r.figure for r in runs] == [110.0, 210.0]
    assert [r.lines for r in runs] == ["1-2", "3-4"]


def test_a_throughput_whose_unit_is_not_known_is_refused_at_its_line():
    text = "DLL 2022-05-12 14:09:13.825000 - () throughput_train : 37.348  loss : 0.5"
    with pytest.raises(InputError) as caught:
        read_log(text, "unsure.log", fmt=DLLOGGER)
    rendered = caught.value.render()
    assert "unsure.log:1:" in rendered and "throughput_train" in rendered


def test_a_line_with_no_throughput_key_is_no_run():
    assert groups(split_lines("DLL 2023-09-07 03:06:10.520158 -  total_loss : 10.3896 ")) == []


def test_dllogger_detection_claims_no_other_file_of_the_logs():
    claimed = {p.name for p in LOGS.rglob("*.log") if groups(split_lines(p.read_text(errors="replace")))}
    assert claimed == {p.name for p in REAL.glob("*dllogger*.log")}


def test_an_unknown_format_refusal_lists_dllogger():
    with pytest.raises(InputError) as caught:
        read_log("nothing here\n", "x.log")
    assert "dllogger:" in caught.value.render()
