"""A toy batch scheduler, one class plus one registration made here: its site option gets a CLI group and reaches
its configure(), and the job it reports is stored as the record's generic batch job and rendered (issue 30)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from repro.cli import build_parser, main
from repro.launch.runtimes import Outcome, RuntimeReport
from repro.launch.schedulers import SCHEDULERS, Scheduler, SiteOption
from repro.results.record import SCHEMA_VERSION, BatchJob
from repro.results.store import Store
from tests.unit.test_extensions import STACK, local, toys  # noqa: F401 - toys is a fixture used below

ROOT = Path(__file__).resolve().parents[2]


class Queue(Scheduler):
    """runs each point at once, as job N of a named queue"""

    name = "queue"
    batch = True
    options = (SiteOption("repro_queue_name", "--queue-name", "the queue the jobs go to (repro_queue_name)",
                          metavar="NAME"),)

    def __init__(self, queue: str = "default") -> None:
        self.queue = queue
        self.jobs = 0

    def configure(self, inventory, flags, timeout) -> Queue:
        return Queue(flags.get("repro_queue_name") or inventory.hosts[0].vars.get("repro_queue_name", "default"))

    def check(self, runtime, launcher, backends=()) -> None:
        pass

    def prepare(self, runtime, hosts, *, backend, keep_facts, launcher, progress) -> RuntimeReport:
        return RuntimeReport()

    def execute(self, plan, runtime, timeout, progress=None) -> Outcome:
        self.jobs += 1
        t0 = time.monotonic()
        out = runtime.run(plan, timeout, progress)
        job = BatchJob(scheduler="queue", id=f"{self.queue}.{self.jobs}", nodes=[p.host.name for p in plan.placement],
                       state="DONE", script=" ".join(plan.exec_argv[:1]), detail={"queue": self.queue})
        return Outcome(out.stdout, out.stderr, out.returncode, time.monotonic() - t0, out.failure, job=job)


@pytest.fixture()
def queue(toys):  # noqa: F811 - the fixture imported above
    SCHEDULERS.add("queue", Queue())
    yield
    SCHEDULERS.remove("queue")


def test_a_toy_schedulers_option_and_job_reach_the_cli_the_record_and_its_rendering(queue, tmp_path, capsys):
    help_text = build_parser()._subparsers._group_actions[0].choices["bench"].format_help()
    assert "--scheduler queue site settings" in help_text and "--queue-name NAME" in help_text
    store = tmp_path / "store"
    code = main(["bench", "--stack", str(STACK), "--hosts", str(ROOT / "inventories" / "localhost"),
                 "--workload", "toy", "--runtime", "subprocess", "--launcher", "solo", "--scheduler", "queue",
                 "--queue-name", "fast", "--step-seconds", "0.25", "--batch-size", "6", "--repeats", "1",
                 "--store", str(store), "-q"])
    assert code == 0, capsys.readouterr().err
    (rec,) = Store(store).records()
    assert rec.status == "ok" and rec.batch == BatchJob(scheduler="queue", id="fast.1", nodes=["localhost"],
                                                        state="DONE", script=rec.batch.script,
                                                        detail={"queue": "fast"})
    capsys.readouterr()
    assert main(["results", "--store", str(store), "show", rec.id, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["schema_version"] == SCHEMA_VERSION
    assert shown["batch"] == {"scheduler": "queue", "id": "fast.1", "nodes": ["localhost"], "state": "DONE",
                              "script": rec.batch.script, "detail": {"queue": "fast"}}


def test_a_site_option_of_another_scheduler_is_refused_not_ignored(queue, tmp_path, capsys):
    code = main(["bench", "--stack", str(STACK), "--hosts", str(ROOT / "inventories" / "localhost"),
                 "--workload", "toy", "--runtime", "subprocess", "--launcher", "solo", "--scheduler", "queue",
                 "--partition", "debug", "--dry-run", "--store", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--partition: site settings of --scheduler slurm; --scheduler queue takes --queue-name" in err
    assert local().hosts[0].name == "localhost"
