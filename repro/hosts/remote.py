"""Run commands on an inventory host: in a local subprocess for `ansible_connection: local`, else over
SSH (fabric/paramiko) with host-key checking on: keys come from the inventory's known_hosts file and
an unknown or changed host key is refused, never added.

Commands are argv lists; for SSH they are quoted with shlex.join, never built as shell strings.
"""

from __future__ import annotations

import errno
import os
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from repro import children
from repro.errors import HostError
from repro.extras import need
from repro.hosts.inventory import Host
from repro.hosts.remote_process import MAX_OUTPUT_BYTES, RemoteProcess

CONNECT_TIMEOUT = 10.0
PREFLIGHT_TIMEOUT = 5.0  # per host, all hosts at once: a sweep on a dead host fails within seconds


@dataclass(frozen=True)
class Result:
    """What a finished command returned."""

    host: str
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 15) -> str:
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return "\n".join(text[-lines:])


def docker_argv(host: Host, *args: str) -> list[str]:
    """The docker CLI aimed at the host's own engine (its repro_docker_host), as run on that host."""
    return ["docker", "-H", host.docker_host, *args]


def reachable(host: Host, timeout: float = 3.0) -> bool:
    """Whether the host's SSH port accepts a TCP connection (always true for a local host)."""
    return port_failure(host, timeout) is None


def port_failure(host: Host, timeout: float = 3.0) -> str | None:
    """Why the host's SSH port accepts no TCP connection, in one line; None when it does (or the host is local)."""
    if host.local:
        return None
    try:
        with socket.create_connection((host.address, host.port), timeout=timeout):
            return None
    except OSError as exc:
        return socket_failure(exc, host, timeout)


def port_failures(hosts: Iterable[Host], timeout: float = 3.0) -> dict[str, str]:
    """`port_failure` of every host at once; host name -> why, for the hosts whose SSH port does not answer."""
    return _problems(hosts, lambda host: port_failure(host, timeout))


def _problems(hosts: Iterable[Host], check: Callable[[Host], str | None]) -> dict[str, str]:
    """`check` run on every host at once (16 at most); host name -> its problem, for the hosts that have one."""
    from concurrent.futures import ThreadPoolExecutor

    todo = list(hosts)
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(todo)))) as pool:
        return {host.name: problem for host, problem in zip(todo, pool.map(check, todo), strict=True)
                if problem}


_CONNECT_HINTS = {
    "BadHostKeyException": "if the host was reinstalled, replace its entry in the known_hosts file deliberately "
    "(ssh-keygen -R); repro never accepts a changed host key",
    "SSHException": "record host keys with `repro prepare --tags ssh_trust` or ssh-keyscan; repro never accepts "
    "unknown host keys",
}


def connect_failure(exc: BaseException, host: Host, known: Path, timeout: float) -> str:
    """One line saying why an SSH connection to `host` failed, from the exception paramiko or socket raised."""
    where = f"{host.address}:{host.port}"
    # paramiko's NoValidConnectionsError (errno None) holds the socket error of each address it tried
    tried = list(getattr(exc, "errors", {}).values()) if type(exc).__name__ == "NoValidConnectionsError" else []
    if tried and isinstance(tried[0], BaseException):
        exc = tried[0]
    name = type(exc).__name__
    text = str(exc).strip() or name
    if name == "BadHostKeyException":
        return f"host key of {where} does not match the one in {known} (wrong host, or the host's key changed)"
    if name == "SSHException" and "not found in known_hosts" in text:
        return f"host key of {where} is not in {known}"
    if name == "AuthenticationException":
        return f"{where} refused the login (authentication failed: wrong key or user)"
    if isinstance(exc, (OSError, EOFError)) or "timed out" in text.lower():
        return socket_failure(exc, host, timeout)
    return f"SSH to {where} failed: {text}"


