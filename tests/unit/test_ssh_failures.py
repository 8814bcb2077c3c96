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
