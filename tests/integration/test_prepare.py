"""`repro prepare` on the multi-host test cluster, for real: Ansible over SSH with strict host keys.

ssh_trust makes every host reach every other without a password (checked by ssh-ing h1 -> h2 and back
inside the hosts, host keys checked) and a second run changes nothing; the hardware roles skip with
their reasons in check mode; ipoib configures a stand-in ib0 inside h1 (address, MTU, state checked
with `ip -j addr`); --check-only stores real facts and prints readiness; an unreachable host is named
with the reason while the other completes. Every file a role writes outside ~/.ssh is redirected into
a scratch directory through inventory variables; each host's ~/.ssh is restored afterwards.

The tests run in any order: `untrusted` puts every host's ~/.ssh back as the cluster made it before a
test that needs no trust yet, `trusted` runs ssh_trust before a test that needs it.
Run with: pytest -m cluster tests/integration/test_prepare.py
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from repro.hosts.inventory import load_inventory
from repro.hosts.readiness import FAIL, evaluate
from repro.manifest import load_stack
from repro.pipeline.prepare import prepare
from repro.results.store import Store
from tests.cluster.fixtures import Cluster, ClusterHost

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
GPU_STACK = REPO / "stacks" / "tf114-cuda10.yaml"
TRUST_KEY = "repro_trust_ed25519"  # ssh_trust_remote_key_name's default


@dataclass(frozen=True)
class Site:
    """The cluster seen through a scratch inventory whose variables redirect every persistent file."""

    cluster: Cluster
    inventory: Path
    store: Path
    scratch: Path
    controller_key: Path
    ipoib_address: str
    ssh_dirs: dict[str, dict[str, bytes]]  # each host's ~/.ssh as the cluster made it: file name -> content

    def restore_ssh_dirs(self) -> None:
        """Put every host's ~/.ssh back as the cluster made it (no trust between hosts)."""
        for h in self.cluster.hosts:
            saved = self.ssh_dirs[h.name]
            for p in h.ssh_dir.iterdir():
                if p.is_file() and p.name not in saved:
                    p.unlink()
            for name, data in saved.items():
                (h.ssh_dir / name).write_bytes(data)


@pytest.fixture(scope="module")
def site(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    base = tmp_path_factory.mktemp("prepare")
    inventory, scratch = base / "inventory", base / "scratch"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "host_vars").mkdir()
    shutil.copy(cluster.inventory, inventory / "hosts.yml")
    controller_key = base / "controller" / "trust_ed25519"
    host_scratch = f"{scratch}/{{{{ inventory_hostname }}}}"
    (inventory / "group_vars" / "all.yml").write_text(yaml.safe_dump({
        "ssh_trust_key_file": str(controller_key),  # never the controller's real ~/.ssh
        "ipoib_persist": "ifupdown",
        "ipoib_persist_file": f"{host_scratch}/interfaces.d/repro-ib0",
        "docker_daemon_json": f"{host_scratch}/docker/daemon.json",
        "docker_service_manage": False,
        "nfs_dataset_fstab": f"{host_scratch}/fstab",
        "gpudirect_modules_load_file": f"{host_scratch}/modules-load.d/repro-gpudirect.conf",
    }))
    octet = cluster.host("h1").address.split(".")[2]
    ipoib_address = f"10.124.{octet}.1"  # only inside h1's namespace
    (inventory / "host_vars" / "h1.yml").write_text(yaml.safe_dump({"ipoib_address": ipoib_address}))
    saved = {h.name: {p.name: p.read_bytes() for p in h.ssh_dir.iterdir() if p.is_file()} for h in cluster.hosts}
    site = Site(cluster, inventory, base / "store", scratch, controller_key, ipoib_address, saved)
    try:
        yield site
    finally:
        site.restore_ssh_dirs()  # leave each host's ~/.ssh as the cluster made it


@pytest.fixture
def untrusted(site: Site) -> Site:
    """The site before any ssh_trust run: hosts' ~/.ssh as the cluster made them, no controller trust key."""
    site.restore_ssh_dirs()
    shutil.rmtree(site.controller_key.parent, ignore_errors=True)
    return site


