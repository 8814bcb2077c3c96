"""The multi-host test cluster is a real cluster: SSH with strict host keys between hosts, MPI across
them, a Docker engine per host at the host's address, a ~/.ssh per host, faults that really break
things, and a teardown that leaves nothing behind. Run with: pytest -m cluster tests/integration/test_cluster.py
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cluster.fixtures import (
    Cluster,
    cluster_down,
    cluster_up,
    load_cluster,
    sibling_name,
    skip_or_fail,
)

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]

MPI_PROGRAM = r"""
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Each rank finds its own eth0 address; rank 0 gathers them over MPI and prints one line per rank. */
int main(int argc, char **argv) {
    char mine[INET_ADDRSTRLEN] = "none", all[16][INET_ADDRSTRLEN];
    int rank, size;
    struct ifaddrs *ifs, *i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (getifaddrs(&ifs) == 0) {
        for (i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && strcmp(i->ifa_name, "eth0") == 0)
                inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, mine, sizeof mine);
        freeifaddrs(ifs);
    }
    MPI_Gather(mine, INET_ADDRSTRLEN, MPI_CHAR, all, INET_ADDRSTRLEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int r = 0; r < size && r < 16; r++) printf("RANK %d %s\n", r, all[r]);
    MPI_Finalize();
    return 0;
}
"""


def local_addresses(fib_trie: str) -> set[str]:
    """The addresses /proc/net/fib_trie lists as this network namespace's own (LOCAL, not loopback)."""
    lines = fib_trie.splitlines()
    found = set()
    for prev, line in itertools.pairwise(lines):
        if "/32 host LOCAL" in line and "|--" in prev:
            address = prev.split("|--")[1].strip()
            if not address.startswith("127."):
                found.add(address)
    return found


NUL = b"\0"


def processes_naming(path: Path) -> list[str]:
    """Command lines of running processes that name `path/` (e.g. an sshd or dockerd of a state dir)."""
    needle = f"{path}/".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline:
            found.append(f"{proc.name}: {cmdline.replace(NUL, b' ').decode(errors='replace')}")
    return found


def namespaces_of(name: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0].startswith(f"{name}-h")]


def ssh_from(cluster: Cluster, src: str, dst: str, command: list[str], *, known_hosts: Path | None = None,
             connect_timeout: int = 5) -> subprocess.CompletedProcess[str]:
    """Run `command` on host dst over SSH, started from host src."""
    argv = cluster.ssh_argv(cluster.host(dst).address, known_hosts=known_hosts, connect_timeout=connect_timeout)
    return cluster.exec(src, [*argv, *command])


