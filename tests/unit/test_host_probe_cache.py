"""The host probe's cache (repro.launch.runtimes.host.probe_script(cached=True)): a sweep's start-up does not import
the frameworks again while none of the files they came from changed, and never says what a changed host no longer
holds. The probe runs in a real Python with a stand-in Horovod package first on its path (its import is counted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repro.launch.runtimes.host import probe_script


@pytest.fixture()
def host(tmp_path: Path) -> dict[str, str]:
    """The environment of a host whose Horovod is a stand-in that counts its imports in `imports`."""
    package = tmp_path / "site" / "horovod"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        'import os\nopen(os.environ["IMPORTS"], "a").write("x")\n__version__ = "0.28.1"\n')
    # No bytecode files: Python trusts a .pyc whose source has the same size and mtime in whole seconds, so the
    # stand-in rewritten within the same second ("0.28.1" -> "0.28.2") would be loaded from its stale .pyc and the
    # test would see Python's cache, not repro's (which keys on mtime in nanoseconds, size and inode).
    return {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "IMPORTS": str(tmp_path / "imports"), "PYTHONDONTWRITEBYTECODE": "1"}


def probe(env: dict[str, str], *, cached: bool = True) -> dict:
    done = subprocess.run([sys.executable, "-c", probe_script((), cached=cached)], env=env, capture_output=True,
                          text=True, check=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1])


def imports(env: dict[str, str]) -> int:
    path = Path(env["IMPORTS"])
    return len(path.read_text()) if path.exists() else 0


def test_a_second_probe_of_an_unchanged_host_answers_from_its_cache_with_the_same_findings(host):
    first = probe(host)
    assert first["horovod"] == "0.28.1" and imports(host) == 1
    assert probe(host) == first and imports(host) == 1  # nothing imported: the cache answered
    assert probe(host, cached=False) == first and imports(host) == 2  # `repro prepare` and capture always import


def test_a_changed_module_is_imported_again_never_answered_from_the_cache(host):
    probe(host)
    init = Path(host["PYTHONPATH"]) / "horovod" / "__init__.py"
    init.write_text(init.read_text().replace("0.28.1", "0.28.2"))  # upgraded in place
    assert probe(host)["horovod"] == "0.28.2" and imports(host) == 2
    (Path(host["PYTHONPATH"]) / "horovod" / "mpi_lib.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\0")
    assert probe(host)["horovod"] == "0.28.2" and imports(host) == 3  # a library built beside it: read again


def test_a_package_installed_on_the_path_voids_the_cache(host):
    probe(host)
    (Path(host["PYTHONPATH"]) / "newer-0.1.dist-info").mkdir()  # pip changes a sys.path directory's listing
    probe(host)
    assert imports(host) == 2
