"""No single input breaks a command (issue 38 item 4): each of these is a located input error, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from repro.results.prune import parse_cutoff

ROOT = Path(__file__).resolve().parents[2]


def test_an_age_beyond_the_calendar_prunes_nothing():
    assert parse_cutoff("99999999999d", datetime.now(timezone.utc)).year == 1


@pytest.mark.parametrize("argv", [["bench", "--stack", "cpu-tf215", "--hosts", "localhost", "--steps=,", "--dry-run"],
                                  ["bench", "--stack", "cpu-tf215", "--hosts", "localhost", "--steps=1,2",
                                   "--dry-run"]])
def test_a_flag_of_one_number_given_none_or_two_is_an_input_error(argv):
    proc = subprocess.run([sys.executable, "-m", "repro", *argv], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--steps" in proc.stderr and "Traceback" not in proc.stderr


def test_a_record_nested_deep_with_a_lone_surrogate_or_a_huge_list_is_unusable_with_its_name(tmp_path):
    from repro.results.jsonfile import UnreadableRecord, read_record

    cases = {"deep.json": '{"id": "x", "a": ' + "[" * 1000 + "]" * 1000 + "}",
             "surrogate.json": '{"id": "\\ud800"}',
             "steps.json": '{"id": "x", "steps": [' + ",".join(["0.1"] * 300_000) + "]}"}
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(UnreadableRecord) as info:
            read_record(path)
        assert str(path) in info.value.message, name
