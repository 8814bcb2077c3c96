"""`repro capture` and the host runtime's software check with a hostile interpreter (issue 38 item 4).

Each fake `python` is a real program (a shell script) that prints what a broken or hostile interpreter could:
`null`, bytes that are not text, JSON nested deep, output without end, a lone surrogate, a probed string with a
newline and YAML after it. Each gives a one-line error naming the interpreter (and the field), or a manifest in
which nothing the probe printed became YAML: never another exception, never a hang.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from repro.children import run_bounded
from repro.errors import InputError, LaunchError
from repro.hosts.inventory import Host
from repro.launch.runtimes.host import probe_host
from repro.manifest import load_stack
from repro.manifest.capture import manifest_from
from repro.manifest.software import Software, from_host_probe
from repro.pipeline.capture import capture, probe_python
from tests.unit.fuzz_cases import time_limit

ROOT = Path(__file__).resolve().parents[2]
GPU_PROBE = json.loads((ROOT / "tests" / "data" / "probes" / "gpu-torch211-cu130.json").read_text())
STACK_KEYS = {"description", "os", "driver", "cuda", "mpi", "python", "pytorch", "benchmark"}


def fake_python(tmp_path: Path, body: str, name: str = "python") -> str:
    """An executable that ignores its arguments (-c PROBE) and runs `body` (sh)."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def printing(tmp_path: Path, data: object) -> str:
    """A fake python printing `data` as the probe's JSON line."""
    line = json.dumps(data)
    return fake_python(tmp_path, f"cat <<'EOF'\n{line}\nEOF")


