"""Conditions sampled on the test cluster's remote hosts (repro.launch.conditions): each host's /proc is read
over one SSH connection held for the sweep, before, through and after a run, and a host that cannot be read
gets a problem, never a failed run."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace

import pytest

from repro.hosts.inventory import load_inventory
from repro.launch.conditions import Sampler
from repro.results.conditions import describe, summarize
from tests.cluster.fixtures import Cluster
from tests.integration.test_watch import passive_opens

pytestmark = pytest.mark.cluster


def test_remote_hosts_are_sampled_over_one_held_connection_each_and_see_other_work(cluster: Cluster):
    hosts = list(load_inventory(cluster.inventory).hosts)
    before = {h.name: passive_opens(cluster, h.name) for h in hosts}
    # other work, started before the runs: a busy loop (the cluster's hosts share this machine's /proc)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with Sampler(hosts, interval=1.0) as sampler:
            for _ in range(2):  # two runs of one sweep: still one connection per host
                with sampler.run([h.name for h in hosts]) as taken:
                    time.sleep(3.5)
    finally:
        hog.kill()
        hog.wait()
    accepted = {h.name: passive_opens(cluster, h.name) - before[h.name] for h in hosts}
    assert all(n == 1 for n in accepted.values()), accepted
    for h in hosts:
        host = taken.conditions.hosts[h.name]
        phases = [s.phase for s in host.samples]
        assert phases[0] == "before" and phases[-1] == "after" and phases.count("during") >= 3, phases
        s = summarize(host)
        assert host.cpus and s.load_before is not None
        # the busy loop is not the run's (it started before): a core's worth of other work, before and during
        assert s.others_before >= 0.7 and s.others_during >= 0.7, describe(host)
        assert "cores before/during/after" in describe(host)


def test_a_host_that_cannot_be_read_gets_a_problem_and_no_samples(cluster: Cluster):
    good, bad = list(load_inventory(cluster.inventory).hosts)
    broken = replace(bad, port=1)  # nothing listens there
    with Sampler([good, broken], interval=1.0) as sampler, sampler.run([good.name, broken.name]) as taken:
        time.sleep(1.5)
    assert taken.conditions.hosts[good.name].samples
    lost = taken.conditions.hosts[broken.name]
    assert lost.samples == [] and lost.problem and broken.name in lost.problem