def socket_failure(exc: BaseException, host: Host, timeout: float) -> str:
    """One line saying why a connection to the host's SSH port failed at the network level."""
    where = f"{host.address}:{host.port}"
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED:
        return f"nothing accepts SSH connections on {where} (connection refused: sshd down?)"
    if isinstance(exc, (TimeoutError, socket.timeout)) or "timed out" in text.lower():
        return f"host {host.name} ({host.address}) does not answer (no SSH connection within {timeout:.0f} s)"
    if getattr(exc, "errno", None) in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return f"host {host.name} ({host.address}) is unreachable (no route)"
    return f"cannot reach {where} over SSH ({text})"


def preflight(hosts: Iterable[Host], *, timeout: float = PREFLIGHT_TIMEOUT) -> dict[str, str]:
    """Connect to every remote host at once (SSH, host key checked, `true` run); host name -> why it failed.

    Local hosts always pass. Bounded by `timeout` per host, in parallel, so a dead host costs seconds.
    """
    def one(host: Host) -> str | None:
        if host.local:
            return None
        try:
            with Remote(host, connect_timeout=timeout) as remote:
                res = remote.run(["true"], timeout=timeout)
            return None if res.ok else f"`true` failed there (exit {res.returncode}): {res.tail(2)}"
        except HostError as exc:
            return exc.message.removeprefix(f"{host.name}: ")

    return _problems(hosts, one)


