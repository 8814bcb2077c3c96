"""The shipped c4140 inventory names its known_hosts file once: Ansible's ssh arguments take it from
repro_known_hosts, which repro's own SSH uses, so the two can never point at different files."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
GROUP_VARS = ROOT / "inventories" / "c4140" / "group_vars" / "all.yml"


def test_the_known_hosts_file_is_named_once():
    text = GROUP_VARS.read_text(encoding="utf-8")
    settings = yaml.safe_load(text)
    path = settings["repro_known_hosts"]
    assert text.count(path) == 1, f"{path} is named more than once in {GROUP_VARS}"
    assert "ansible_ssh_common_args" not in settings  # repro sets the known-hosts options itself (issue 38)


def test_ansible_uses_the_same_known_hosts_file_as_repro():
    """The ssh options repro gives Ansible lead with StrictHostKeyChecking=yes and the inventory's known_hosts."""
    from repro.hosts.inventory import load_inventory
    from repro.hosts.prepare import known_hosts_files, plan

    inventory = load_inventory(ROOT / "inventories" / "c4140")
    run = plan(inventory.path, known_hosts=known_hosts_files(inventory))
    per_host = run.variables()["_repro_ssh_args"]
    known = Path(yaml.safe_load(GROUP_VARS.read_text(encoding="utf-8"))["repro_known_hosts"]).expanduser()
    assert sorted(per_host) == ["c4140-1", "c4140-2"]
    for line in per_host.values():
        args = shlex.split(line)
        assert args[:2] == ["-o", "StrictHostKeyChecking=yes"]
        assert f"UserKnownHostsFile={known}" in args
