"""Reading a run's NCCL files back from its hosts over SSH (the host and docker runtimes; repro.launch.nccl_files
says where the ranks write them and how the listing reads)."""

from __future__ import annotations

import contextlib

from repro.errors import HostError
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote
from repro.launch.nccl_files import joined, read_argv


def read_nccl(host: Host, directory: str) -> str:
    """The NCCL files in `directory` on `host` (read_argv's output; empty when it cannot be reached: an expectation
    then fails for want of facts)."""
    try:
        with Remote(host) as remote:
            return remote.run(read_argv(directory), timeout=120).stdout
    except HostError:
        return ""


def remove_dir(host: Host, directory: str) -> None:
    """Remove a run's directory on `host`, as far as it can be reached (what is left is in /tmp)."""
    with contextlib.suppress(HostError), Remote(host) as remote:
        remote.run(["rm", "-rf", directory], timeout=60)


def gather_nccl(hosts: list[Host], directory: str) -> str:
    """The ranks' NCCL files of a run, read from `directory` on every host and removed there."""
    text = joined(read_nccl(host, directory) for host in hosts)
    for host in hosts:
        remove_dir(host, directory)
    return text
