"""The input boundary (repro/inputs.py): one strict pattern per kind, bounded file reads, CLI values.

Each hostile class of issue 13 is refused where it enters, with a message saying what was expected:
host names that are paths, interfaces, docker hosts and launch keys that would become ssh options,
package names with newlines, `$()` or a leading `--`, base images with a newline, non-ASCII digits.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro import inputs
from repro.cli import build_parser, main
from repro.errors import InventoryError, ManifestError
from repro.hosts.inventory import inventory_from_listing
from repro.manifest import load_stack
from repro.manifest.versions import at_least, in_any_line, lines_overlap, major_minor, parse_version
from tests.unit.fuzz_cases import hostile_stack

ROOT = Path(__file__).resolve().parents[2]

ACCEPTED = [
    (inputs.VERSION, "2.15.1"), (inputs.VERSION, "10.0"), (inputs.OFED_VERSION, "4.7-3.2.9.0"),
    (inputs.NCCL_VERSION, "2.5.6-1"), (inputs.PIP_REQUIREMENT, "tf-keras>=2.15,<2.16"),
    (inputs.PIP_REQUIREMENT, "horovod[tensorflow]==0.28.1"), (inputs.PIP_REQUIREMENT, "pkg @ https://h/p-1.whl"),
    (inputs.APT_PACKAGE, "g++"), (inputs.APT_PACKAGE, "libnccl2=2.5.6-1+cuda10.0"),
    (inputs.IMAGE_REFERENCE, "nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04"),
    (inputs.IMAGE_REFERENCE, "localhost:5000/team/img:v1@sha256:" + "0" * 64), (inputs.INVENTORY_NAME, "node_1"),
    (inputs.INVENTORY_NAME, "fe80::1"), (inputs.HOST_NAME, "10.123.4.1"), (inputs.INTERFACE, "enp1s0f0"),
    (inputs.DOCKER_ENDPOINT, "unix:///tmp/rc/h1/docker.sock"), (inputs.DOCKER_ENDPOINT, "ssh://root@h1:2222"),
    (inputs.SSH_PATH, "~/.ssh/id_ed25519"), (inputs.URL, "https://user:token@pypi.example.com/simple"),
]
REFUSED = [
    (inputs.VERSION, "\u0662.\u0661\u0665.\u0661"), (inputs.VERSION, "\uff11\uff10.\uff10"), (inputs.VERSION, "2.15\n"),
    (inputs.VERSION, "1" * 5000), (inputs.PIP_REQUIREMENT, "six==1.0\nRUN id"), (inputs.PIP_REQUIREMENT, "$(id)"),
    (inputs.PIP_REQUIREMENT, "`id`"), (inputs.PIP_REQUIREMENT, "--index-url=http://evil"),
    (inputs.PIP_REQUIREMENT, "six; python_version<'3'"), (inputs.APT_PACKAGE, "curl\nRUN id"),
    (inputs.APT_PACKAGE, "-o=APT::x"), (inputs.IMAGE_REFERENCE, "debian:12\nRUN id"),
    (inputs.IMAGE_REFERENCE, "Debian:12"), (inputs.IMAGE_REFERENCE, "debian:12 AS x"),
    (inputs.INVENTORY_NAME, "../../../../x"), (inputs.INVENTORY_NAME, "-oProxyCommand=x"),
    (inputs.INVENTORY_NAME, "a..b"), (inputs.INTERFACE, "eth0;id"), (inputs.INTERFACE, "a" * 16),
    (inputs.DOCKER_ENDPOINT, "-H tcp://x"), (inputs.DOCKER_ENDPOINT, "unix://relative.sock"),
    (inputs.SSH_PATH, "/root/.ssh/id key -oProxyCommand=nc"), (inputs.SSH_PATH, "'~/.ssh/id_ed25519'"),
    (inputs.TEXT, "a\x00b"), (inputs.TEXT, "x\ud800"), (inputs.URL, "http://x/$(id)"), (inputs.PATH, "-rf"),
]


@pytest.mark.parametrize("kind, value", ACCEPTED)
def test_good_values_pass(kind, value):
    assert kind.problem(value) is None


@pytest.mark.parametrize("kind, value", REFUSED)
def test_hostile_values_are_refused_saying_what_was_expected(kind, value):
    why = kind.problem(value)
    assert why and ("expected" in why or "longer" in why or "surrogate" in why or "'-'" in why)
    assert "\n" not in why  # shown escaped: a message never carries the injected line


def test_non_text_values_are_refused_by_type():
    assert "found int" in inputs.VERSION.problem(10**5000)
    assert "found list" in inputs.PATH.problem(["a"])


def test_numbers_accept_ascii_digits_only_and_stay_bounded():
    assert inputs.integer("42", minimum=1, maximum=100) == 42
    for bad in ("\u0664\u0662", "1" * 5000, "1_0", True, 1.5):
        with pytest.raises(inputs.InputValueError):
            inputs.integer(bad, minimum=1, maximum=100)
    with pytest.raises(inputs.InputValueError):
        inputs.number(float("nan"), minimum=0, maximum=1)
    assert inputs.boolean("no") is False and inputs.boolean("True") is True


def test_reading_refuses_fifos_devices_directories_and_symlink_loops(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    big = tmp_path / "big"
    big.write_bytes(b"x" * 2000)
    start = time.monotonic()
    for path, words in [(fifo, "named pipe"), ("/dev/zero", "character device"), (tmp_path, "directory"),
                        (loop, "symbolic link loop"), (tmp_path / "sock", "socket"), (big, "too large"),
                        (tmp_path / "gone", "no such file"), ("a\x00b", "NUL"), ("\ud800.yaml", "surrogate")]:
        with pytest.raises(inputs.FileProblem, match=words):
            inputs.read_file(path, max_bytes=1000)
    sock.close()
    assert time.monotonic() - start < 30  # a FIFO read would block for ever, not for a while
    assert inputs.read_file(big, max_bytes=5000) == b"x" * 2000


@pytest.mark.parametrize("key, value, field", [
    ("packages.apt", '"curl\\nRUN rm -rf /"', "packages.apt[0]"),
    ("packages.pip", "'$(touch /tmp/x)'", "packages.pip[0]"),
    ("packages.pip", "'--extra-index-url=http://evil'", "packages.pip[0]"),
    ("base_image", '"debian:12\\nRUN id"', "base_image"),
    ("tensorflow.package", "'tensorflow-cpu`id`'", "tensorflow.package"),
    ("python", "'\u0663.\u0661\u0661'", "python"),
    ("env", '"INFO\\nX"', "env.NCCL_DEBUG"),
    ("benchmark.model", "'resnet50\\n# point'", "benchmark.model"),
])
def test_manifest_injections_are_refused_at_their_line(tmp_path, key, value, field):
    text = hostile_stack(key, value)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ManifestError) as info:
        load_stack(path)
    (d,) = [d for d in info.value.diagnostics if d.path == field]
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith(key.split(".")[0] + ":"))
    assert d.location.line == line


@pytest.mark.parametrize("var, value", [
    ("repro_interface", "eth0 -x"), ("repro_docker_host", "-H tcp://evil:2375"),
    ("repro_launch_key", "/root/.ssh/id key -oProxyCommand=nc"), ("repro_known_hosts", 123),
    ("repro_launch_known_hosts", "~/kh -oUserKnownHostsFile=/dev/null"), ("repro_python", "python3;id"),
    ("repro_dataset_dir", "/data:/etc"), ("ansible_user", "-oProxyCommand=x"), ("ansible_host", "$(id)"),
])
def test_inventory_injections_are_refused_at_their_line(tmp_path, var, value):
    import json

    path = tmp_path / "hosts.yml"
    path.write_text(f"workers:\n  hosts:\n    h1:\n      {var}: {json.dumps(value)}\n")
    listing = {"_meta": {"hostvars": {"h1": {var: value}}}, "workers": {"hosts": ["h1"]}}
    with pytest.raises(InventoryError) as info:
        inventory_from_listing(listing, path)
    (d,) = info.value.diagnostics
    assert d.path == f"h1.{var}" and (d.location.line, d.location.column) == (4, len(var) + 9)


def test_a_host_named_like_a_path_is_refused(tmp_path):
    path = tmp_path / "hosts.ini"
    path.write_text("[workers]\nh1\n../../../../x ansible_connection=local\n")
    listing = {"_meta": {"hostvars": {}}, "workers": {"hosts": ["h1", "../../../../x"]}}
    with pytest.raises(InventoryError) as info:
        inventory_from_listing(listing, path)
    (d,) = info.value.diagnostics
    assert "inventory host name" in d.message and (d.location.line, d.location.column) == (3, 1)


@pytest.mark.parametrize(("argv", "flag"), [
    (["bench", "--stack", "s.yaml", "--workers", "\uff13"], "--workers"),
    (["bench", "--stack", "s.yaml", "--timeout", "nan"], "--timeout"),
    (["bench", "--stack", "s.yaml", "--model", "resnet50;id"], "--model"),
    (["bench", "--stack", "s.yaml", "--workers", "1", "--workers", "0"], "--workers"),
])
def test_bench_values_are_refused_before_anything_is_read(argv, flag, capsys):
    # list flags accumulate, so some are checked after parsing: still exit 2, naming the flag, before the
    # stack file (which does not exist here) is read
    try:
        code = main(argv)
    except SystemExit as exc:  # a value argparse's own type check refuses
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert flag in err and "s.yaml" not in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["up", "s.yaml", "--docker-host", "-H x"],
    ["up", "s.yaml", "--build-arg", "X=a\nb"],
    ["render", "s.yaml", "--pip-index", "http://x/`id`"],
    ["base-image", "debian:12\nRUN id"],
    ["prepare", "--hosts", "inv", "--limit", "h1 -e x=1"],
    ["prepare", "--hosts", "inv", "-e", "x=!!python/object:os.system"],
    ["validate", "--", "-rf"],
])
def test_command_line_values_are_checked_by_argparse_types(argv, capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2
    assert "error: argument" in capsys.readouterr().err


def test_version_arithmetic():
    assert parse_version("4.7-3.2.9.0") == (4, 7, 3, 2, 9, 0) and major_minor("10.0.130") == "10.0"
    assert in_any_line("3.5", ["2.7", "3.3-3.6"]) and not in_any_line("3.7", ["2.7", "3.3-3.6"])
    assert lines_overlap("7.1", "7.1.3") and lines_overlap("7.1.3", "7.1") and not lines_overlap("7.1", "7.10")
    assert at_least("0.28", "0.28.0") and not at_least("0.27.0", "0.28.0") and at_least("2.15.1", "2.12")


def test_one_list_of_workloads_feeds_the_manifest_the_launcher_and_the_editor_schema():
    from repro.launch.workloads import WORKLOADS
    from repro.manifest.editor_schema import editor_schema
    from repro.manifest.schema import Benchmark
    from repro.workloads import catalog

    names = list(catalog.BUILTIN)
    assert list(WORKLOADS.names()) == names
    benchmark = editor_schema()["definitions"]["Benchmark"]["properties"]
    assert benchmark["workload"]["enum"] == names
    assert set(benchmark["model"]["enum"]) == {m for s in catalog.builtin_specs() for m in s.models}
    assert all(catalog.spec_of(n).name == n for n in names)
    assert Benchmark(workload="torch_tta", model="resnet20").model == "resnet20"


def test_importing_the_manifest_schema_imports_no_workload_program():
    code = ("import sys, repro.manifest.schema; "
            "print(sorted(m for m in sys.modules if m.startswith('repro.workloads.')))")
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": root}).stdout
    assert out.strip() == "['repro.workloads.catalog']"


@pytest.mark.parametrize("argv", [
    ["results", "--store", "{long}"],
    ["bench", "--stack", "{long}.yaml", "--dry-run"],
    ["show", "{long}.yaml"],
    ["import", "{long}.log", "--stack", "m", "--store", "{tmp}/store"],
    ["prepare", "--hosts", "{long}", "--dry-run"],
    ["show", "{tmp}/extends.yaml"],
])
def test_a_path_component_over_255_bytes_is_an_input_error_not_an_internal_one(tmp_path, capsys, argv):
    long = str(tmp_path / ("a" * 300))
    (tmp_path / "extends.yaml").write_text(f"extends: {long}.yaml\nname: x\n")
    code = main([a.format(long=long, tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and "internal error" not in err and err.strip(), err
