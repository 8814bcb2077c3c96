"""`kill -9` of a running `repro prepare` leaves no process, and the next start leaves no scratch (issue 38 item 2).

Against the loopback sshd of test_host_keys_sshd (its key known): `repro prepare --check-only` runs a copy of
repro's playbooks whose facts.yml sleeps on the host, so ansible-playbook, its workers and ssh are running when
repro is killed. Then: every process repro had started ends (the supervisor kills ansible-playbook's group;
a detached ssh connection master is stopped by the next start), and the next `prepare` removes the killed run's
private data dir in /dev/shm (environment, extra variables) and its ssh control directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tests.integration.test_host_keys_sshd import Server, server  # noqa: F401  (the module's sshd fixture)

REPO = Path(__file__).resolve().parents[2]
SLOW_FACTS = """\
- name: Gather repro facts slowly, while the test kills repro
  hosts: all
  gather_facts: false
  tasks:
    - name: Sleep on the host
      ansible.builtin.command: sleep 40
      changed_when: false
      check_mode: false  # --check-only runs the playbook in check mode, which skips a command otherwise
"""


def _children() -> dict[int, list[int]]:
    """Each process id's children, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _descendants(pid: int) -> set[int]:
    tree, out, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _mentioning(text: str) -> set[int]:
    """Live processes whose command line holds `text` (a scratch directory of the killed run)."""
    return {int(e) for e in os.listdir("/proc") if e.isdigit() and text in _cmdline(int(e)) and _alive(int(e))}


def _scratch(pid: int) -> list[Path]:
    roots = [Path("/dev/shm"), Path(tempfile.gettempdir())]
    return [p for root in roots if root.is_dir() for p in root.glob(f"repro-*-{pid}-*")]


def _prepare(sshd: Server, tmp_path: Path, known: Path) -> tuple[list[str], dict[str, str]]:
    playbooks = tmp_path / "playbooks"
    shutil.copytree(REPO / "playbooks", playbooks)
    (playbooks / "facts.yml").write_text(SLOW_FACTS)
    for path in [playbooks, *playbooks.rglob("*")]:  # a playbooks directory only its owner may write
        path.chmod(path.stat().st_mode & ~0o022)
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"workers": {"hosts": {"h": {
        "ansible_host": "127.0.0.1", "ansible_port": sshd.port, "ansible_user": sshd.user,
        "ansible_ssh_private_key_file": str(sshd.client_key), "ansible_python_interpreter": "/usr/bin/python3",
        "repro_known_hosts": str(known)}}}}}}))
    env = {**os.environ, "REPRO_PLAYBOOKS": str(playbooks), "PYTHONPATH": str(REPO),
           "REPRO_STORE": str(tmp_path / "store")}
    argv = [sys.executable, "-m", "repro", "prepare", "--hosts", str(inv), "--check-only"]
    return argv, env


def _wait_for(what, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.2)
    return bool(what())


def test_kill_9_of_prepare_leaves_no_process_and_the_next_start_no_scratch(server, tmp_path):  # noqa: F811
    pytest.importorskip("ansible_runner")
    argv, env = _prepare(server, tmp_path, server.known)
    log = tmp_path / "prepare.log"
    with log.open("wb") as out:
        repro = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
    try:
        # running: ansible-playbook and an ssh to the host are among repro's descendants
        assert _wait_for(lambda: repro.poll() is not None or any(
            "ssh" in _cmdline(p).split(" ", 1)[0] for p in _descendants(repro.pid)), 90) and repro.poll() is None, \
            f"ansible-playbook never reached the host: {log.read_text(errors='replace')[-3000:]}"
        # a loaded machine can take a while between the first ssh and a stable process tree: look again until
        # ansible-playbook is seen (or 30 s)
        _wait_for(lambda: any("ansible-playbook" in _cmdline(p) for p in _descendants(repro.pid)), 30)
        time.sleep(1.0)
        started = _descendants(repro.pid)
        assert repro.poll() is None and any("ansible-playbook" in _cmdline(p) for p in started), (
            f"repro exit {repro.poll()}, its processes {[_cmdline(p) for p in started]}\n"
            f"{log.read_text(errors='replace')[-3000:]}")
        scratch = _scratch(repro.pid)
        assert any(p.name.startswith("repro-ansible-") for p in scratch), scratch
        repro.send_signal(signal.SIGKILL)
        repro.wait(10)
        # the supervisor ends ansible-playbook's whole group: workers, ssh
        assert _wait_for(lambda: not any(_alive(p) for p in started), 20), \
            [_cmdline(p) for p in started if _alive(p)]
        # the killed run could not remove its scratch; the next start does (and stops what it still serves)
        assert _scratch(repro.pid), "a SIGKILL leaves the scratch to the next start"
        shutil.copy(REPO / "playbooks" / "facts.yml", tmp_path / "playbooks" / "facts.yml")  # a quick run now
        nxt = subprocess.run(argv, env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, check=False)
        assert "Traceback" not in nxt.stderr, nxt.stderr
        assert _scratch(repro.pid) == [], (_scratch(repro.pid), nxt.stderr[-2000:])
        leftover = set().union(*(_mentioning(str(p)) for p in scratch))
        assert _wait_for(lambda: not any(_alive(p) for p in leftover), 10), [_cmdline(p) for p in leftover]
        assert not [p for p in os.listdir("/proc") if p.isdigit() and f"repro-ansible-{repro.pid}-" in
                    _cmdline(int(p)) and _alive(int(p))]
    finally:
        if repro.poll() is None:
            repro.kill()
            repro.wait()


NOEXEC_SHM = 'mount -t tmpfs -o noexec,nosuid,nodev,mode=1777 repro-noexec-shm /dev/shm && exec "$@"'


def test_kill_9_of_prepare_leaves_no_process_with_dev_shm_mounted_noexec(tmp_path):
    """The test above with /dev/shm mounted noexec, as in every Docker container (a private mount namespace):
    the supervised ansible-playbook wrapper cannot run from the private data dir there, and repro must not fall
    back to running the real one unsupervised (seen on a new machine: it outlived the kill)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.fail("needs root and unshare (util-linux) for a private mount namespace", pytrace=False)
    test = f"{Path(__file__).resolve()}::test_kill_9_of_prepare_leaves_no_process_and_the_next_start_no_scratch"
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", NOEXEC_SHM, "sh",
            sys.executable, "-m", "pytest", test, "-q", "-p", "no:cacheprovider", "-n", "0",
            f"--basetemp={tmp_path / 'inner'}"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, (proc.stdout[-4000:], proc.stderr[-2000:])
