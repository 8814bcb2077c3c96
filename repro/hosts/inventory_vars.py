"""The inventory variables repro reads (docs/design.md, "Inventory contract"), each with its check against its kind
in repro.inputs, and the located diagnostics of one inventory's bad values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from repro import inputs
from repro.errors import Diagnostic, Location
from repro.hosts import ssh_trust
from repro.hosts.inventory_files import InventoryFiles
from repro.manifest.schema import InterNodePath, IntraNodePath


def _text(kind: inputs.Kind) -> Callable[[object], object]:
    def check(value: object) -> object:
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            raise inputs.InputValueError("holds a Jinja template; ansible-inventory does not render templates, "
                                         "so write the value itself")
        return kind.check(value)

    return check


def _int(minimum: int, maximum: int) -> Callable[[object], int]:
    return lambda value: inputs.integer(value, minimum=minimum, maximum=maximum)


def _checking_on(value: object) -> object:
    if inputs.boolean(value) is not True:
        raise inputs.InputValueError("turns host-key checking off; repro checks host keys on every SSH connection "
                                     "(record the host's key in known_hosts instead)")
    return True


def _checked(problem: Callable[[object], str | None]) -> Callable[[object], object]:
    def check(value: object) -> object:
        why = problem(value)
        if why:
            raise inputs.InputValueError(why)
        return value

    return check


def _one_of(names: tuple[str, ...]) -> Callable[[object], object]:
    def check(value: object) -> object:
        if not isinstance(value, str) or value not in names:
            raise inputs.InputValueError(f"one of {', '.join(names)}")
        return value

    return check


def _owned(value: object) -> object:
    raise inputs.InputValueError("repro sets this itself: it decides which ssh program runs and which host keys "
                                 "it trusts (put other ssh options in ansible_ssh_common_args)")


# variable -> its check, which returns the value to use (normalised: "true" from INI becomes True)
VARIABLES: dict[str, Callable[[object], object]] = {
    "ansible_host": _text(inputs.HOST_NAME),
    "ansible_port": _int(1, 65535),
    "ansible_user": _text(inputs.USER_NAME),
    "ansible_ssh_private_key_file": _text(inputs.PATH),
    "ansible_connection": _checked(ssh_trust.connection_problem),
    "repro_known_hosts": _checked(ssh_trust.known_hosts_problem),
    "repro_slots": _int(1, 4096),
    "repro_gpus": _int(0, 1024),
    "repro_docker_host": _text(inputs.DOCKER_ENDPOINT),
    "repro_interface": _text(inputs.INTERFACE),
    "repro_python": _text(inputs.COMMAND),
    "repro_registry": _text(inputs.REGISTRY),
    "repro_dataset_dir": _text(inputs.DATA_DIR),
    "repro_infiniband": inputs.boolean,
    "repro_link_gbps": lambda v: inputs.number(v, minimum=0.001, maximum=100_000.0),
    "repro_launch_key": _text(inputs.SSH_PATH),
    "repro_launch_known_hosts": _text(inputs.SSH_PATH),
    # the path NCCL must take on these hosts (docs/fabric.md; repro.launch.expect): the names of a stack's `expect`
    "repro_expect_inter_node": _one_of(get_args(InterNodePath)),
    "repro_expect_intra_node": _one_of(get_args(IntraNodePath)),
    # Ansible's own switches of host-key checking: only "on" is accepted
    "ansible_host_key_checking": _checking_on,
    "ansible_ssh_host_key_checking": _checking_on,
    "ansible_paramiko_host_key_checking": _checking_on,
    "ansible_ssh_common_args": _checked(ssh_trust.args_problem),
    "ansible_ssh_extra_args": _checked(ssh_trust.args_problem),
    "ansible_scp_extra_args": _checked(ssh_trust.args_problem),
    "ansible_sftp_extra_args": _checked(ssh_trust.args_problem),
    # what repro sets itself (ansible_ssh_args: its trust options; the ssh programs), checked for a clear message
    "ansible_ssh_args": lambda v: _owned(_checked(ssh_trust.args_problem)(v)),
    **{var: _owned for var in sorted(ssh_trust.OWNED_VARS - {"ansible_ssh_args"})},
}


class Problems:
    """Diagnostics of one inventory, located lazily (the files are read only when something is wrong)."""

    def __init__(self, path: Path, groups: dict[str, frozenset[str]]) -> None:
        self.path = path
        self.groups = groups
        self.diagnostics: list[Diagnostic] = []
        self._files: InventoryFiles | None = None

    @property
    def files(self) -> InventoryFiles:
        if self._files is None:
            self._files = InventoryFiles(self.path)
        return self._files

    def bad_host(self, name: object, why: str) -> None:
        where = self.files.host(name) if isinstance(name, str) else None
        self.diagnostics.append(Diagnostic(f"bad host name: {why}", where or Location(str(self.path)), "hosts",
                                           hint="a host name becomes a file name in the store and an ssh argument"))

    def bad_var(self, host: str, var: str, value: object, why: str) -> None:
        where = self.files.variable(host, var, self.groups.get(host, frozenset({"all"})), value)
        self.diagnostics.append(Diagnostic(why, where or self.files.host(host) or Location(str(self.path)),
                                           f"{host}.{var}", found=show(value)))


def show(value: object) -> str:
    """A value as a message may show it: short, escapes visible."""
    text = ascii(value) if isinstance(value, str) else repr(value) if isinstance(value, (bool, float)) else \
        (repr(value) if isinstance(value, int) and abs(value) < 10**30 else type(value).__name__)
    return text if len(text) <= 60 else text[:57] + "..."


def checked_vars(problems: Problems, name: str, hv: dict[str, Any]) -> dict[str, Any]:
    """The host's variables with every variable of the inventory contract checked and normalised."""
    out = dict(hv)
    for var, check in VARIABLES.items():
        if var not in hv or hv[var] is None:
            out.pop(var, None)
            continue
        try:
            out[var] = check(hv[var])
        except inputs.InputValueError as exc:
            problems.bad_var(name, var, hv[var], str(exc))
            out.pop(var, None)
    return out
