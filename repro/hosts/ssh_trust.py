"""Host-key trust by construction: the ssh options repro puts first on every ssh command line Ansible runs.

OpenSSH keeps the first value it sees for each option, and Ansible's ssh connection plugin starts every
command line with `ssh_args` (after the program and `-vvv`), before `StrictHostKeyChecking=no` from
`host_key_checking`, `ansible_ssh_common_args` and `*_extra_args`. repro sets `ansible_ssh_args` as an extra
variable, which beats the inventory, the environment (`ANSIBLE_SSH_ARGS`) and every `ansible.cfg`, and leads
with the options below: whatever comes later cannot turn checking off. The checks of what an inventory, an
extra variable or the environment says (refused at file:line) are there to say so plainly, not to keep
trust: a pattern listing bad options cannot win, the order does.

The options are per host: `ansible_ssh_args` is a template that picks the host's own line from a map (also an
extra variable), so each host is checked against its own known-hosts file only, never against another host's
(one set for the whole run would accept, for host B, a key that host A's file lists under B's name). Its SSH
connection masters are the host's own too (ControlPath per host), so no host rides on another's checked
connection. A task delegated to another remote host would still use the first host's line (Ansible keeps
`inventory_hostname` under delegation); repro's playbooks delegate to the controller only.
"""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from repro import inputs
from repro.errors import InputError

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
GLOBAL_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2"  # root's, as ssh's own default
# Every ssh option that decides which host keys are trusted, as repro sets it (the known-hosts files are added).
TRUST = (("StrictHostKeyChecking", "yes"), ("KnownHostsCommand", "none"), ("VerifyHostKeyDNS", "no"),
         ("CheckHostIP", "no"), ("UpdateHostKeys", "no"), ("GlobalKnownHostsFile", GLOBAL_KNOWN_HOSTS))
# Connection sharing within a run (was playbooks/ansible.cfg's ssh_args, which repro's own replace).
SHARING = ("-C", "-o", "ControlMaster=auto", "-o", "ControlPersist=30s")
# Options an inventory may not name at all: they pick the keys or the host they are checked against.
_REFUSED_OPTIONS = frozenset(o.lower() for o, _ in TRUST) | {"userknownhostsfile", "hostkeyalias", "include",
                                                               "controlpath", "proxyusefdpass"}
# Flags of ssh that read another configuration (-F, whose `Match exec` runs commands) or pick what runs.
_REFUSED_FLAGS = {"-F": "reads another ssh configuration", "-G": "prints the configuration instead of connecting",
                  "-S": "names another connection's control socket"}
# Connection plugins repro allows: ssh (which checks host keys with the options above) and local.
CONNECTIONS = frozenset({"ssh", "smart", "local", "ansible.builtin.ssh", "ansible.builtin.local",
                         "ansible.legacy.ssh", "ansible.legacy.local"})
# Variables repro sets itself, or that would replace the ssh program: refused wherever they come from.
OWNED_VARS = frozenset({"ansible_ssh_args", "_repro_ssh_args", "_repro_ssh_args_default",
                        "ansible_ssh_executable", "ansible_scp_executable", "ansible_sftp_executable",
                        "ansible_paramiko_host_key_auto_add", "ansible_paramiko_look_for_keys",
                        "ansible_paramiko_proxy_command"})
# Environment variables that would replace the ssh program or the connection plugin.
OWNED_ENV = ("ANSIBLE_SSH_EXECUTABLE", "ANSIBLE_SCP_EXECUTABLE", "ANSIBLE_SFTP_EXECUTABLE",
             "ANSIBLE_CONNECTION_PLUGINS", "ANSIBLE_PARAMIKO_HOST_KEY_AUTO_ADD", "ANSIBLE_PARAMIKO_PROXY_COMMAND")
ARGS_ENV = ("ANSIBLE_SSH_ARGS", "ANSIBLE_SSH_COMMON_ARGS", "ANSIBLE_SSH_EXTRA_ARGS", "ANSIBLE_SCP_EXTRA_ARGS",
            "ANSIBLE_SFTP_EXTRA_ARGS")
