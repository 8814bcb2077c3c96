"""Every open axis is a registry: a toy runtime, launcher, scheduler, workload and comparison kind, each one class
plus one registration made here (and removed afterwards), run through the real pipeline and CLI."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from repro.cli import main
from repro.compare.kind import KINDS, Kind, KindRows
from repro.formats import Document
from repro.hosts.inventory import Host, Inventory
from repro.launch.launchers import LAUNCHERS, Launcher
from repro.launch.plan import LaunchPlan
from repro.launch.points import SweepSpec
from repro.launch.runtimes import RUNTIMES, Outcome, Runtime
from repro.launch.schedulers import SCHEDULERS, Scheduler
from repro.launch.workloads import WORKLOADS, find_result
from repro.manifest import load_stack
from repro.pipeline.bench import BenchOptions, bench
from repro.results.store import Store
from repro.workloads.spec import Option, WorkloadSpec

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "stacks" / "cpu-tf215.yaml"

# A program that "measures" a fixed step time and reports it in repro's output contract.
PROGRAM = """
import json, sys
step, items = float(sys.argv[1]), int(sys.argv[2])
print("REPRO_RESULT " + json.dumps({"format": "repro.workload/1", "workload": "toy",
      "settings": {"batch_per_worker": items, "step_seconds": step}, "world": {"size": 1},
      "ranks": [{"rank": 0, "addresses": ["127.0.0.1"], "step_times": [step] * 5, "items_per_step": items}],
      "metrics": {}}))
"""


TOY = WorkloadSpec(
    name="toy", summary="a fixed step time, reported as a workload would", kind="toycount",
    options=(Option("batch_size", int, 4, "items per step", minimum=1, setting="batch_per_worker"),
             Option("step_seconds", float, 0.01, "the step time to report", minimum=0, exclusive_minimum=True)))


class ToyWorkload:
    spec = TOY

    def command(self, point, python, *, data=None) -> list[str]:
        step = point.extra.get("step_seconds", 0.01)
        return [sys.executable, "-c", PROGRAM, str(step), str(point.batch_per_worker)]

    def parse(self, stdout: str):
        return find_result(stdout)


class Solo(Launcher):
    """one process, no MPI: the command as it is"""

    name = "solo"

    def argv(self, placement, command, env_names, *, interface, ssh, forwarded) -> list[str]:
        assert sum(p.ranks for p in placement) == 1, "solo starts one process"
        return list(command)


class SubprocessRuntime(Runtime):
    """this machine's own processes, no checks (three members: every other one has its default)"""

    name = "subprocess"

    @classmethod
    def plan(cls, point, placement, ctx) -> LaunchPlan:
        command = WORKLOADS.get(point.workload).command(point, sys.executable)
        argv = LAUNCHERS.get(ctx.launcher).argv(placement, command, [], interface="lo", ssh=None, forwarded=())
        return LaunchPlan(point, placement, cls.name, ctx.launcher, {}, argv, argv)

    def run(self, plan: LaunchPlan, timeout: float, progress=None) -> Outcome:
        t0 = time.monotonic()
        proc = subprocess.run(plan.exec_argv, capture_output=True, text=True, timeout=timeout, check=False)
        return Outcome(proc.stdout, proc.stderr, proc.returncode, time.monotonic() - t0)


class Inline(Scheduler):
    """runs the plan right here, counting what it ran"""

    name = "inline"

    def __init__(self) -> None:
        self.ran: list[str] = []

    def check(self, runtime, launcher, backends=()) -> None:
        pass

    def execute(self, plan, runtime, timeout, progress=None) -> Outcome:
        self.ran.append(plan.point.workload)
        return runtime.run(plan, timeout, progress)


class ToyCount(Kind):
    """counts records"""

    name = "toycount"

    def summary(self, record) -> str:
        return f"toy: {len(record.ranks)} rank(s)"

    def compare(self, pairs, old, new, options):
        return KindRows(tuple((len(p.old.records), len(p.new.records)) for p in pairs))

    def tables(self, c, part):
        return ()

    def sweep_document(self, records, **options):
        return Document(())


