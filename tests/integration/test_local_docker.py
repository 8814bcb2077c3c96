"""tests/cluster/local-docker.sh, which starts the engine that the suite builds images on, against a real dockerd:
pid files left by an engine that was killed must not stop the next start, whatever process got their pids since.
A CI job on a reused machine failed on exactly that: dockerd took a kernel worker's pid in a stale
containerd.pid for its containerd and gave up after 15 s."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.fixtures import skip_or_fail

LOCAL_DOCKER = Path(__file__).resolve().parents[1] / "cluster" / "local-docker.sh"


@pytest.fixture
def engine_root() -> Iterator[Path]:
    """A private engine's directory (short: containerd's socket lives below it), stopped and removed afterwards."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        skip_or_fail("starting a private dockerd needs root and dockerd (apt-get install docker.io)")
    root = Path(tempfile.mkdtemp(prefix="repro-ld.", dir="/tmp"))
    try:
        yield root
    finally:
        subprocess.run(["bash", str(LOCAL_DOCKER), "stop"], env=engine_env(root), capture_output=True,
                       timeout=90, check=False)
        shutil.rmtree(root, ignore_errors=True)


def engine_env(root: Path) -> dict[str, str]:
    return {**os.environ, "REPRO_DOCKER_ROOT": str(root), "DOCKER_HOST": f"unix://{root}/docker.sock",
            "REPRO_DOCKERD_TIMEOUT": "45"}


def test_stale_pid_files_naming_other_live_processes_do_not_stop_the_engine_from_starting(engine_root):
    # A live process that is neither dockerd nor containerd holds the pids both files name.
    impostor = subprocess.Popen(["sleep", "600"])
    try:
        (engine_root / "exec" / "containerd").mkdir(parents=True)
        for name in ("dockerd.pid", "exec/containerd/containerd.pid"):
            (engine_root / name).write_text(str(impostor.pid))
        env = engine_env(engine_root)
        proc = subprocess.run(["bash", str(LOCAL_DOCKER), "ensure"], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        for name, comm in (("dockerd.pid", "dockerd"), ("exec/containerd/containerd.pid", "containerd")):
            assert f"removing {engine_root / name}: pid {impostor.pid} is not a running {comm}" in proc.stderr
        info = subprocess.run(["docker", "info", "--format", "{{.DockerRootDir}}"], env=env, capture_output=True,
                              text=True, timeout=30, check=False)
        assert info.returncode == 0, info.stderr
        assert info.stdout.strip() == str(engine_root / "data")
        # The engine's own files now name its own processes; the impostor was left alone.
        pid = int((engine_root / "dockerd.pid").read_text())
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "dockerd"
        containerd = int((engine_root / "exec" / "containerd" / "containerd.pid").read_text())
        assert Path(f"/proc/{containerd}/comm").read_text().strip() == "containerd"
        assert impostor.poll() is None
    finally:
        impostor.kill()
        impostor.wait()