def docker_cli(host: str | None, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    assert host, "the cluster was brought up without Docker engines"
    return subprocess.run(["docker", "-H", host, *args], capture_output=True, text=True, timeout=timeout, check=False)


# -- the inventory --------------------------------------------------------------------------------


def test_inventory_lists_every_host_with_the_contract_variables(cluster: Cluster) -> None:
    data = yaml.safe_load(cluster.inventory.read_text())
    hosts = data["all"]["children"]["workers"]["hosts"]
    assert list(hosts) == [h.name for h in cluster.hosts]
    for host in cluster.hosts:
        assert hosts[host.name] == {
            "ansible_host": host.address,
            "ansible_port": 22,
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(cluster.key),
            "ansible_ssh_common_args": f"-o UserKnownHostsFile={cluster.known_hosts} -o StrictHostKeyChecking=yes",
            "ansible_python_interpreter": "/usr/bin/python3",
            "repro_known_hosts": str(cluster.known_hosts),
            "repro_slots": 1,
            "repro_gpus": 0,
            "repro_interface": "eth0",
            "repro_docker_host": host.docker_host,
        }
    known = cluster.known_hosts.read_text().split("\n")
    assert sorted(line.split()[0] for line in known if line) == sorted(h.address for h in cluster.hosts)


def test_ansible_reaches_every_host_through_the_inventory(cluster: Cluster) -> None:
    ansible = shutil.which("ansible") or (str(Path(sys.executable).with_name("ansible")))
    if not Path(ansible).exists():
        skip_or_fail("ansible-core is not installed")
    argv = [ansible, "-i", str(cluster.inventory), "workers", "-m", "command", "-a", "ip -4 -o addr show dev eth0"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_NOCOLOR="1"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for host in cluster.hosts:
        assert f"{host.name} | CHANGED" in proc.stdout
        assert f"inet {host.address}/24" in proc.stdout


# -- SSH ------------------------------------------------------------------------------------------


def test_ssh_from_h1_to_h2_lands_on_h2_with_strict_host_key_checking(cluster: Cluster) -> None:
    h1, h2 = cluster.host("h1"), cluster.host("h2")
    proc = ssh_from(cluster, "h1", "h2", ["ip", "-4", "-o", "addr", "show", "dev", "eth0"])
    assert proc.returncode == 0, proc.stderr
    assert f"inet {h2.address}/24" in proc.stdout
    assert h1.address not in proc.stdout
    config = cluster.exec("h1", ["ssh", "-G", *cluster.ssh_argv(h2.address)[1:]])
    assert config.returncode == 0, config.stderr
    assert "stricthostkeychecking true" in config.stdout.splitlines()


def test_ssh_fails_when_known_hosts_holds_another_key_or_none(cluster: Cluster, tmp_path: Path) -> None:
    h1, h2 = cluster.host("h1"), cluster.host("h2")
    h1_key = next(line for line in cluster.known_hosts.read_text().splitlines() if line.startswith(f"{h1.address} "))
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(h1_key.replace(h1.address, h2.address, 1) + "\n")  # h2's address with h1's key
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    for known_hosts in (wrong, empty):
        proc = ssh_from(cluster, "h1", "h2", ["true"], known_hosts=known_hosts)
        assert proc.returncode == 255, f"{known_hosts.name}: {proc.stdout}{proc.stderr}"
        assert "Host key verification failed" in proc.stderr, proc.stderr
    assert wrong.read_text() == h1_key.replace(h1.address, h2.address, 1) + "\n"  # nothing was learnt
    assert empty.read_text() == ""


def test_each_host_has_its_own_ssh_directory(cluster: Cluster) -> None:
    keys = {h.name: ssh_from(cluster, "h1", h.name, ["cat", ".ssh/authorized_keys"]) for h in cluster.hosts}
    admin_key = Path(f"{cluster.key}.pub").read_text().split()[1]
    for name, proc in keys.items():
        assert proc.returncode == 0, proc.stderr
        assert f"host {name} (" in proc.stdout
        assert admin_key in proc.stdout
    assert keys["h1"].stdout != keys["h2"].stdout
    marker = f"written-on-h1-{os.getpid()}"
    write = ssh_from(cluster, "h2", "h1", ["sh", "-c", f"echo x > ~/.ssh/{marker}"])
    assert write.returncode == 0, write.stderr
    try:
        assert (cluster.host("h1").ssh_dir / marker).exists()
        on_h2 = ssh_from(cluster, "h1", "h2", ["test", "-e", f".ssh/{marker}"])
        assert on_h2.returncode == 1, on_h2.stderr
        assert not Path("/root/.ssh", marker).exists()  # the machine's own ~/.ssh is untouched
    finally:
        (cluster.host("h1").ssh_dir / marker).unlink(missing_ok=True)


def test_each_host_has_its_own_name_resolving_to_its_address(cluster: Cluster) -> None:
    for h in cluster.hosts:
        over_ssh = ssh_from(cluster, "h1", h.name, ["sh", "-c", "hostname; getent hosts $(hostname)"])
        assert over_ssh.returncode == 0, over_ssh.stderr
        name, resolved = over_ssh.stdout.splitlines()[:2]
        assert name == h.name and resolved.split()[0] == h.address
        in_container = docker_cli(h.docker_host, "run", "--rm", "--network", "host", "debian:12", "sh", "-c",
                                  "cat /proc/sys/kernel/hostname; getent hosts $(cat /proc/sys/kernel/hostname)")
        assert in_container.returncode == 0, in_container.stderr
        name, resolved = in_container.stdout.splitlines()[:2]
        assert name == h.name and resolved.split()[0] == h.address


# -- MPI ------------------------------------------------------------------------------------------


def test_mpirun_from_h1_places_one_rank_on_each_host(cluster: Cluster, tmp_path: Path) -> None:
    if not (shutil.which("mpicc") and shutil.which("mpirun")):
        skip_or_fail("Open MPI (openmpi-bin, libopenmpi-dev) is not installed")
    source = tmp_path / "where.c"
    source.write_text(MPI_PROGRAM)
    binary = tmp_path / "where"
    subprocess.run(["mpicc", "-O1", "-o", str(binary), str(source)], check=True, timeout=120)
    a1, a2 = cluster.host("h1").address, cluster.host("h2").address
    proc = cluster.exec("h1", [
        "mpirun", "--allow-run-as-root", "-np", "2", "-H", f"{a1}:1,{a2}:1",
        "--mca", "plm_rsh_args", f"-i {cluster.key} -o UserKnownHostsFile={cluster.known_hosts}",
        "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "eth0", str(binary),
    ], timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ranks = dict(line.split()[1:3] for line in proc.stdout.splitlines() if line.startswith("RANK "))
    assert ranks == {"0": a1, "1": a2}, proc.stdout


# -- Docker engines -------------------------------------------------------------------------------


def test_host_network_container_on_h2_engine_lives_at_h2_address(cluster: Cluster) -> None:
    h1, h2 = cluster.host("h1"), cluster.host("h2")
    proc = docker_cli(h2.docker_host, "run", "--rm", "--network", "host", "debian:12", "cat", "/proc/net/fib_trie")
    assert proc.returncode == 0, proc.stderr
    assert local_addresses(proc.stdout) == {h2.address}
    assert h1.address not in proc.stdout


def test_every_engine_holds_the_same_base_image(cluster: Cluster) -> None:
    ids = set()
    for host in cluster.hosts:
        proc = docker_cli(host.docker_host, "image", "inspect", "--format", "{{.Id}}", "debian:12")
        assert proc.returncode == 0, proc.stderr
        ids.add(proc.stdout.strip())
    assert len(ids) == 1


# -- faults ---------------------------------------------------------------------------------------


def test_sshd_stop_refuses_ssh_and_sshd_start_restores_it(cluster: Cluster) -> None:
    with cluster.faulted("sshd-stop", "h2"):
        proc = ssh_from(cluster, "h1", "h2", ["true"])
        assert proc.returncode == 255
        assert "Connection refused" in proc.stderr, proc.stderr
    proc = ssh_from(cluster, "h1", "h2", ["true"])
    assert proc.returncode == 0, proc.stderr


def test_link_down_makes_h2_unreachable_and_link_up_restores_it(cluster: Cluster) -> None:
    with cluster.faulted("link-down", "h2"):
        proc = ssh_from(cluster, "h1", "h2", ["true"], connect_timeout=3)
        assert proc.returncode == 255
        assert "timed out" in proc.stderr or "No route to host" in proc.stderr, proc.stderr
    proc = ssh_from(cluster, "h1", "h2", ["true"])
    assert proc.returncode == 0, proc.stderr


def test_engine_kill_breaks_docker_and_engine_start_restores_it(cluster: Cluster) -> None:
    h2 = cluster.host("h2")
    with cluster.faulted("engine-kill", "h2"):
        proc = docker_cli(h2.docker_host, "info", timeout=30)
        assert proc.returncode != 0
        assert docker_cli(cluster.host("h1").docker_host, "info").returncode == 0  # h1 is unaffected
    proc = docker_cli(h2.docker_host, "run", "--rm", "--network", "host", "debian:12", "true")
    assert proc.returncode == 0, proc.stderr


# -- lifecycle ------------------------------------------------------------------------------------

FAILING_TEST = '''
import json, os, pathlib

def test_deliberately_fails(cluster):
    h2 = cluster.exec("h2", ["true"])
    pids = [p.read_text().strip() for p in cluster.state_dir.glob("h*/*.pid")]
    pathlib.Path(os.environ["REPRO_CHILD_MARKER"]).write_text(json.dumps({
        "state_dir": str(cluster.state_dir), "h2_answered": h2.returncode == 0, "pids": pids}))
    raise AssertionError("deliberate failure")
'''


def test_a_failing_session_leaves_no_namespace_process_or_state(cluster: Cluster, tmp_path: Path) -> None:
    name = sibling_name(cluster.name, "f")
    test_file = tmp_path / "test_child.py"
    test_file.write_text(FAILING_TEST)
    marker = tmp_path / "marker.json"
    env = {k: v for k, v in os.environ.items() if k != "REPRO_CLUSTER_DIR"}
    env.update(REPRO_CLUSTER_NAME=name, REPRO_CHILD_MARKER=str(marker),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    try:
        child = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "tests.cluster.fixtures", "-p", "no:cacheprovider",
             "-q", str(test_file)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False)
        assert child.returncode == 1, child.stdout + child.stderr
        assert "deliberate failure" in child.stdout
        seen = json.loads(marker.read_text())
        assert seen["h2_answered"]
        state_dir = Path(seen["state_dir"])
        assert len(seen["pids"]) >= 4  # an sshd and a dockerd per host ran
        assert namespaces_of(name) == []
        assert processes_naming(state_dir) == []
        assert not state_dir.exists()
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=30).stdout
        assert f" {name}-br" not in links and f" {name}-h" not in links
    finally:
        cluster_down(name)  # whatever the child left, the machine is clean again


def test_up_down_up_again_reuses_the_base_image_tarball(cluster: Cluster, base_rootfs: Path) -> None:
    name = sibling_name(cluster.name, "a")
    tarball = base_rootfs
    before = tarball.stat()
    try:
        for attempt in (1, 2):
            again, messages = cluster_up(name, 2, docker=True)
            assert f"reusing cached root filesystem {tarball}" in messages, f"up {attempt}: {messages}"
            assert "building" not in messages
            proc = docker_cli(again.host("h2").docker_host, "run", "--rm", "--network", "host", "debian:12",
                              "cat", "/proc/net/fib_trie")
            assert proc.returncode == 0, proc.stderr
            assert local_addresses(proc.stdout) == {again.host("h2").address}
            assert ssh_from(again, "h1", "h2", ["true"]).returncode == 0
            cluster_down(name)
            assert namespaces_of(name) == [] and not again.state_dir.exists()
        after = tarball.stat()
        assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
    finally:
        cluster_down(name)


def test_up_recovers_from_a_crashed_run(cluster: Cluster) -> None:
    name = sibling_name(cluster.name, "c")
    try:
        first, _ = cluster_up(name, 2, docker=False)
        # A crash: the state dir is gone, but namespaces, bridge and sshds are still there.
        shutil.rmtree(first.state_dir)
        assert sorted(namespaces_of(name)) == [f"{name}-h1", f"{name}-h2"]
        second, messages = cluster_up(name, 2, docker=False)
        assert "removing leftovers" in messages
        assert ssh_from(second, "h1", "h2", ["true"]).returncode == 0
        assert load_cluster(second.state_dir) == second
    finally:
        cluster_down(name)
    assert namespaces_of(name) == []