HOSTILE = {
    "null": ("echo null", "printed JSON null"),
    "a list": ("echo '[1, 2]'", "printed JSON list"),
    "binary": (r"printf '\377\376\000\001junk\n'", "not UTF-8 text"),
    "nothing": ("exit 3", "printed no probe result"),
    "not JSON": ("echo 'Python 3.12.3'", "is not JSON"),
    "deep list": ("python3 -c 'print(\"[\" * 100000 + \"]\" * 100000)'", "nested more than 8 levels"),
    "deep object": ("python3 -c 'print(\"{\\\"a\\\": \" * 3000 + \"1\" + \"}\" * 3000)'", "nested more than 8"),
    "endless": ("yes", "printed more than"),
    "endless line": ("yes | tr -d '\\n'", "printed more than"),
    "escaped surrogate": (r"""echo '{"python": "3.11\ud800"}'""", "lone surrogate"),
    "raw surrogate bytes": (r"""printf '{"python": "3.11.\355\240\200"}\n'""", "not UTF-8 text"),
    "huge integer": ("python3 -c 'print(\"{\\\"python\\\": \" + \"9\" * 5000 + \"}\")'", "is not JSON"),
    "wrong type": ("""echo '{"python": 3.11}'""", "field python is wrong"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_interpreter_is_a_one_line_error_naming_it(tmp_path, case):
    body, expected = HOSTILE[case]
    python = fake_python(tmp_path, body)
    with time_limit(), pytest.raises(InputError) as info:
        probe_python(python)
    message = info.value.message
    assert message.startswith(f"--python {python}: the software probe"), message
    assert expected in message, message
    assert len(message.splitlines()[0]) < 400


def test_an_interpreter_that_never_ends_is_stopped_at_the_timeout(tmp_path):
    python = fake_python(tmp_path, "sleep 600")
    with time_limit(), pytest.raises(InputError) as info:
        probe_python(python, timeout=1)
    assert "did not finish in 1 s" in info.value.message


def test_the_bounded_run_keeps_at_most_the_bytes_asked_for_and_ends_the_program():
    ran = run_bounded(["yes"], timeout=20, max_bytes=4096)
    assert ran.stopped == "printed more than 4096 bytes" and ran.returncode is None and len(ran.stdout) == 4096
    ran = run_bounded(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=20, max_bytes=4096)
    assert (ran.returncode, ran.stdout, ran.stderr, ran.stopped) == (3, b"out\n", b"err\n", None)


@pytest.mark.parametrize("field,value", [
    ("mpi", "Open MPI x\ninjected: true\nbenchmark: {workload: evil}"), ("executable", "/usr/bin/python3\ninjected: 1"),
    ("python", "3.12.3\ninjected: true"), ("mpi", "x\u2028injected: true"), ("os", "ubuntu 24.04\r\ninjected: 1"),
    ("driver", "580.95.05\x1b[2J"),
])
def test_a_probed_value_with_a_line_break_is_refused_naming_its_field(tmp_path, field, value):
    python = printing(tmp_path, {**GPU_PROBE, field: value})
    with pytest.raises(InputError) as info:
        probe_python(python)
    assert f"field {field} holds a line break or control character" in info.value.message
    assert "\n" not in info.value.message.split("(exit")[0]


def test_a_key_with_a_line_break_is_refused(tmp_path):
    python = printing(tmp_path, {**GPU_PROBE, "horovod": "0.28.1", "horovod_built": {"mpi\ninjected: 1": True}})
    with pytest.raises(InputError) as info:
        probe_python(python)
    assert "horovod_built." in info.value.message and "line break" in info.value.message


def test_an_error_message_over_lines_is_kept_on_one_and_the_written_manifest_has_no_injected_key(tmp_path):
    python = printing(tmp_path, {**GPU_PROBE, "tensorflow_error": "No module\ninjected: true\nos: evil"})
    sw = probe_python(python)
    assert sw.framework("tensorflow").error == "No module injected: true os: evil"
    out = tmp_path / "captured.yaml"
    result = capture(software=sw, name="captured", output=out)
    written = yaml.safe_load(out.read_text())
    assert set(written) == STACK_KEYS and written["os"] == {"distro": "ubuntu", "version": "24.04"}
    assert load_stack(out).stack.name == result.name


def test_a_value_that_reached_software_unchecked_cannot_inject_yaml_through_the_comments(tmp_path):
    """Defence in depth: Software made without the probe's checks (an image probe, a test): the notes written as
    comments escape their line breaks, so the file loads with exactly the stack's keys."""
    sw = from_host_probe({**GPU_PROBE, "mpi": "Open MPI x\ninjected: true\nbenchmark: {workload: evil}"})
    captured = manifest_from(sw)
    assert any("\n" in n for n in captured.notes)  # the note itself still holds the line break
    text = captured.to_yaml("header\nheader_injected: 1")
    assert set(yaml.safe_load(text)) == STACK_KEYS - {"description"}
    assert "#   mpi: Open MPI x\\ninjected: true\\nbenchmark: {workload: evil} found" in text


@pytest.mark.parametrize("changes,what", [
    ({"python": "3.12.3\ninjected: 1"}, "python"),
    ({"torch": {"version": "2.11.0\ninjected: 1"}}, "torch.__version__"),
    ({"driver": "580 x"}, "driver"),
    ({"torch": {"version": "2.11.0+cu130", "cuda": "13.0\nx: 1"}}, "torch.version.cuda"),
])
def test_a_probed_version_that_is_no_version_is_refused_before_any_yaml(changes, what):
    """Software made without the probe's own checks (an image probe, a test): capture checks the versions itself."""
    sw = from_host_probe({**GPU_PROBE, **changes})
    with pytest.raises(InputError) as info:
        manifest_from(sw)
    assert info.value.message.startswith(what) and "is not a version" in info.value.message


def test_an_os_flag_with_a_line_break_is_refused():
    with pytest.raises(InputError) as info:
        manifest_from(from_host_probe(GPU_PROBE), os="ubuntu:24.04\ninjected: true")
    assert info.value.message.startswith("--os: ")


def test_a_clean_probe_still_captures(tmp_path):
    sw = probe_python(printing(tmp_path, GPU_PROBE))
    assert isinstance(sw, Software) and sw.framework("pytorch").version == "2.11.0+cu130"
    assert set(yaml.safe_load(capture(software=sw, name="gpu").text)) == STACK_KEYS


# ---------------------------------------------------------------- the host runtime's check (bench --runtime host)

# over SSH (and locally) a host's output arrives as text, bytes that are not UTF-8 replaced: no longer JSON
@pytest.mark.parametrize("case,expected", [("null", "printed JSON null"), ("binary", "is not JSON"),
                                           ("deep list", "nested more than 8"), ("escaped surrogate", "surrogate"),
                                           ("nothing", "printed no probe result")])
def test_the_host_software_check_names_the_host_for_a_hostile_interpreter(tmp_path, case, expected):
    body = HOSTILE[case][0]
    host = Host("n1", "localhost", local=True, python=fake_python(tmp_path, body))
    with time_limit(), pytest.raises(LaunchError) as info:
        probe_host(host)
    message = info.value.message
    assert message.startswith(f"n1: {host.python} (repro_python) cannot be checked"), message
    assert expected in message, message


def test_the_host_software_check_reads_a_good_probe(tmp_path):
    host = Host("n1", "localhost", local=True, python=printing(tmp_path, GPU_PROBE))
    assert probe_host(host).driver == "580.95.05"
