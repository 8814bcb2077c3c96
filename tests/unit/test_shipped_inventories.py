"""The shipped c4140 inventory names its known_hosts file once: Ansible's ssh arguments take it from
repro_known_hosts, which repro's own SSH uses, so the two can never point at different files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GROUP_VARS = ROOT / "inventories" / "c4140" / "group_vars" / "all.yml"


def test_the_known_hosts_file_is_named_once():
    text = GROUP_VARS.read_text(encoding="utf-8")
    settings = yaml.safe_load(text)
    path = settings["repro_known_hosts"]
    assert text.count(path) == 1, f"{path} is named more than once in {GROUP_VARS}"
    assert "{{ repro_known_hosts }}" in settings["ansible_ssh_common_args"]
    assert "StrictHostKeyChecking=yes" in settings["ansible_ssh_common_args"]  # host keys always checked


def test_ansible_uses_the_same_known_hosts_file_as_repro():
    if shutil.which("ansible") is None:
        pytest.skip("ansible is not installed")
    proc = subprocess.run(["ansible", "-i", str(ROOT / "inventories" / "c4140"), "c4140-1", "-m", "debug", "-a",
                           "msg={{ ansible_ssh_common_args }}", "-o"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shown = json.loads(proc.stdout.split("=>", 1)[1])["msg"]
    known = yaml.safe_load(GROUP_VARS.read_text(encoding="utf-8"))["repro_known_hosts"]
    assert f"UserKnownHostsFile={known}" in shown