@pytest.fixture
def trusted(site: Site) -> Site:
    """The site after ssh_trust ran with every host up: every host reaches every other."""
    proc = repro(site, "--tags", "ssh_trust")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return site


def repro(site: Site, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    """`repro prepare --hosts <scratch inventory> --store <scratch store> ARGS`, as a user runs it."""
    argv = [sys.executable, "-m", "repro", "prepare", "--hosts", str(site.inventory), "--store", str(site.store),
            *args]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)


def hop(site: Site, src: ClusterHost, dst: ClusterHost, *ssh_options: str) -> subprocess.CompletedProcess[str]:
    """ssh (admin key) into `src`, and from there -- with src's own ~/.ssh -- ssh to `dst`; print dst's eth0."""
    inner = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ConnectTimeout=5",
             *ssh_options, f"root@{dst.address}", "ip", "-4", "-o", "addr", "show", "dev", "eth0"]
    return subprocess.run([*site.cluster.ssh_argv(src.address), shlex.join(inner)], capture_output=True,
                          text=True, timeout=60, check=False)


def progress_lines(stdout: str, host: str) -> list[str]:
    return [ln for ln in stdout.splitlines() if re.match(rf"\s+{host}\s", ln)]


def test_ssh_trust_lets_every_host_reach_every_other_with_host_keys_checked(untrusted):
    site = untrusted
    h1, h2 = site.cluster.host("h1"), site.cluster.host("h2")
    with_key = ("-o", "IdentitiesOnly=yes", "-i", f"~/.ssh/{TRUST_KEY}")
    before = hop(site, h1, h2, *with_key)
    assert before.returncode != 0, "h1 reached h2 before any trust was set up: the check below would prove nothing"

    proc = repro(site, "--tags", "ssh_trust")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^h1\s+changed\s", proc.stdout, re.M) and re.search(r"^h2\s+changed\s", proc.stdout, re.M)
    assert site.controller_key.is_file(), "the cluster key is generated once, on the controller"

    for src, dst in ((h1, h2), (h2, h1)):
        # the cluster key in src's own ~/.ssh, dst's host key from src's own known_hosts, checked strictly
        there = hop(site, src, dst, *with_key)
        assert there.returncode == 0, f"{src.name} -> {dst.name}: {there.stderr}"
        assert f"inet {dst.address}/" in there.stdout, f"{src.name} -> {dst.name} landed elsewhere: {there.stdout}"
        # plain ssh (as mpirun runs it) finds the key through ~/.ssh/config
        plain = hop(site, src, dst)
        assert plain.returncode == 0 and f"inet {dst.address}/" in plain.stdout, plain.stderr
        # host-key checking is on: without the recorded keys the same login is refused
        blind = hop(site, src, dst, *with_key, "-o", "UserKnownHostsFile=/dev/null",
                    "-o", "GlobalKnownHostsFile=/dev/null")
        assert blind.returncode != 0 and "Host key verification failed" in blind.stderr, blind.stderr

    again = prepare(site.inventory, tags=("ssh_trust",), store_root=site.store)
    assert {h: (o.status, o.changed) for h, o in again.outcome.hosts.items()} == {"h1": ("ok", 0), "h2": ("ok", 0)}


@pytest.mark.tf
def test_host_runtime_across_hosts_uses_the_default_launch_key_and_known_hosts_after_ssh_trust(trusted, tmp_path):
    """No repro_launch_key nor repro_launch_known_hosts: mpirun on h1 reaches h2 with h1's own ~/.ssh, as
    ssh_trust left it (its key through ~/.ssh/config, h2's host key in known_hosts, checked strictly)."""
    site = trusted
    inventory = yaml.safe_load((site.inventory / "hosts.yml").read_text())
    for host in inventory["all"]["children"]["workers"]["hosts"].values():
        assert "repro_launch_key" not in host and "repro_launch_known_hosts" not in host
        host["repro_python"] = sys.executable  # the hosts share this machine's filesystem and its TensorFlow
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "repro", "bench", "--stack", str(REPO / "stacks" / "cpu-tf215.yaml"), "--runtime",
            "host", "--hosts", str(path), "--workers", "2", "--warmup-steps", "1", "--steps", "3", "--batch-size",
            "8", "--repeats", "1", "--store", str(store)]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (rec,) = Store(store).records()
    assert rec.status == "ok" and sorted(r.host for r in rec.ranks) == ["h1", "h2"]
    rsh = rec.command[rec.command.index("plm_rsh_args") + 1] if "plm_rsh_args" in rec.command else ""
    assert "-i" not in rsh.split() and "UserKnownHostsFile" not in rsh  # nothing given: ssh's own defaults


