"""Host keys are checked on every SSH connection Ansible makes for repro, whatever the caller's environment or the
inventory says; what ansible-runner writes keeps no secret; printed command lines are shell-safe (issue 26)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from repro.errors import InputError, InventoryError
from repro.hosts.ansible import PlaybookRun, check_environment
from repro.hosts.ansible_scrub import keep_artifacts, scrub, secret_values
from repro.hosts.inventory import Host, inventory_from_listing, load_inventory
from repro.hosts.inventory_yaml import listing
from repro.hosts.ship import describe
from repro.secrets import marker

ROOT = Path(__file__).resolve().parents[2]
UNCHECKED = [
    ("ansible_host_key_checking", "false"),
    ("ansible_ssh_host_key_checking", "no"),
    ("ansible_ssh_common_args", "'-o StrictHostKeyChecking=no'"),
    ("ansible_ssh_extra_args", "'-o UserKnownHostsFile=/dev/null'"),
    ("ansible_ssh_args", "'-C -o StrictHostKeyChecking off'"),
]


def _inventory(tmp_path: Path, var: str, value: str) -> Path:
    path = tmp_path / "hosts.yml"
    path.write_text(f"all:\n  children:\n    workers:\n      hosts:\n        n1:\n          ansible_host: 10.0.0.1\n"
                    f"          {var}: {value}\n")
    return path


@pytest.mark.parametrize(("var", "value"), UNCHECKED)
def test_an_inventory_that_turns_host_key_checking_off_is_refused_at_file_line(tmp_path, var, value):
    path = _inventory(tmp_path, var, value)
    for read in (lambda: inventory_from_listing(listing(path), path), lambda: load_inventory(path)):
        with pytest.raises(InventoryError) as info:
            read()
        (diag,) = info.value.diagnostics
        assert (diag.location.file, diag.location.line) == (str(path), 7), diag
        assert "host-key checking off" in diag.message and var in diag.path
    ok = _inventory(tmp_path, "ansible_ssh_common_args", "'-o StrictHostKeyChecking=yes -o UserKnownHostsFile=/k'")
    assert load_inventory(ok).hosts[0].address == "10.0.0.1"


def test_ansible_runs_with_host_key_checking_on_and_the_environment_cannot_turn_it_off():
    """ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless the caller sets it; repro sets it, and refuses
    ssh options in its own environment that accept any host key."""
    env = PlaybookRun("site.yml", "/inv").env()
    assert env["ANSIBLE_HOST_KEY_CHECKING"] == env["ANSIBLE_SSH_HOST_KEY_CHECKING"] == "True"
    with pytest.raises(InputError, match="ANSIBLE_SSH_ARGS: 'StrictHostKeyChecking=no'"):
        check_environment({"ANSIBLE_SSH_ARGS": "-o StrictHostKeyChecking=no"})
    with pytest.raises(InputError, match="ANSIBLE_SSH_EXTRA_ARGS"):
        check_environment({"ANSIBLE_SSH_EXTRA_ARGS": "-oUserKnownHostsFile=/dev/null"})
    check_environment({"ANSIBLE_SSH_ARGS": "-C -o ControlMaster=auto", "ANSIBLE_HOST_KEY_CHECKING": "False"})


@pytest.mark.parametrize("var", ["ANSIBLE_VERBOSITY", "ANSIBLE_DEBUG"])
def test_ansible_verbosity_in_the_environment_does_not_break_reading_an_inventory(monkeypatch, var):
    monkeypatch.setenv(var, "3" if var == "ANSIBLE_VERBOSITY" else "1")
    assert [h.name for h in load_inventory(ROOT / "inventories" / "c4140").hosts][:1] == ["c4140-1"]


def test_prepare_dry_run_shows_no_become_password(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  children:\n    workers:\n      hosts:\n        n1: {ansible_host: 10.0.0.1}\n")
    proc = subprocess.run([sys.executable, "-m", "repro", "prepare", "--hosts", str(inv), "--dry-run",
                           "-e", "ansible_become_pass=Bec0me-S3cret", "-e", "nvidia_manage=true"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Bec0me-S3cret" not in proc.stdout + proc.stderr and marker("Bec0me-S3cret") in proc.stdout
    assert '"nvidia_manage": true' in proc.stdout


def test_kept_artifacts_hold_neither_the_environment_nor_any_secret(tmp_path):
    """ansible-runner's artifacts/<id>/command holds the caller's whole environment and the -e variables."""
    src, dest = tmp_path / "artifacts" / "id", tmp_path / "kept"
    (src / "job_events").mkdir(parents=True)
    dest.mkdir()
    (src / "command").write_text(json.dumps({"command": ["ansible-playbook", "-e", '{"ansible_become_pass": "B3c"}'],
                                             "env": {"AWS_SECRET_ACCESS_KEY": "Aws-S3cret-1"}}))
    (src / "stdout").write_text("TASK [x] echo Aws-S3cret-1 and Inv-P4ssword\nok: [n1]\n")
    (src / "job_events" / "1-a.json").write_text(json.dumps(
        {"event_data": {"res": {"stdout": "token ghp_0123456789abcdefghijABCDEFGHIJ0123", "cmd": "Inv-P4ssword"},
                        "extra_vars": {"ansible_become_pass": "B3c0me-x"}}}))
    (src / "status").write_text("failed")
    secrets = secret_values({"AWS_SECRET_ACCESS_KEY": "Aws-S3cret-1", "PATH": "/usr/bin"},
                            {"n1": {"ansible_become_password": "Inv-P4ssword"}})
    assert secrets == {"Aws-S3cret-1", "Inv-P4ssword"}
    keep_artifacts(src, dest, secrets)
    kept = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert kept == ["job_events/1-a.json", "status", "stdout"]
    blob = b"".join(p.read_bytes() for p in dest.rglob("*") if p.is_file())
    for secret in (b"Aws-S3cret-1", b"Inv-P4ssword", b"B3c0me-x", b"ghp_0123456789"):
        assert secret not in blob
    assert scrub("pw=Inv-P4ssword", secrets) == f"pw={marker('Inv-P4ssword')}"


def test_the_ship_dry_run_line_is_shell_safe_whatever_the_docker_host():
    hostile = "unix:///x.sock;touch /tmp/x"
    for host in (Host("n1", "10.0.0.1", docker_host=hostile), Host("l", "127.0.0.1", local=True, docker_host=hostile)):
        line = describe("img:1", [host]).splitlines()[1].split(": ", 1)[1]
        right = line.split(" | ")[1]
        words = shlex.split(right)
        inner = shlex.split(words[-1]) if words[0] == "ssh" else words
        assert inner == ["docker", "-H", hostile, "load"], line


def test_an_inventory_docker_host_with_shell_characters_is_refused(tmp_path):
    path = _inventory(tmp_path, "repro_docker_host", "'unix:///x.sock;touch /tmp/x'")
    with pytest.raises(InventoryError, match="bad value"):
        inventory_from_listing(listing(path), path)
