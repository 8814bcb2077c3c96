"""Printing help loads no plug-in and no schema: the registries give their choices and help from what was
registered by name, and a command's registry-built arguments are added only for that command (issue 30 item 6).
What this costs in seconds is bench/startup.py's to measure; these tests check which modules are loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What the help of every command would pull in if a registry or a parser imported its plug-ins eagerly.
HEAVY = ("pydantic", "yaml", "repro.manifest.schema", "repro.results.record", "repro.hosts.inventory",
         "repro.launch.workloads", "repro.workloads.cnn", "repro.launch.placement")
# Plug-in modules registered lazily by 'module:attribute': `repro bench --help` lists them without loading them.
PLUGINS = ("repro.launch.schedulers.slurm", "repro.launch.schedulers.kubernetes", "repro.launch.launchers.mpirun",
           "repro.launch.launchers.srun", "repro.launch.runtimes.docker", "repro.launch.runtimes.charliecloud",
           "repro.launch.tf_cnn_benchmarks", "repro.results.record", "repro.hosts.inventory")

_PROBE = """
import contextlib, io, json, sys
from repro.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "help": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _help_run(*argv: str) -> dict:
    """Exit status, printed help and loaded modules of `repro ARGV` in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=True)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("argv", [("--help",), ("validate", "--help"), ("results", "--help"),
                                  ("compare", "--help")], ids=" ".join)
def test_help_loads_no_schema_no_store_record_and_no_workload(argv):
    run = _help_run(*argv)
    assert run["code"] == 0 and "usage: repro" in run["help"]
    assert [m for m in HEAVY if m in run["modules"]] == []


def test_bench_help_lists_every_plugin_without_loading_the_plugins():
    run = _help_run("bench", "--help")
    assert run["code"] == 0
    help_text = " ".join(run["help"].split())
    for name in ("slurm", "kubernetes", "mpirun", "srun", "docker", "charliecloud", "tf_cnn_benchmarks", "probe"):
        assert name in help_text
    assert "--fail-at-step" in help_text  # a workload's own option, from its spec
    assert [m for m in PLUGINS if m in run["modules"]] == []
