"""Every command repro runs on a host is bounded in bytes as well as in time (issue 38): a host that prints without
end is stopped once it has printed more than repro reads, and the error names the host."""

from __future__ import annotations

import pytest

from repro.errors import HostError, LaunchError
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote
from repro.launch.runtimes.host import probe_host
from repro.manifest.probe_output import MAX_PROBE_BYTES

HERE = Host(name="here", address="127.0.0.1", local=True)


def test_a_command_that_prints_without_end_is_stopped_and_the_host_named():
    with Remote(HERE) as remote, pytest.raises(HostError) as info:
        remote.run(["yes"], timeout=60, max_bytes=4096)
    assert info.value.message == "here: `yes` printed more than 4096 bytes"
    assert info.value.host == "here"


def test_a_flood_on_stderr_is_stopped_too():
    with Remote(HERE) as remote, pytest.raises(HostError) as info:
        remote.run(["sh", "-c", "yes >&2"], timeout=60, max_bytes=4096)
    assert info.value.message.endswith("printed more than 4096 bytes")


def test_output_within_the_bound_and_streamed_input_come_through_whole():
    with Remote(HERE) as remote:
        res = remote.run(["sh", "-c", "cat; echo err >&2; exit 3"], input=iter([b"a" * 3000, b"b" * 1096]),
                         timeout=60, max_bytes=4096)
        missing = remote.run(["repro-no-such-program"], timeout=60)
    assert (res.returncode, res.stdout, res.stderr) == (3, "a" * 3000 + "b" * 1096, "err\n")
    assert (missing.returncode, missing.stderr) == (127, "repro-no-such-program: command not found")


def test_a_started_command_that_prints_without_end_is_stopped_and_says_so():
    with Remote(HERE) as remote:
        proc = remote.start(["yes"], max_bytes=4096)
        code = proc.wait(60)
    out, err = proc.output()
    assert code is not None and code != 0
    assert len(out) <= 4096
    assert proc.overflow == "here: `yes` printed more than 4096 bytes"
    assert "here: `yes` printed more than 4096 bytes; stopped" in err


def test_the_host_software_probe_of_a_python_that_prints_without_end_names_the_host(tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nexec yes\n")
    python.chmod(0o755)
    host = Host(name="h1", address="127.0.0.1", local=True, python=str(python))
    with pytest.raises(LaunchError) as info:
        probe_host(host, frameworks=())
    assert info.value.message == (f"h1: {python} (repro_python) cannot be checked: its software probe printed more "
                                  f"than {MAX_PROBE_BYTES} bytes (stopped)")
