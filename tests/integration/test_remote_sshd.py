"""repro's own SSH (Remote, fabric/paramiko) against the loopback sshd of test_host_keys_sshd (issue 38).

- A command that prints without end over SSH is stopped once it has printed more than repro reads, naming the host.
- Each host is checked against its own known-hosts file only: the key of the server, known in host A's file, is
  refused for host B (same address and port) whose own file does not hold it.
"""

from __future__ import annotations

import pytest

from repro.errors import HostError
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote
from tests.integration.test_host_keys_sshd import Server, server  # noqa: F401  (the module's sshd fixture)


def _host(server: Server, name: str, known) -> Host:  # noqa: F811
    return Host(name=name, address="127.0.0.1", port=server.port, user=server.user, key_file=str(server.client_key),
                known_hosts=str(known))


def test_a_command_printing_without_end_over_ssh_is_stopped_naming_the_host(server: Server):  # noqa: F811
    with Remote(_host(server, "flood", server.known)) as remote:
        with pytest.raises(HostError) as info:
            remote.run(["yes"], timeout=60, max_bytes=4096)
        assert info.value.message == "flood: `yes` printed more than 4096 bytes"
        assert remote.run(["echo", "still", "usable"], timeout=60).stdout == "still usable\n"
        proc = remote.start(["yes"], max_bytes=4096)
        assert proc.wait(60) is not None
    assert proc.overflow == "flood: `yes` printed more than 4096 bytes"


def test_a_key_known_only_in_another_hosts_file_is_refused(server: Server):  # noqa: F811
    with Remote(_host(server, "a", server.known)) as remote:
        assert remote.run(["true"], timeout=30).ok
    with Remote(_host(server, "b", server.empty)) as remote, pytest.raises(HostError) as info:
        remote.run(["true"], timeout=30)
    assert f"host key of 127.0.0.1:{server.port} is not in {server.empty}" in info.value.message
