"""Where the supervised `ansible-playbook` wrapper goes (repro.hosts.ansible._supervised_bin).

Inside a Docker container /dev/shm is mounted noexec: a wrapper written into the private data dir there cannot
run, pexpect's PATH lookup skips it, and the real ansible-playbook ran unsupervised (a `kill -9` of prepare left
it running; seen on a new machine). The wrapper then goes to a scratch dir in the temp directory; where neither
can run programs, prepare is refused rather than run unsupervised.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from repro.errors import BackendUnavailable
from repro.hosts import ansible

needs_ansible = pytest.mark.skipif(shutil.which("ansible-playbook") is None, reason="ansible-core not installed")


def _path() -> str:
    return os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", "")))


@needs_ansible
def test_the_wrapper_goes_into_the_private_data_dir_where_it_can_run(tmp_path):
    bin_dir = ansible._supervised_bin(tmp_path, _path(), str(tmp_path / "cp"))
    script = bin_dir / "ansible-playbook"
    assert bin_dir.parent == tmp_path and os.access(script, os.X_OK)
    text = script.read_text()
    assert "children.py" in text and "--ssh-control-dir" in text and text.rstrip().endswith('"$@"')


@needs_ansible
def test_a_noexec_private_dir_puts_the_wrapper_in_the_temp_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(ansible, "_runnable", lambda path: not str(path).startswith(str(tmp_path)))
    bin_dir = ansible._supervised_bin(tmp_path, _path(), str(tmp_path / "cp"))
    try:
        assert bin_dir.parent == Path(tempfile.gettempdir())
        assert bin_dir.name.startswith(f"repro-ansible-bin-{os.getpid()}-")  # the next start removes it if killed
    finally:
        shutil.rmtree(bin_dir, ignore_errors=True)


@needs_ansible
def test_where_no_directory_can_run_programs_prepare_is_refused_not_run_unsupervised(tmp_path, monkeypatch):
    before = set(Path(tempfile.gettempdir()).glob(f"repro-ansible-bin-{os.getpid()}-*"))
    monkeypatch.setattr(ansible, "_runnable", lambda path: False)
    with pytest.raises(BackendUnavailable, match=r"under its supervisor .*mounted noexec"):
        ansible._supervised_bin(tmp_path, _path(), str(tmp_path / "cp"))
    assert set(Path(tempfile.gettempdir()).glob(f"repro-ansible-bin-{os.getpid()}-*")) == before  # nothing left