_NULL_FILES = ("/dev/", "/proc/", "/sys/")


# What Ansible's ssh_args is: the host's own line of the map repro passes, else the line with ssh's own file.
ARGS_TEMPLATE = "{{ _repro_ssh_args[inventory_hostname] | default(_repro_ssh_args_default) }}"


def ssh_args(known_hosts: Iterable[str], control_dir: str | None = None, *, control_name: str = "%C") -> str:
    """The ssh_args of one host: repro's trust options first, then connection sharing; `known_hosts`: the host's
    known-hosts files (none: ssh's own), `control_name`: its control socket's name in `control_dir`."""
    files = sorted({str(Path(k).expanduser()) for k in known_hosts} or {str(Path(DEFAULT_KNOWN_HOSTS).expanduser())})
    words: list[str] = []
    for name, value in (*TRUST, ("UserKnownHostsFile", " ".join(files))):
        words += ["-o", f"{name}={value}"]
    words += SHARING
    if control_dir:  # %C: a hash of the host, port and user; short enough for a unix socket's path
        words += ["-o", f"ControlPath={control_dir}/{control_name}"]
    return shlex.join(words)


def host_ssh_args(known_hosts: Mapping[str, str], control_dir: str | None = None) -> dict[str, str]:
    """Each host's ssh_args, from its own known-hosts file (host name -> file); each host its own control socket
    (numbered: two hosts at one address, port and user must not share a connection checked for one of them)."""
    return {name: ssh_args([known_hosts[name]], control_dir, control_name=f"{i}-%C")
            for i, name in enumerate(sorted(known_hosts))}


def extra_vars(known_hosts: Mapping[str, str], control_dir: str | None = None) -> dict[str, object]:
    """The extra variables that make repro's options Ansible's (extra variables beat every other source), per
    host: `known_hosts` maps each host name to its own known-hosts file."""
    for name, path in known_hosts.items():
        if any(mark in f"{name}{path}" for mark in ("{{", "{%", "{#")):  # Ansible would compute it at run time
            raise InputError(f"host {name}: known-hosts file {path} holds a Jinja template")
    default = ssh_args([], control_dir, control_name="default-%C")
    return {"ansible_ssh_args": ARGS_TEMPLATE, "_repro_ssh_args": host_ssh_args(known_hosts, control_dir),
            "_repro_ssh_args_default": default, "ansible_ssh_executable": "ssh",
            "ansible_scp_executable": "scp", "ansible_sftp_executable": "sftp"}


def _options(words: list[str]) -> Iterable[tuple[str, str]]:
    """(flag, argument) pairs of an ssh argument list, as ssh's getopt sees them (`-oX=Y`, `-o X=Y`, `-Co X`)."""
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word == "-":
            continue
        letters = word[1:]
        for j, letter in enumerate(letters):
            if letter in "BbcDEeFIiJLlmOoPpQRSWw":  # ssh's flags that take an argument
                arg = letters[j + 1:]
                if not arg and i < len(words):
                    arg, i = words[i], i + 1
                yield f"-{letter}", arg
                break
            yield f"-{letter}", ""


def _option(text: str) -> tuple[str, str]:
    """An -o argument as ssh reads it: keyword, then '=' or blanks, then the value."""
    text = text.strip()
    for k, ch in enumerate(text):
        if ch in " \t=":
            rest = text[k:].lstrip(" \t")
            rest = rest[1:].lstrip(" \t") if rest.startswith("=") else rest
            return text[:k].lower(), rest
    return text.lower(), ""


