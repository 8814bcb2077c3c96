"""No single input breaks a command (issue 38 item 4): each of these is a located input error, never a traceback."""

from __future__ import annotations

import os
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


SITE_FILES = {
    "a 5,000-digit number": ('[site]\nstore = "x"\na = ' + "1" * 5000 + "\n", 3, "more than 4,300 digits"),
    "arrays 3,000 deep": ("[site]\n\nx = " + "[" * 3000 + "]" * 3000 + "\n", 3, "nested more than 16"),
    "arrays 20 deep": ("[site]\nx = " + "[" * 20 + "]" * 20 + "\n", 2, "nested more than 16"),
    "inline tables 2,000 deep": ("[kubernetes]\na = " + "{b=" * 2000 + "}" * 2000 + "\n", 2, "nested more than 16"),
    "a table header 3,000 keys deep": ("[" + ".".join(["a"] * 3000) + "]\n", 1, "nested more than 16"),
    "not UTF-8": (b'[site]\nstore = "\xff"\n', 2, "not UTF-8"),
    "not TOML": ("[site\nstore = 1\n", 1, "Expected ']'"),
}


@pytest.mark.parametrize("case", sorted(SITE_FILES))
def test_a_site_file_that_cannot_be_used_is_an_input_error_at_its_line(tmp_path, case):
    from repro.errors import InputError
    from repro.launch.schedulers.kube_site import config_settings
    from repro.resources import read_config

    text, line, expected = SITE_FILES[case]
    path = tmp_path / "repro.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    for read in (lambda: read_config(path), lambda: config_settings([path])):
        with pytest.raises(InputError) as info:
            read()
        assert info.value.message.startswith(f"{path}:{line}: "), info.value.message
        assert expected in info.value.message


def test_every_command_with_a_deep_site_file_in_the_working_directory_says_where(tmp_path):
    (tmp_path / "repro.toml").write_text("[site]\nx = " + "[" * 3000 + "]" * 3000 + "\n")
    proc = subprocess.run([sys.executable, "-m", "repro", "results"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("error: repro.toml:2: ") and "Traceback" not in proc.stderr


@pytest.mark.parametrize("kind", ["device", "fifo", "2 GB file", "fifo in a directory"])
def test_an_inventory_that_is_no_regular_file_of_bounded_size_is_refused_before_ansible(tmp_path, kind):
    from repro.errors import InventoryError
    from repro.hosts.inventory import load_inventory

    path = {"device": Path("/dev/zero"), "fifo": tmp_path / "fifo", "2 GB file": tmp_path / "big",
            "fifo in a directory": tmp_path / "inv"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "2 GB file":
        with open(path, "wb") as fh:
            fh.truncate(2 << 30)  # sparse: no disk used
    elif kind == "fifo in a directory":
        (path / "group_vars").mkdir(parents=True)
        (path / "hosts.yml").write_text("all:\n  hosts:\n    n1:\n")
        os.mkfifo(path / "group_vars" / "all.yml")
    with pytest.raises(InventoryError) as info:
        load_inventory(path, timeout=5)
    assert "not a regular file" in info.value.message or "at most" in info.value.message


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "directory"])
def test_restoring_what_is_no_regular_file_is_refused_at_once(tmp_path, target):
    from repro.errors import InputError
    from repro.image.archive import check_archive

    path = Path(target) if target.startswith("/") else tmp_path / target
    if target == "fifo":
        os.mkfifo(path)
    elif target == "directory":
        path.mkdir()
    with pytest.raises(InputError) as info:
        check_archive(path)
    assert info.value.message.startswith(f"{path}: not a regular file")


def test_a_directory_too_large_to_hold_records_is_not_walked(tmp_path, monkeypatch):
    from repro.errors import InputError
    from repro.results import select

    monkeypatch.setattr(select, "MAX_DIRECTORY_ENTRIES", 10)
    for i in range(12):
        (tmp_path / f"d{i}").mkdir()
    with pytest.raises(InputError) as info:
        select._record_files(tmp_path)
    assert "more than 10 files and directories" in info.value.message
    (tmp_path / "d0" / "r.json").write_text("{}")
    monkeypatch.setattr(select, "MAX_DIRECTORY_ENTRIES", 100)
    assert select._record_files(tmp_path) == [tmp_path / "d0" / "r.json"]


def test_crds_in_a_symlink_loop_or_a_fifo_are_input_errors(tmp_path):
    from repro.errors import InputError
    from repro.launch.schedulers.kube_crds import load_crds

    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InputError) as info:
        load_crds(tmp_path / "loop")
    assert info.value.message.startswith("--crds / repro_k8s_crds: ") and "loop" in info.value.message
    crds = tmp_path / "crds"
    crds.mkdir()
    os.mkfifo(crds / "trainjob.yaml")
    with pytest.raises(InputError) as info:
        load_crds(crds)
    assert info.value.message.startswith(f"{crds / 'trainjob.yaml'}: ") and "not a CRD file" in info.value.message
