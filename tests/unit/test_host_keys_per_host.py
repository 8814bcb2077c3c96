"""Each host's ssh options name its own known-hosts file only (issue 38): a key that host A's file lists is never
offered to ssh for host B, and repro's forced trust options lead every host's line."""

from __future__ import annotations

import shlex

import pytest

from repro.errors import InputError
from repro.hosts import ssh_trust
from repro.hosts.inventory import load_inventory
from repro.hosts.prepare import known_hosts_files, plan

INVENTORY = """\
all:
  hosts:
    a: {ansible_host: 10.0.0.1, repro_known_hosts: KA}
    b: {ansible_host: 10.0.0.2, repro_known_hosts: KB}
    c: {ansible_host: 10.0.0.3}
    here: {ansible_connection: local}
"""


def _options(line: str) -> dict[str, str]:
    words = shlex.split(line)
    return dict(w.split("=", 1) for w, flag in zip(words[1:], words, strict=False) if flag == "-o")


@pytest.fixture()
def variables(tmp_path):
    for name in ("ka", "kb"):
        (tmp_path / name).write_text("")
    path = tmp_path / "hosts.yml"
    path.write_text(INVENTORY.replace("KA", str(tmp_path / "ka")).replace("KB", str(tmp_path / "kb")))
    inventory = load_inventory(path)
    return tmp_path, plan(inventory.path, known_hosts=known_hosts_files(inventory)).variables("/run/cp")


def test_each_host_is_checked_against_its_own_known_hosts_file_only(variables):
    tmp_path, v = variables
    lines = v["_repro_ssh_args"]
    assert sorted(lines) == ["a", "b", "c"]  # the local host has no ssh
    assert _options(lines["a"])["UserKnownHostsFile"] == str(tmp_path / "ka")
    assert _options(lines["b"])["UserKnownHostsFile"] == str(tmp_path / "kb")
    assert _options(lines["c"])["UserKnownHostsFile"] == str(ssh_trust.Path("~/.ssh/known_hosts").expanduser())
    assert str(tmp_path / "kb") not in lines["a"] and str(tmp_path / "ka") not in lines["b"]


def test_ansible_takes_each_hosts_own_line_and_a_host_repro_does_not_know_gets_ssh_s_own_file(variables):
    _, v = variables
    assert v["ansible_ssh_args"] == "{{ _repro_ssh_args[inventory_hostname] | default(_repro_ssh_args_default) }}"
    assert _options(v["_repro_ssh_args_default"])["UserKnownHostsFile"].endswith("/.ssh/known_hosts")
    assert (v["ansible_ssh_executable"], v["ansible_scp_executable"], v["ansible_sftp_executable"]) == \
        ("ssh", "scp", "sftp")


def test_every_hosts_line_leads_with_repro_s_forced_trust_options(variables):
    _, v = variables
    forced = [w for name, value in ssh_trust.TRUST for w in ("-o", f"{name}={value}")]
    for line in (*v["_repro_ssh_args"].values(), v["_repro_ssh_args_default"]):
        words = shlex.split(line)
        assert words[:len(forced)] == forced
        assert words[:2] == ["-o", "StrictHostKeyChecking=yes"]


def test_no_two_hosts_share_an_ssh_control_socket(variables):
    _, v = variables
    paths = [_options(line)["ControlPath"] for line in (*v["_repro_ssh_args"].values(), v["_repro_ssh_args_default"])]
    assert len(set(paths)) == len(paths) and all(p.startswith("/run/cp/") and p.endswith("%C") for p in paths)


def test_a_known_hosts_path_holding_a_template_is_refused(tmp_path):
    assert "Jinja" in ssh_trust.known_hosts_problem(str(tmp_path / "{{x}}"))
    with pytest.raises(InputError, match="Jinja"):
        ssh_trust.extra_vars({"a": "/k/{{ lookup }}"})


def test_an_inventory_cannot_set_repro_s_per_host_options(tmp_path):
    from repro.errors import InventoryError

    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    a:\n      ansible_host: 10.0.0.1\n      _repro_ssh_args: {a: '-o X=1'}\n")
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    (diag,) = info.value.diagnostics
    assert (diag.location.file, diag.location.line) == (str(path), 5) and "_repro_ssh_args" in diag.path


def test_ansible_renders_each_hosts_own_line_on_its_ssh_command(variables):
    """ansible-playbook -vvv against two closed ports on loopback: each host's ssh command line names its own file,
    first (nothing listens, so ssh ends at once with "Connection refused")."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    tmp_path, v = variables
    playbook = shutil.which("ansible-playbook", path=os.pathsep.join((os.path.dirname(sys.executable),
                                                                      os.environ.get("PATH", ""))))
    if playbook is None:
        pytest.skip("needs ansible-playbook (repro[hosts])")
    inv = tmp_path / "closed.yml"
    inv.write_text("all:\n  hosts:\n    a: {ansible_host: 127.0.0.1, ansible_port: 1}\n"
                   "    b: {ansible_host: 127.0.0.2, ansible_port: 1}\n")
    (tmp_path / "pb.yml").write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.ping:\n")
    (tmp_path / "ev.json").write_text(json.dumps({**v, "_repro_ssh_args": {
        name: line.replace("/run/cp/", f"{tmp_path}/") for name, line in v["_repro_ssh_args"].items()}}))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = {**os.environ, "ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_RETRY_FILES_ENABLED": "0"}
    out = subprocess.run([playbook, "-i", str(inv), "-e", f"@{tmp_path / 'ev.json'}", "-vvv", str(tmp_path / "pb.yml")],
                         capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL, check=False)
    lines = {host: next((ln for ln in out.stdout.splitlines() if ln.startswith(f"<{addr}> SSH: EXEC")), "")
             for host, addr in (("a", "127.0.0.1"), ("b", "127.0.0.2"))}
    for host, mine, other in (("a", "ka", "kb"), ("b", "kb", "ka")):
        words = shlex.split(lines[host].split("SSH: EXEC ", 1)[-1])
        assert words[1:3] == ["-o", "StrictHostKeyChecking=yes"], (lines[host], out.stderr[-2000:])
        assert f"UserKnownHostsFile={tmp_path / mine}" in words and str(tmp_path / other) not in lines[host]