class Remote:
    """A connection to one host; use as a context manager."""

    def __init__(self, host: Host, *, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.host = host
        self.connect_timeout = connect_timeout
        self._conn = None

    # -- connection
    def _client(self):
        if self._conn is not None:
            return self._conn.client
        connection = need("fabric", "hosts", f"SSH to {self.host.name}").Connection
        paramiko = need("paramiko", "hosts", f"SSH to {self.host.name}")
        h = self.host
        connect_kwargs = {"timeout": self.connect_timeout, "banner_timeout": self.connect_timeout,
                          "auth_timeout": self.connect_timeout}
        if h.key_file:
            connect_kwargs["key_filename"] = str(Path(h.key_file).expanduser())
            connect_kwargs["look_for_keys"] = False
        conn = connection(h.address, user=h.user, port=h.port, connect_kwargs=connect_kwargs)
        client = conn.client
        # fabric adds unknown host keys by default; repro refuses them instead.
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        known = Path(h.known_hosts).expanduser() if h.known_hosts else Path("~/.ssh/known_hosts").expanduser()
        if known.exists():
            client.load_host_keys(str(known))
        try:
            conn.open()
        except Exception as exc:  # paramiko and socket errors of every kind: each gets its cause named
            raise HostError(f"{h.name}: {connect_failure(exc, h, known, self.connect_timeout)}", host=h.name,
                            hint=_CONNECT_HINTS.get(type(exc).__name__, "")) from None
        self._conn = conn
        return client

    def transport(self):
        """The connection's SSH transport, opened (or opened again, if it dropped) on demand; HostError when it
        cannot be opened."""
        if self._conn is not None:
            transport = self._conn.client.get_transport()
            if transport is None or not transport.is_active():
                self.close()
        return self._client().get_transport()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- commands
    def run(self, argv: list[str], *, timeout: float | None = 300, input: bytes | Iterable[bytes] | None = None,
            check: bool = False, max_bytes: int = MAX_OUTPUT_BYTES) -> Result:
        """Run argv to completion (stdin from `input`, bytes or chunks); HostError on timeout, on connection loss
        and when it prints more than `max_bytes` on either stream (it is stopped then: a host cannot make repro
        read without end)."""
        argv = [str(a) for a in argv]
        if self.host.local:
            result = self._run_local(argv, timeout, input, max_bytes)
        else:
            result = self._run_ssh(argv, timeout, input, max_bytes)
        if check and not result.ok:
            raise HostError(f"{self.host.name}: `{shlex.join(argv)[:200]}` failed (exit {result.returncode}):\n"
                            f"{result.tail()}", host=self.host.name)
        return result

    def _stopped(self, command: str, why: str) -> HostError:
        return HostError(f"{self.host.name}: `{command[:200]}` {why}", host=self.host.name)

    def _run_local(self, argv: list[str], timeout: float | None, data, max_bytes: int) -> Result:
        try:  # a program that starts programs of its own runs under the supervisor: they all end with repro
            ran = children.run_bounded(argv, timeout=timeout, max_bytes=max_bytes, input=data,
                                       supervise=children.starts_programs(argv))
        except FileNotFoundError:
            return Result(self.host.name, tuple(argv), 127, "", f"{argv[0]}: command not found")
        if ran.stopped:
            raise self._stopped(shlex.join(argv), ran.stopped)
        if ran.returncode == 127 and ran.stderr == f"{argv[0]}: {os.strerror(errno.ENOENT)}\n".encode():  # supervisor's
            return Result(self.host.name, tuple(argv), 127, "", f"{argv[0]}: command not found")
        return Result(self.host.name, tuple(argv), ran.returncode, ran.stdout.decode(errors="replace"),
                      ran.stderr.decode(errors="replace"))

    def _run_ssh(self, argv: list[str], timeout: float | None, data, max_bytes: int) -> Result:
        client = self._client()
        command = shlex.join(argv)
        over: list[str] = []  # set by a reader when its stream passed max_bytes
        try:
            transport = client.get_transport()
            if transport is None or not transport.is_active():
                raise HostError(f"{self.host.name}: SSH connection lost", host=self.host.name)
            chan = transport.open_session(timeout=self.connect_timeout)
            chan.settimeout(timeout)
            chan.exec_command(command)
            out = bytearray()
            err = bytearray()

            def pump(recv, sink: bytearray) -> None:
                while True:
                    try:
                        block = recv(65536)
                    except (TimeoutError, OSError):
                        return
                    if not block:
                        return
                    sink += block
                    if len(sink) > max_bytes:
                        over.append(f"printed more than {max_bytes} bytes")
                        return

            readers = [threading.Thread(target=pump, args=(chan.recv, out), daemon=True),
                       threading.Thread(target=pump, args=(chan.recv_stderr, err), daemon=True)]
            for t in readers:
                t.start()
            if data is not None:
                for chunk in [data] if isinstance(data, bytes) else data:
                    if over:
                        break
                    chan.sendall(chunk)
            chan.shutdown_write()
            deadline = None if timeout is None else time.monotonic() + timeout
            while not chan.exit_status_ready():
                if over:  # closing the channel ends the command (sshd hangs up on it)
                    chan.close()
                    raise self._stopped(command, over[0])
                if deadline is not None and time.monotonic() > deadline:
                    chan.close()
                    raise self._stopped(command, f"did not finish in {timeout:.0f} s")
                if not transport.is_active():
                    raise HostError(f"{self.host.name}: SSH connection lost while running `{command[:120]}`",
                                    host=self.host.name)
                time.sleep(0.05)
            code = chan.recv_exit_status()
            for t in readers:
                t.join(timeout=5)
            chan.close()
        except (TimeoutError, OSError, EOFError) as exc:
            raise HostError(f"{self.host.name}: SSH failed while running `{command[:120]}`: {exc}",
                            host=self.host.name) from None
        if over:
            raise self._stopped(command, over[0])
        return Result(self.host.name, tuple(argv), code, bytes(out).decode(errors="replace"),
                      bytes(err).decode(errors="replace"))

    def start(self, argv: list[str], *, input: bytes | None = None,
              max_bytes: int = MAX_OUTPUT_BYTES) -> RemoteProcess:
        """Start a long-running command (its stdin: `input`, then end of file); poll, read its output as it comes,
        stop it. It is stopped once it prints more than `max_bytes` on a stream (said on its stderr)."""
        return RemoteProcess(self, [str(a) for a in argv], input, max_bytes)