def test_hardware_roles_skip_with_their_reason_in_check_mode(site):
    proc = repro(site, "--stack", str(GPU_STACK), "--tags", "ofed,gpudirect,nvidia", "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for host in ("h1", "h2"):
        lines = "\n".join(progress_lines(proc.stdout, host))
        assert re.search(r"ofed: .*skipped: no Mellanox HCA", lines), lines
        assert re.search(r"nvidia: .*skipped: no NVIDIA GPU", lines), lines
        assert re.search(r"gpudirect: .*skipped: no NVIDIA GPU and no Mellanox HCA", lines), lines
        assert re.search(rf"^{host}\s+ok\s+\d+\s+0\s", proc.stdout, re.M), f"{host} changed something:\n{proc.stdout}"
    assert "ofed: skipped: no Mellanox HCA (no PCI device of vendor 0x15b3)" in proc.stdout  # the summary's notes


def _add_ib0(site: Site, namespace: str) -> str:
    """An ib0 inside the host: a dummy interface, or a veth where the kernel has no dummy driver."""
    add = subprocess.run(["ip", "-n", namespace, "link", "add", "ib0", "type", "dummy"], capture_output=True,
                         text=True, check=False)
    if add.returncode == 0:
        return "dummy"
    assert "Unknown device type" in add.stderr, add.stderr
    subprocess.run(["ip", "-n", namespace, "link", "add", "ib0", "type", "veth", "peer", "name", "ib0-peer"],
                   check=True)
    return "veth"


def test_ipoib_configures_and_persists_the_interface(site):
    h1 = site.cluster.host("h1")
    kind = _add_ib0(site, h1.namespace)
    try:
        proc = repro(site, "--tags", "ipoib")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        [link] = json.loads(subprocess.run(["ip", "-n", h1.namespace, "-j", "addr", "show", "dev", "ib0"],
                                           capture_output=True, text=True, check=True).stdout)
        assert link["mtu"] == 2044
        assert "UP" in link["flags"]
        assert (site.ipoib_address, 24) in [(a["local"], a["prefixlen"]) for a in link["addr_info"]]
        persisted = (site.scratch / "h1" / "interfaces.d" / "repro-ib0").read_text()
        assert f"address {site.ipoib_address}/24" in persisted and "mtu 2044" in persisted
        assert "/mode" not in persisted, "the IPoIB mode belongs only to real IPoIB interfaces"
        assert f"skipped: mode applies only to IPoIB interfaces; ib0 is a {kind} interface" in proc.stdout
        assert re.search(r"h2\s+ipoib: .*skipped: no interface ib0 and no Mellanox HCA", proc.stdout)
        assert not (site.scratch / "h2" / "interfaces.d").exists()

        again = prepare(site.inventory, tags=("ipoib",), store_root=site.store)
        assert again.outcome.hosts["h1"].changed == 0 and again.outcome.hosts["h1"].status == "ok"
    finally:
        subprocess.run(["ip", "-n", h1.namespace, "link", "del", "ib0"], check=False)


def test_check_only_prints_readiness_and_stores_real_facts(site):
    proc = repro(site, "--check-only")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stored = Store(site.store).facts(load_inventory(site.inventory))
    assert set(stored) == {"h1", "h2"}
    for host in site.cluster.hosts:
        assert re.search(rf"^{host.name}\s+interface\s+ok\s+eth0 up, {re.escape(host.address)}/24", proc.stdout,
                         re.M), proc.stdout
        assert re.search(rf"^{host.name}\s+docker\s+ok\s", proc.stdout, re.M), proc.stdout
        path = Store(site.store).facts_dir(load_inventory(site.inventory)) / f"{host.name}.json"
        data = json.loads(path.read_text())
        assert data["format"] == "repro.facts/1" and data["host"] == host.name
        assert data["kernel"] == os.uname().release
        assert data["address"] == host.address and f"{host.address}/24" in data["interface"]["addresses"]
        assert data["docker"]["reachable"] is True
        assert data["checks"]["ofed_info -s"]["status"] == "absent"
    # the same stored facts, judged against a GPU stack, are not ready
    facts = stored  # typed HostFacts, as bench records them
    gpu = [c for c in evaluate(facts, load_stack(GPU_STACK).stack).checks if c.name == "gpu"]
    assert [c.status for c in gpu] == [FAIL, FAIL]
    assert gpu[0].message == "no GPU found but the stack is a GPU stack (CUDA 10.0 needs driver >= 410.48)"


def test_check_only_json_is_the_document_alone_with_readiness_and_facts(site):
    """--format json (docs/prepare.md): progress on stderr, stdout one document (issue 39 item 1)."""
    proc = repro(site, "--check-only", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["mode"] == "check-only" and data["ok"] is True and data["error"] is None
    assert [h["host"] for h in data["hosts"]] == ["h1", "h2"] and set(data["facts"]) == {"h1", "h2"}
    assert {(c["host"], c["check"], c["status"]) for c in data["readiness"]} >= {("h1", "docker", "ok"),
                                                                                 ("h2", "docker", "ok")}
    assert "repro prepare (check-only)" in proc.stderr


def test_an_unreachable_host_is_named_with_the_reason_and_the_other_completes(trusted):
    site = trusted
    h1, h2 = site.cluster.host("h1"), site.cluster.host("h2")
    with site.cluster.faulted("sshd-stop", "h2"):
        proc = repro(site, "--tags", "ssh_trust")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # repro's own check of the port names the cause, whatever Ansible said (a refused connection can reach it as
    # "Data could not be sent ... Broken pipe" when ssh exits before Ansible has written the module to it)
    assert re.search(rf"h2: unreachable: nothing accepts SSH connections on {re.escape(h2.address)}:\d+ "
                     r"\(connection refused: sshd down\?\) \(Ansible: ", proc.stderr), proc.stderr
    assert re.search(r"^h2\s+UNREACHABLE\s", proc.stdout, re.M), proc.stdout
    assert re.search(r"^h1\s+ok\s.*all selected roles ran, no changes", proc.stdout, re.M), proc.stdout
    # h1 kept h2's host keys from the earlier run: with h2 back, h1 reaches it as before
    back = hop(site, h1, h2, "-o", "IdentitiesOnly=yes", "-i", f"~/.ssh/{TRUST_KEY}")
    assert back.returncode == 0 and f"inet {h2.address}/" in back.stdout, back.stderr


def test_a_host_with_a_wrong_host_key_fails_named_unchanged_and_ansible_ran_ssh_strictly(untrusted, tmp_path):
    """h2's recorded host key is another key: h2 fails with the cause, its ~/.ssh is untouched, h1 completes.
    ansible-runner sets ANSIBLE_HOST_KEY_CHECKING=False unless told otherwise, so Ansible put
    `-o StrictHostKeyChecking=no` first on ssh's command line (the inventory's later `=yes` lost) and reached h2
    anyway; the ssh command lines are read from Ansible's own log. ANSIBLE_VERBOSITY must not break the listing,
    nor a PATH without the virtual environment's bin the run."""
    site = untrusted
    h2 = site.cluster.host("h2")
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = tmp_path / "known_hosts"
    lines = site.cluster.known_hosts.read_text().splitlines()
    fake = " ".join(other.with_suffix(".pub").read_text().split()[:2])
    wrong.write_text("".join(f"{h2.address} {fake}\n" if ln.startswith(f"{h2.address} ") else ln + "\n"
                             for ln in lines))
    inventory = tmp_path / "inventory"
    shutil.copytree(site.inventory, inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    # the known-hosts files are the ones repro's own ssh options name (each host's own repro_known_hosts; they come
    # first on every ssh line, so an ansible_ssh_common_args file alone no longer decides): they hold the wrong key
    # for h2
    hosts["all"]["children"]["workers"]["hosts"]["h2"]["ansible_ssh_common_args"] = \
        f"-o UserKnownHostsFile={wrong} -o StrictHostKeyChecking=yes"
    for host in hosts["all"]["children"]["workers"]["hosts"].values():  # h1's right key, h2's wrong one
        host["repro_known_hosts"] = str(wrong)
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    before = {p.name: p.read_bytes() for p in h2.ssh_dir.iterdir() if p.is_file()}
    log = tmp_path / "ansible.log"
    # repro run by its full path: the virtual environment's bin (ansible-playbook) is not on PATH
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not Path(p, "ansible-playbook").exists())
    env = {**os.environ, "ANSIBLE_VERBOSITY": "3", "ANSIBLE_LOG_PATH": str(log), "PATH": path}
    env.pop("ANSIBLE_HOST_KEY_CHECKING", None)
    argv = [sys.executable, "-m", "repro", "prepare", "--hosts", str(inventory), "--store", str(site.store),
            "--tags", "ssh_trust"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=400, check=False, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"h2: unreachable: .*(Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED)",
                     proc.stderr, re.S), proc.stderr
    assert re.search(r"^h1\s+changed\s", proc.stdout, re.M), proc.stdout
    assert {p.name: p.read_bytes() for p in h2.ssh_dir.iterdir() if p.is_file()} == before, "h2 was changed"
    execs = [ln for ln in log.read_text(errors="replace").splitlines() if "SSH: EXEC ssh" in ln]
    to_h2 = [ln for ln in execs if h2.address in ln]
    assert to_h2, f"no ssh command line to h2 in Ansible's log:\n{execs[:3]}"
    for line in execs:
        assert "StrictHostKeyChecking=no" not in line, line
        assert re.findall(r"StrictHostKeyChecking=(\w+)", line)[:1] == ["yes"], line


PLANTED = {"AWS_SECRET_ACCESS_KEY": "Aws-Secret-0b7c41", "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123456789",
           "WANDB_API_KEY": "Wandb-Key-5e2d90", "MYSQL_PWD": "Mysql-Pwd-c83a17",
           "TF_VAR_db_password": "Tf-Var-Pw-61d0e4"}
BECOME = {"inventory": "Inv-Become-93fa2c", "extra": "Extra-Become-4d7b18"}


def test_a_real_prepare_keeps_no_secret_on_disk_or_in_its_output(site, tmp_path):
    """ansible-runner wrote the caller's whole environment and the -e variables to artifacts/<id>/command (and the
    -e variables to its events); repro keeps only redacted output and events, and prints no secret."""
    inventory = tmp_path / "inventory"
    shutil.copytree(site.inventory, inventory)
    with (inventory / "group_vars" / "all.yml").open("a") as fh:
        fh.write(f"ansible_become_password: {BECOME['inventory']}\n")
    store = tmp_path / "store"
    env = {**os.environ, **PLANTED}
    scratch_before = set(Path("/dev/shm").glob("repro-ansible-*")) if Path("/dev/shm").is_dir() else set()
    outputs = []
    for extra in (["--check-only"], ["--check-only", "--dry-run"]):
        argv = [sys.executable, "-m", "repro", "prepare", "--hosts", str(inventory), "--store", str(store), *extra,
                "-e", f"ansible_become_pass={BECOME['extra']}"]
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=400, check=False, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outputs.append(proc.stdout + proc.stderr)
    written = [p for p in store.rglob("*") if p.is_file()]
    kept = {p.name for p in written if "logs" in p.parts}
    assert "stdout" in kept and "command" not in kept and not any("env" in p.parts for p in written), kept
    for secret in (*PLANTED.values(), *BECOME.values()):
        for text in outputs:
            assert secret not in text, secret
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"{secret} written to {path}"
    if Path("/dev/shm").is_dir():
        assert set(Path("/dev/shm").glob("repro-ansible-*")) == scratch_before, "ansible-runner's scratch dir left"