def args_problem(value: object) -> str | None:
    """Why ssh options from an inventory, an extra variable or the environment are refused, or None."""
    if not isinstance(value, str):
        return f"expected ssh options as text, found {type(value).__name__}"
    if "{{" in value or "{%" in value:
        return "holds a Jinja template; repro does not let ssh options be computed at run time"
    try:
        words = shlex.split(value)  # as Ansible splits them
    except ValueError as exc:
        return f"cannot be split as Ansible would ({exc})"
    for flag, arg in _options(words):
        if flag in _REFUSED_FLAGS:
            return f"'{flag} {arg}' {_REFUSED_FLAGS[flag]}; repro decides which host keys ssh trusts"
        if flag != "-o":
            continue
        name, setting = _option(arg)
        if name == "stricthostkeychecking" and setting.lower() != "yes":
            return f"'{arg}' turns host-key checking off; repro checks host keys on every SSH connection " \
                   "(record the host's key in known_hosts instead)"
        if name in ("userknownhostsfile", "globalknownhostsfile") and any(
                _null_file(p) for p in setting.split()):
            return f"'{arg}' names no file of host keys, which turns host-key checking off; record the host's " \
                   "key in known_hosts instead"
        if name in _REFUSED_OPTIONS - {"stricthostkeychecking", "userknownhostsfile", "globalknownhostsfile"}:
            return f"'{arg}': repro sets {arg.strip().split('=')[0].split()[0]} itself (it decides which host " \
                   "keys ssh trusts)"
    return None


def _null_file(path: str) -> bool:
    """Whether a known-hosts path is no file of keys: /dev/null (however spelt), a device, a directory."""
    real = os.path.realpath(os.path.expanduser(path))
    if real.startswith(_NULL_FILES) or real == "/dev/null":
        return True
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return False  # a missing file holds no key: ssh refuses every host, which is safe
    return not stat.S_ISREG(mode)


def known_hosts_problem(value: object) -> str | None:
    """Why a repro_known_hosts value is refused, or None."""
    why = inputs.SSH_PATH.problem(value)
    if why:
        return why
    if any(mark in str(value) for mark in ("{{", "{%", "{#")):  # repro's ssh options carry it into Ansible
        return "holds a Jinja template; name the known_hosts file itself"
    if _null_file(str(value)):
        return f"{value} is not a file of host keys (it would trust any key); name the known_hosts file that " \
               "holds the hosts' keys"
    return None


def connection_problem(value: object) -> str | None:
    """Why an ansible_connection is refused, or None."""
    why = inputs.CONNECTION.problem(value)
    if why:
        return why
    if value not in CONNECTIONS:
        return f"connection '{value}' is not one repro allows (ssh or local): repro checks host keys through " \
               "ssh's own options, and paramiko would ask on a terminal no one sees"
    return None


def check_environment(env: Mapping[str, str]) -> None:
    """Refuse an environment whose Ansible settings would replace ssh, its plugin, or its host-key checking."""
    for name in ARGS_ENV:
        value = env.get(name)
        why = args_problem(value) if value else None
        if why:
            raise InputError(f"{name}: {why}", hint="repro checks host keys on every SSH connection; unset the "
                             "variable and record the hosts' keys in known_hosts")
    for name in OWNED_ENV:
        if env.get(name):
            raise InputError(f"{name} is set: repro runs ssh itself and decides which host keys it trusts",
                             hint=f"unset {name} for repro")
    transport = env.get("ANSIBLE_TRANSPORT")
    if transport and transport not in CONNECTIONS:
        raise InputError(f"ANSIBLE_TRANSPORT={transport}: repro connects with ssh or local only",
                         hint="unset ANSIBLE_TRANSPORT for repro")


def check_config_dir(path: Path, what: str) -> None:
    """Refuse a directory (and its ansible.cfg) that someone else could write: Ansible would run what it says.

    Trusted: owned by this user or root, and writable by neither group nor others (Ansible itself ignores an
    ansible.cfg in a world-writable directory)."""
    uid = os.getuid()
    for p in (path, path / "ansible.cfg"):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(f"{what} {p}: {exc.strerror}") from None
        if st.st_uid not in (uid, 0):
            raise InputError(f"{what} {p} belongs to user {st.st_uid}, not to you or root",
                             hint="Ansible runs what its playbooks and ansible.cfg say: use a copy that you own")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise InputError(f"{what} {p} is writable by {'others' if st.st_mode & stat.S_IWOTH else 'its group'}",
                             hint=f"chmod go-w {shlex.quote(str(p))} (Ansible runs what it says)")
