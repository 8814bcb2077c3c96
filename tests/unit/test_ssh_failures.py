"""connect_failure: the one line a person reads when SSH to a host fails, from the exception paramiko raised."""

from __future__ import annotations

import errno
from pathlib import Path

import paramiko
import pytest
from paramiko.ssh_exception import NoValidConnectionsError

from repro.hosts.inventory import Host
from repro.hosts.remote import connect_failure

H2 = Host(name="h2", address="10.123.30.2")
KNOWN = Path("/root/.ssh/known_hosts")


def refused() -> ConnectionRefusedError:
    return ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")


@pytest.mark.parametrize(("exc", "says"), [
    # what paramiko raises for a port nobody listens on (its message alone says only "Unable to connect")
    (NoValidConnectionsError({("10.123.30.2", 22): refused()}), "connection refused: sshd down?"),
    (refused(), "connection refused: sshd down?"),
    (TimeoutError("timed out"), "h2 (10.123.30.2) does not answer (no SSH connection within 5 s)"),
    (NoValidConnectionsError({("10.123.30.2", 22): OSError(errno.EHOSTUNREACH, "No route to host")}),
     "h2 (10.123.30.2) is unreachable (no route)"),
    (paramiko.BadHostKeyException("10.123.30.2", paramiko.RSAKey.generate(1024), paramiko.RSAKey.generate(1024)),
     f"does not match the one in {KNOWN}"),
    (paramiko.AuthenticationException("Authentication failed."), "refused the login"),
])
def test_the_reason_names_the_cause(exc, says):
    line = connect_failure(exc, H2, KNOWN, 5)
    assert says in line and "\n" not in line


def test_port_failure_names_a_refused_port_and_passes_a_listening_one():
    import socket

    from repro.hosts.remote import port_failure, port_failures

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        open_port = listener.getsockname()[1]
        with socket.socket() as closed:  # bound, never listening: a connection to it is refused
            closed.bind(("127.0.0.1", 0))
            closed_port = closed.getsockname()[1]
            up = Host(name="h1", address="127.0.0.1", port=open_port)
            down = Host(name="h2", address="127.0.0.1", port=closed_port)
            assert port_failure(up) is None
            why = port_failure(down)
            assert why == f"nothing accepts SSH connections on 127.0.0.1:{closed_port} (connection refused: sshd down?)"
            assert port_failures([up, down]) == {"h2": why}
    assert port_failure(Host(name="me", address="127.0.0.1", port=closed_port, local=True)) is None


def test_an_unreachable_host_gives_repros_own_finding_first_and_keeps_ansibles_words():
    from repro.hosts.ansible import HostOutcome, TaskResult

    said = "Data could not be sent to remote host '10.123.30.2'. Make sure this host can be reached over SSH: " \
           "[Errno 32] Broken pipe"
    out = HostOutcome("h2", unreachable=True, failure=TaskResult("h2", "ssh_trust", "ping", "unreachable", said))
    assert out.why_unreachable == said  # nothing probed: Ansible's words alone
    out.probe = "nothing accepts SSH connections on 10.123.30.2:22 (connection refused: sshd down?)"
    assert out.why_unreachable == f"{out.probe} (Ansible: {said})"
    assert HostOutcome("h3", unreachable=True).why_unreachable == "no reason given"
