"""Host keys by construction, against a real sshd on loopback whose host key no known_hosts holds (issue 38).

A standalone `sshd -D` on 127.0.0.1 with a fresh host key (no network namespace, no cluster). Each way an
inventory, an extra variable or the environment could make ssh trust that key is either refused at file:line
before Ansible runs, or, given to Ansible anyway (repro's own checks bypassed), has no effect: the host is
unreachable with "Host key verification failed", never a prompt, never a connection.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from repro.errors import InputError, InventoryError
from repro.hosts import ssh_trust
from repro.hosts.ansible import PlaybookRun, check_environment, run_playbook
from repro.hosts.inventory import load_inventory
from repro.hosts.prepare import parse_extra_vars

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
pytestmark = pytest.mark.skipif(not (Path(SSHD).exists() and shutil.which("ssh") and shutil.which("ssh-keygen")),
                                reason="needs OpenSSH's sshd, ssh and ssh-keygen")


@dataclass(frozen=True)
class Server:
    """An sshd on 127.0.0.1:port whose host key is in `known` only, never in `empty`."""

    port: int
    dir: Path
    client_key: Path
    host_pub: str
    known: Path
    empty: Path
    user: str

    def ssh(self, user_args: list[str], known: Path) -> subprocess.CompletedProcess[str]:
        """ssh as Ansible builds it: program, repro's ssh_args, then the inventory's options, then the target."""
        argv = ["ssh", *_split(ssh_trust.ssh_args([str(known)])), *user_args, "-o", "BatchMode=yes",
                "-o", "ConnectTimeout=5", "-i", str(self.client_key), "-p", str(self.port), "-l", self.user,
                "127.0.0.1", "echo connected"]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
                              check=False)


def _split(text: str) -> list[str]:
    import shlex

    return shlex.split(text)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    d = tmp_path_factory.mktemp("sshd")
    os.chmod(d, 0o700)
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True)
    (d / "authorized_keys").write_text((d / "client.pub").read_text())
    port = _free_port()
    if os.getuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    (d / "sshd_config").write_text("")
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(d / "sshd_config"), "-p", str(port), "-h", str(d / "host"),
         "-o", "ListenAddress=127.0.0.1", "-o", f"AuthorizedKeysFile={d / 'authorized_keys'}",
         "-o", "StrictModes=no", "-o", "PidFile=none", "-o", "UsePAM=no", "-o", "PasswordAuthentication=no",
         "-o", "KbdInteractiveAuthentication=no", "-o", "PermitRootLogin=prohibit-password",
         # many connections at once (Ansible's workers, the variants): sshd's default MaxStartups 10:30:100 resets some
         "-o", "MaxStartups=200", "-o", "MaxSessions=200"],
        stdout=subprocess.DEVNULL, stderr=open(d / "sshd.log", "w"))  # noqa: SIM115
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"sshd exited: {(d / 'sshd.log').read_text()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    host_pub = " ".join((d / "host.pub").read_text().split()[:2])
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    (d / "empty_known_hosts").write_text("")
    import pwd

    try:
        yield Server(port, d, d / "client", host_pub, d / "known_hosts", d / "empty_known_hosts",
                     pwd.getpwuid(os.getuid()).pw_name)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _variants(server: Server) -> dict[str, dict[str, object]]:
    """Host variables, each a way to make ssh trust an unknown key (issue 38's list, and more)."""
    d = server.dir
    cfg = d / "trusting_config"
    cfg.write_text("Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n")
    vouch = d / "vouch.sh"  # a KnownHostsCommand that vouches for the server's key
    vouch.write_text(f"#!/bin/sh\necho '[127.0.0.1]:{server.port} {server.host_pub}'\n")
    vouch.chmod(0o700)
    wrapper = d / "ssh-wrapper"  # an ssh_executable that turns checking off before repro's options
    wrapper.write_text('#!/bin/sh\nexec ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "$@"\n')
    wrapper.chmod(0o700)
    common = "ansible_ssh_common_args"
    return {
        "accept_new": {common: "-o StrictHostKeyChecking=accept-new"},
        "quoted": {common: "-o StrictHost'Key'Checking=no"},
        "tab": {common: "-o\tStrictHostKeyChecking=no"},
        "escaped": {common: "-o StrictHostKeyChecking=n\\o"},
        "spaced": {common: "-o 'StrictHostKeyChecking no'"},
        "joined": {common: "-oStrictHostKeyChecking=no"},
        "bundled": {common: "-Co StrictHostKeyChecking=no"},
        "config_file": {common: f"-F {cfg}"},
        "dev_null": {common: "-o UserKnownHostsFile=/dev/./null -o StrictHostKeyChecking=no"},
        "global_null": {"ansible_ssh_extra_args": "-o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=no"},
        "known_hosts_command": {common: f"-o KnownHostsCommand={vouch}"},
        "host_key_alias": {common: "-o HostKeyAlias=trusted -o StrictHostKeyChecking=no"},
        "jinja": {common: "-o StrictHostKeyChecking={{ mode }}", "mode": "no"},
        "ssh_args": {"ansible_ssh_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
        "executable": {"ansible_ssh_executable": str(wrapper)},
        "checking_off": {"ansible_host_key_checking": False, "ansible_ssh_host_key_checking": False},
        "paramiko": {"ansible_connection": "paramiko"},
        "update_keys": {common: "-o UpdateHostKeys=yes -o StrictHostKeyChecking=no"},
        "dns": {common: "-o VerifyHostKeyDNS=yes -o StrictHostKeyChecking=no"},
        # the map repro's ansible_ssh_args picks each host's line from: extra variables beat host variables
        "repro_map": {"_repro_ssh_args": {"repro_map": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
                      "_repro_ssh_args_default": "-o StrictHostKeyChecking=no"},
    }


def _inventory(server: Server, path: Path, hosts: dict[str, dict[str, object]]) -> Path:
    base = {"ansible_host": "127.0.0.1", "ansible_port": server.port, "ansible_user": server.user,
            "ansible_ssh_private_key_file": str(server.client_key), "ansible_python_interpreter": "/usr/bin/python3"}
    path.write_text(yaml.safe_dump({"all": {"children": {"workers": {
        "hosts": {name: {**base, **extra} for name, extra in hosts.items()}}}}}, sort_keys=False))
    return path


def test_the_server_is_reachable_with_its_key_known_and_refused_without(server):
    """The control: repro's options connect when known_hosts holds the key, and refuse it when not."""
    ok = server.ssh([], server.known)
    assert ok.returncode == 0 and "connected" in ok.stdout, ok.stderr
    refused = server.ssh([], server.empty)
    assert refused.returncode == 255 and "Host key verification failed" in refused.stderr, refused.stderr


@pytest.mark.parametrize("name", ["accept_new", "quoted", "tab", "escaped", "spaced", "joined", "bundled",
                                  "config_file", "dev_null", "global_null", "known_hosts_command",
                                  "host_key_alias", "update_keys", "dns"])
def test_options_after_repros_cannot_make_ssh_trust_an_unknown_key(server, name):
    import shlex

    args = next(v for k, v in _variants(server)[name].items() if k.endswith("_args"))
    proc = server.ssh(shlex.split(str(args)), server.empty)
    assert proc.returncode == 255 and "Host key verification failed" in proc.stderr, (name, proc.stderr)
    assert "connected" not in proc.stdout


@pytest.mark.parametrize("name", ["accept_new", "quoted", "tab", "escaped", "spaced", "joined", "bundled",
                                  "config_file", "dev_null", "global_null", "known_hosts_command",
                                  "host_key_alias", "jinja", "ssh_args", "executable", "checking_off", "paramiko",
                                  "update_keys", "dns", "repro_map"])
def test_each_variant_is_refused_at_file_line_in_an_inventory(server, tmp_path, name):
    path = _inventory(server, tmp_path / "hosts.yml", {"h": _variants(server)[name]})
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    diags = info.value.diagnostics
    assert diags and all(d.location.file == str(path) and d.location.line for d in diags), diags


@pytest.mark.parametrize("item", ["ansible_ssh_common_args=-o StrictHostKeyChecking=no",
                                  "ansible_ssh_args=-o UserKnownHostsFile=/dev/null",
                                  "ansible_ssh_executable=/tmp/ssh", "ansible_connection=paramiko",
                                  "repro_known_hosts=/dev/null", "ansible_host_key_checking=false",
                                  "ansible_ssh_extra_args=-o KnownHostsCommand=/bin/true",
                                  "x=&a [*a]"])
def test_extra_variables_are_checked_as_inventory_variables(item):
    with pytest.raises(InputError, match="--extra-var"):
        parse_extra_vars([item])


@pytest.mark.parametrize("env", [{"ANSIBLE_SSH_ARGS": "-o StrictHostKeyChecking=accept-new"},
                                 {"ANSIBLE_SSH_COMMON_ARGS": "-F /tmp/cfg"},
                                 {"ANSIBLE_SSH_EXECUTABLE": "/tmp/ssh"},
                                 {"ANSIBLE_TRANSPORT": "paramiko"},
                                 {"ANSIBLE_PARAMIKO_HOST_KEY_AUTO_ADD": "True"},
                                 {"ANSIBLE_CONNECTION_PLUGINS": "/tmp/plugins"}])
def test_the_environment_cannot_change_how_ssh_trusts(env):
    with pytest.raises(InputError):
        check_environment(env)


def test_a_playbooks_directory_others_can_write_is_refused(tmp_path):
    (tmp_path / "ansible.cfg").write_text("[defaults]\nhost_key_checking = False\n")
    tmp_path.chmod(0o777)
    with pytest.raises(InputError, match="writable by others"):
        ssh_trust.check_config_dir(tmp_path, "playbooks directory")
    tmp_path.chmod(0o755)
    (tmp_path / "ansible.cfg").chmod(0o664)
    with pytest.raises(InputError, match="writable by its group"):
        ssh_trust.check_config_dir(tmp_path, "playbooks directory")
    (tmp_path / "ansible.cfg").chmod(0o644)
    ssh_trust.check_config_dir(tmp_path, "playbooks directory")


def test_given_to_ansible_unchecked_no_variant_makes_it_trust_the_key(server, tmp_path):
    """Every variant at once, one host each, straight to ansible-runner (repro's inventory checks bypassed): each
    host is unreachable with "Host key verification failed" (paramiko: an error, not a prompt), and quickly."""
    pytest.importorskip("ansible_runner")
    variants = _variants(server)
    inv = _inventory(server, tmp_path / "hosts.yml", variants)
    run = PlaybookRun("facts.yml", str(inv), known_hosts=tuple((name, str(server.empty)) for name in variants))
    started = time.monotonic()
    outcome = run_playbook(run, tmp_path / "out", timeout=240)
    assert time.monotonic() - started < 240
    assert set(outcome.hosts) == set(variants), outcome.output_tail(40)
    transient = []  # many connections at once to one sshd: a loaded machine can break one before the key exchange
    for name, host in outcome.hosts.items():
        assert host.unreachable or host.failure is not None, (name, host)
        message = host.failure.message if host.failure else ""
        assert host.facts is None and host.ok == 0, (name, message)
        if name != "paramiko":
            if "Host key verification failed" not in message and re.search(r"Broken pipe|Connection reset", message):
                transient.append(name)
                continue
            assert "Host key verification failed" in message, (name, message)
        else:
            assert "authenticity" in message.lower() or "host key" in message.lower(), message
    for name in transient:  # each again, alone: then the refusal must be the host key's
        inv = _inventory(server, tmp_path / f"hosts-{name}.yml", {name: variants[name]})
        again = run_playbook(PlaybookRun("facts.yml", str(inv), known_hosts=((name, str(server.empty)),)),
                             tmp_path / f"out-{name}", timeout=120).hosts[name]
        message = again.failure.message if again.failure else ""
        assert again.facts is None and again.ok == 0 and "Host key verification failed" in message, (name, message)


def test_with_the_key_known_ansible_reaches_the_host(server, tmp_path):
    """The control of the test above: the same path connects when repro's known_hosts holds the key."""
    pytest.importorskip("ansible_runner")
    inv = _inventory(server, tmp_path / "hosts.yml", {"good": {}})
    run = PlaybookRun("facts.yml", str(inv), known_hosts=(("good", str(server.known)),))
    outcome = run_playbook(run, tmp_path / "out", timeout=240)
    host = outcome.hosts["good"]
    assert not host.unreachable, host.why_unreachable


def test_a_key_known_in_another_hosts_file_does_not_let_ansible_reach_a_host(server, tmp_path):
    """Two inventory hosts on the same sshd: `known` holds its key (as host A's file), `empty` is host B's own file.
    A is reached; B is refused "Host key verification failed" (one known-hosts set for the run let B in), and B
    does not ride on A's ssh connection master either."""
    pytest.importorskip("ansible_runner")
    inv = _inventory(server, tmp_path / "hosts.yml", {"a": {}, "b": {}})
    run = PlaybookRun("facts.yml", str(inv), known_hosts=(("a", str(server.known)), ("b", str(server.empty))))
    outcome = run_playbook(run, tmp_path / "out", timeout=240)
    assert not outcome.hosts["a"].unreachable, outcome.hosts["a"].why_unreachable
    b = outcome.hosts["b"]
    assert b.unreachable and b.facts is None, b
    assert "Host key verification failed" in (b.failure.message if b.failure else ""), b