@pytest.fixture()
def toys():
    """Register one of each (one registration per axis), and take them away afterwards."""
    WORKLOADS.add("toy", ToyWorkload())
    LAUNCHERS.add("solo", Solo())
    RUNTIMES.add("subprocess", SubprocessRuntime)
    SCHEDULERS.add("inline", Inline())
    KINDS.add("toycount", ToyCount())
    yield
    for registry, name in ((WORKLOADS, "toy"), (LAUNCHERS, "solo"), (RUNTIMES, "subprocess"),
                           (SCHEDULERS, "inline"), (KINDS, "toycount")):
        registry.remove(name)


def local() -> Inventory:
    return Inventory("local", (Host(name="localhost", address="127.0.0.1", local=True),))


def test_a_toy_runtime_launcher_scheduler_and_workload_run_through_the_real_pipeline(toys, tmp_path):
    store = Store(tmp_path)
    spec = SweepSpec(workload="toy", workers=(1,), batch_sizes=(6,), extra={"step_seconds": "0.5"})
    result = bench(load_stack(STACK), local(), spec, BenchOptions(runtime="subprocess", launcher="solo",
                                                                 scheduler="inline"), store, lambda line: None)
    (rec,) = result.records
    assert rec.status == "ok", rec.failure
    assert rec.runtime == "subprocess" and rec.settings.workload == "toy"
    assert rec.settings.batch_per_worker == 6 and rec.settings.extra == {"step_seconds": 0.5}
    assert rec.settings.precision is None and rec.settings.model is None  # the toy takes neither
    assert rec.ranks[0].step_times == [0.5] * 5 and rec.resolved["step_seconds"] == 0.5
    assert SCHEDULERS.get("inline").ran == ["toy"]
    assert KINDS.get("toycount").summary(rec) == "toy: 1 rank(s)"


def test_the_cli_offers_the_registered_toys_and_validates_their_options(toys, tmp_path, capsys):
    code = main(["bench", "--help"]) if False else None
    from repro.cli import build_parser

    help_text = build_parser()._subparsers._group_actions[0].choices["bench"].format_help()
    for name in ("toy", "solo", "subprocess", "inline", "--step-seconds"):
        assert name in help_text
    code = main(["bench", "--stack", str(STACK), "--hosts", str(ROOT / "inventories" / "localhost"),
                 "--workload", "toy", "--runtime", "subprocess", "--launcher", "solo", "--scheduler", "inline",
                 "--step-seconds", "0.25", "--dry-run", "--store", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0 and "# point: workload=toy" in out and "0.25" in out
    code = main(["bench", "--stack", str(STACK), "--workload", "toy", "--precision", "fp16", "--dry-run",
                 "--store", str(tmp_path)])
    assert code == 2 and "workload toy takes no --precision" in capsys.readouterr().err
    code = main(["bench", "--stack", str(STACK), "--workload", "toy", "--step-seconds", "-1", "--dry-run",
                 "--store", str(tmp_path)])
    assert code == 2 and "--step-seconds: expected a value > 0" in capsys.readouterr().err


def test_the_toy_runtime_needs_at_most_three_members(toys):
    """issue 39: a runtime gives name, plan and run; Runtime has a default for every other member it is asked for."""
    own = sorted(k for k in vars(SubprocessRuntime) if not k.startswith("_"))  # not __doc__, ABC's _abc_impl
    assert own == ["name", "plan", "run"]
    runtime = RUNTIMES.get("subprocess")(load_stack(STACK).stack)
    host = local().hosts[0]
    assert runtime.prepare([host], "gloo").host_software == {} and runtime.cleanup_stale([host]) == []
    assert runtime.node_command(["true"], host) is None and not runtime.needs_image and not runtime.batch_only
