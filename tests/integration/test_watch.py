"""Watch, the background check of a running point's remote hosts, against the test cluster's real sshd: it
probes over one held SSH connection per host (a probe must not cost the host a new sshd process), and a host
whose link goes dark is named within a bounded time, its peer left alone."""

from __future__ import annotations

import time

import pytest

from repro.hosts.inventory import load_inventory
from repro.launch.runtimes import watch as watch_mod
from repro.launch.runtimes.watch import PROBE_FAILURES, PROBE_INTERVAL, Watch
from tests.cluster.fixtures import Cluster

pytestmark = pytest.mark.cluster


def passive_opens(cluster: Cluster, host: str) -> int:
    """TCP connections the host's network namespace has accepted so far (its own Tcp PassiveOpens counter)."""
    proc = cluster.exec(host, ["cat", "/proc/net/snmp"])
    assert proc.returncode == 0, proc.stderr
    head, values = [line.split()[1:] for line in proc.stdout.splitlines() if line.startswith("Tcp:")]
    return int(values[head.index("PassiveOpens")])


def ssh_peers(cluster: Cluster, host: str, port: int) -> list[str]:
    """Established connections to the host's sshd (one line each)."""
    proc = cluster.exec(host, ["ss", "-Htn", "state", "established", f"( sport = :{port} )"])
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line.strip()]


def test_probes_go_over_one_held_connection_per_host_which_closes_with_the_watch(cluster):
    hosts = list(load_inventory(cluster.inventory).hosts)
    assert {h.name for h in hosts} == {"h1", "h2"} and not any(h.local for h in hosts)
    probes = 6
    before = {h.name: passive_opens(cluster, h.name) for h in hosts}
    with Watch(hosts) as watch:
        time.sleep(probes * PROBE_INTERVAL + 1)
        assert watch.problem is None
        during = {h.name: ssh_peers(cluster, h.name, h.port) for h in hosts}
    accepted = {h.name: passive_opens(cluster, h.name) - before[h.name] for h in hosts}
    for h in hosts:
        assert len(during[h.name]) == 1, during
        # a new TCP connection per probe would be `probes` or more; one more is allowed for a probe that fell
        # back to the port check on a busy machine
        assert 1 <= accepted[h.name] <= 2, accepted
    deadline = time.monotonic() + 30
    while any(ssh_peers(cluster, h.name, h.port) for h in hosts) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(ssh_peers(cluster, h.name, h.port) for h in hosts), "the held connections must close"


def test_a_host_whose_link_goes_dark_is_named_and_its_peer_is_not(cluster):
    hosts = list(load_inventory(cluster.inventory).hosts)
    with Watch(hosts) as watch:
        time.sleep(2 * PROBE_INTERVAL + 1)  # the held connections are open and answering
        assert watch.problem is None
        cluster.link_down("h2")
        try:
            # a guard against a hang, not a speed check: each probe is bounded by its waits
            deadline = time.monotonic() + 20 * PROBE_FAILURES * (PROBE_INTERVAL + watch_mod.ANSWER_WAIT)
            while watch.problem is None and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            cluster.link_up("h2")
    assert watch.problem is not None, "the dark link was never noticed"
    h2 = next(h for h in hosts if h.name == "h2")
    assert watch.problem.startswith(f"host h2 ({h2.address}) stopped answering"), watch.problem
    assert "h1" not in watch.problem
