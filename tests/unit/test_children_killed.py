"""The docker and Slurm client commands repro starts end when repro is killed (issue 38 item 2).

A parent python runs a command the way repro runs docker and the Slurm clients (Remote.run on the local host,
SlurmClient.run, the charliecloud conversion), each a stand-in on PATH that writes the pid of a `sleep` it
holds (itself, or a program it started, as docker starts ssh for an ssh:// engine) and waits; the parent is
killed with SIGKILL; the sleep must be gone within seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What each parent runs, by way of repro's own code (PIDFILE and the fake programs come from the test).
PARENTS = {
    "docker": """
        from repro.hosts.inventory import Host
        from repro.hosts.remote import Remote, docker_argv
        host = Host(name="here", address="127.0.0.1", local=True)
        with Remote(host) as remote:
            remote.run(docker_argv(host, "ps"), timeout=600)
    """,
    "sbatch": """
        from repro.launch.schedulers.slurm_client import SlurmClient
        from repro.launch.schedulers.slurm_site import SlurmSite
        with SlurmClient(SlurmSite(None, conf="/etc/slurm/slurm.conf")) as client:
            client.run(["sbatch", "--parsable", "job.sh"], timeout=600, env={"DB_PASSWORD": "x"})
    """,
    "srun": """
        from repro.launch.schedulers.slurm_client import SlurmClient
        from repro.launch.schedulers.slurm_site import SlurmSite
        with SlurmClient(SlurmSite(None)) as client:
            client.run(["srun", "-N1", "true"], timeout=600)
    """,
    "squeue": """
        from repro.launch.schedulers.slurm_client import SlurmClient
        from repro.launch.schedulers.slurm_site import SlurmSite
        with SlurmClient(SlurmSite(None)) as client:
            client.run(["squeue", "--noheader"], timeout=600)
    """,
    "ch-convert": """
        from repro.launch.runtimes.charliecloud import run_streaming
        import os
        run_streaming(["ch-convert", "-i", "docker", "img", "/tmp/x"], dict(os.environ), 600, print)
    """,
    "kubectl": """
        from repro.launch.schedulers.kube_run import _kubectl
        _kubectl(["kubectl", "get", "pods"], timeout=600)
    """,
}
# The stand-ins: `own` holds the sleep itself (exec), `starts` starts it as a program of its own and waits.
OWN = '#!/bin/sh\necho $$ > "$PIDFILE"\nexec sleep 300\n'
STARTS = '#!/bin/sh\nsleep 300 &\necho $! > "$PIDFILE"\nwait\n'


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")  # ended; its zombie waits for whoever reaps orphans here


@pytest.mark.parametrize(("parent", "fake", "script"), [
    ("docker", "docker", STARTS), ("sbatch", "sbatch", OWN), ("srun", "srun", STARTS), ("squeue", "squeue", OWN),
    ("ch-convert", "ch-convert", STARTS), ("kubectl", "kubectl", OWN),
])
def test_a_client_command_ends_when_repro_is_killed(tmp_path, parent, fake, script):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / fake).write_text(script)
    (bin_dir / fake).chmod(0o755)
    pidfile = tmp_path / "pid"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "PIDFILE": str(pidfile),
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(PARENTS[parent])], env=env, cwd=tmp_path,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.is_file() and pidfile.read_text().strip()):
            assert proc.poll() is None, f"the parent ended first (exit {proc.returncode})"
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        assert not _gone(pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 20
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(pid), f"{fake}'s sleep (pid {pid}) outlived the killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
        if pidfile.is_file() and pidfile.read_text().strip() and not _gone(int(pidfile.read_text())):
            with contextlib.suppress(ProcessLookupError):  # only the sleep this test's stand-in started
                os.kill(int(pidfile.read_text()), signal.SIGKILL)


# A program that leaves a process outside its group, as ssh's ControlPersist master does (it daemonizes), with
# the master's "socket" in the control dir; the stand-in ssh ends the process named there on `-O exit`.
DETACHING = '#!/bin/sh\nsetsid sleep 300 &\necho $! > "$CONTROL/master-1"\necho $! > "$PIDFILE"\nwait\n'
FAKE_SSH = '#!/bin/sh\nfor a; do case "$a" in ControlPath=*) kill "$(cat "${a#ControlPath=}")";; esac; done\n'


def test_a_detached_ssh_master_in_the_control_dir_ends_when_repro_is_killed(tmp_path):
    bin_dir, control = tmp_path / "bin", tmp_path / "cp"
    bin_dir.mkdir()
    control.mkdir()
    for name, text in (("detaching", DETACHING), ("ssh", FAKE_SSH)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    pidfile = tmp_path / "pid"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PIDFILE": str(pidfile),
           "CONTROL": str(control), "PYTHONPATH": str(ROOT)}
    code = ("import subprocess, time\nfrom repro import children\n"
            f"subprocess.Popen(children.supervised(['detaching'], ssh_control_dir={str(control)!r}))\n"
            "time.sleep(300)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        master = int(pidfile.read_text())
        assert not _gone(master)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 20
        while not _gone(master) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(master), "the detached master outlived repro"
        assert not control.exists()  # the supervisor removed the killed run's control dir
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError, FileNotFoundError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
