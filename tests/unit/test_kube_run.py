"""The kubectl flow of `--scheduler kubernetes` against a FAKE kubectl on PATH (a script written here that answers
from a scenario and logs every argv): it checks the commands repro runs and what it makes of the answers (end
states, lost nodes, time limit, Ctrl-C, deletion), not that anything runs on a cluster.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from repro.errors import LaunchError
from repro.launch.schedulers import kube_run
from repro.launch.schedulers.kube_site import KubeSite
from tests.unit.test_kubernetes import kube_plan

FAKE = """#!{python}
import json, sys
from pathlib import Path
here = Path(__file__).parent
scenario = json.loads((here / "scenario.json").read_text())
argv = sys.argv[1:]
with open(here / "calls.jsonl", "a") as log:
    log.write(json.dumps(argv) + "\\n")
verb = argv[2]
if verb == "version":
    print(json.dumps({{"serverVersion": {{"gitVersion": scenario.get("version", "v1.33.2")}}}}))
elif verb == "apply":
    (here / "applied.yaml").write_text(sys.stdin.read())
    if scenario.get("apply_fails"):
        print("error: the server doesn't have a resource type trainjobs", file=sys.stderr); sys.exit(1)
elif verb == "get" and argv[3] == "pods":
    print(json.dumps({{"items": scenario.get("pods", [])}}))
elif verb == "get":
    count = here / "polls"
    n = int(count.read_text()) if count.exists() else 0
    count.write_text(str(n + 1))
    done = n + 1 >= scenario.get("polls", 1) and scenario.get("condition")
    print(json.dumps({{"status": {{"conditions": [done] if done else []}}}}))
elif verb == "logs":
    print(scenario.get("logs", {{}}).get(argv[3], ""))
elif verb == "delete":
    pass
"""

POD = {"metadata": {"name": "repro-0123abcd-launcher-0-0-x1"}, "spec": {"nodeName": "gpu-a"},
       "status": {"phase": "Succeeded", "hostIP": "10.1.0.1"}}
NODES = [{"metadata": {"name": f"repro-0123abcd-node-0-{i}-y{i}"}, "spec": {"nodeName": f"gpu-{i}"},
          "status": {"phase": "Succeeded", "hostIP": f"10.1.0.{10 + i}"}} for i in (0, 1)]


@pytest.fixture()
def fake(tmp_path, monkeypatch):
    """A fake kubectl first on PATH; returns (write scenario, read calls)."""
    script = tmp_path / "kubectl"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(kube_run, "POLL_S", 0.01)

    def scenario(**values):
        (tmp_path / "scenario.json").write_text(json.dumps(values))

    def calls() -> list[list[str]]:
        path = tmp_path / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return scenario, calls


def test_a_job_that_completes_gives_the_launchers_log_the_nodes_and_is_deleted(fake):
    scenario, calls = fake
    scenario(polls=2, condition={"type": "Complete", "status": "True", "reason": "JobSetCompleted"},
             pods=[POD, *NODES], logs={POD["metadata"]["name"]: "RESULT {}"})
    plan = kube_plan()
    out = kube_run.run_job(plan, 60, "v1.33.2")
    assert out.failure is None and out.stdout.strip() == "RESULT {}"
    assert [p.host.name for p in out.placement] == ["gpu-0", "gpu-1"]  # the rank pods' nodes, not the launcher's
    assert out.job.nodes == ["gpu-0", "gpu-1", "gpu-a"] and out.job.detail["cluster_version"] == "v1.33.2"
    assert out.job.scheduler == "kubernetes" and out.job.id == plan.job_name and out.job.script == plan.manifest
    argv = calls()
    assert argv[0] == ["--namespace", "ml", "apply", "-f", "-"]
    assert ["--namespace", "ml", "get", "trainjobs.trainer.kubeflow.org", "repro-0123abcd", "-o", "json"] in argv
    assert ["--namespace", "ml", "get", "pods", "-l", "repro/run=0123abcd", "-o", "json"] in argv
    assert argv[-1] == ["--namespace", "ml", "delete", "trainjobs.trainer.kubeflow.org", "repro-0123abcd",
                        "--ignore-not-found", "--wait=false"]
    assert not any("--context" in a or "--token" in a for a in argv)  # kubectl's own config, never repro's


def test_a_failed_job_says_why_and_is_deleted(fake):
    scenario, calls = fake
    scenario(condition={"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                        "message": "launcher exited 1"}, pods=[POD])
    out = kube_run.run_job(kube_plan(), 60, "v1.33.2")
    assert out.failure == "the job failed: BackoffLimitExceeded launcher exited 1"
    assert calls()[-1][2] == "delete"


def test_a_pod_lost_with_its_node_names_the_node(fake):
    scenario, calls = fake
    lost = {"metadata": {"name": "repro-0123abcd-node-0-1-z"}, "spec": {"nodeName": "gpu-7"},
            "status": {"phase": "Failed", "reason": "NodeLost"}}
    scenario(polls=99, condition=None, pods=[POD, lost])
    out = kube_run.run_job(kube_plan(), 60, "v1.33.2")
    assert out.failure == "pod repro-0123abcd-node-0-1-z on node gpu-7 was lost: NodeLost"
    assert out.job.detail["lost"] == out.failure and calls()[-1][2] == "delete"


def test_the_time_limit_deletes_the_job(fake):
    scenario, calls = fake
    scenario(polls=10**6, condition=None, pods=[POD])
    out = kube_run.run_job(kube_plan(), 0.05, None)
    assert out.failure.startswith("time limit") and calls()[-1][2] == "delete"


def test_ctrl_c_deletes_the_job_and_carries_its_record_part(fake, monkeypatch):
    scenario, calls = fake
    scenario(polls=10**6, condition=None, pods=[POD])

    def interrupt(_s):
        raise KeyboardInterrupt
    monkeypatch.setattr(kube_run, "_pause", interrupt)
    with pytest.raises(kube_run.Cancelled) as err:
        kube_run.run_job(kube_plan(), 60, None)
    assert err.value.job.detail["reason"] == "interrupted" and calls()[-1][2] == "delete"


def test_a_refused_apply_fails_the_point_without_following_it(fake):
    scenario, calls = fake
    scenario(apply_fails=True)
    out = kube_run.run_job(kube_plan(), 60, None)
    assert "kubectl apply refused the job" in out.failure and len(calls()) == 1


def test_the_emitted_copy_is_exactly_what_is_applied_and_holds_no_secret_value(fake, tmp_path):
    """A secret-shaped value under a plain name (a URL with a password, a GitHub token) reaches the pods through the
    site's Secret (secretKeyRef), never as `value:`; `--emit` writes byte for byte what kubectl apply was given."""
    scenario, _ = fake
    scenario(apply_fails=True)  # the apply is what is checked; no need to follow a job
    planted = {"PIP_INDEX_URL": "https://build:Pl4ntedPw@pypi.site/simple",
               "NOTES": "ghp_" + "A1b2C3d4" * 5, "NCCL_DEBUG": "INFO"}
    plan = kube_plan(env=planted)
    kube_run.run_job(plan, 60, None)
    applied = (tmp_path / "applied.yaml").read_text()
    assert list(plan.files().values()) == [applied]
    assert "Pl4ntedPw" not in applied and "A1b2C3d4" not in applied
    trainer = next(o for o in plan.objects if o["kind"] == "TrainJob")["spec"]["trainer"]
    env = {e["name"]: e for e in trainer["env"]}
    for name in ("PIP_INDEX_URL", "NOTES"):
        assert env[name] == {"name": name, "valueFrom": {"secretKeyRef": {"name": "repro-env", "key": name}}}
    assert env["NCCL_DEBUG"] == {"name": "NCCL_DEBUG", "value": "INFO"}


def test_the_cluster_version_and_a_missing_kubectl(fake, monkeypatch):
    scenario, _ = fake
    scenario(version="v1.31.4")
    assert kube_run.server_version(KubeSite()) == "v1.31.4"
    monkeypatch.setenv("PATH", str(Path("/nonexistent")))
    with pytest.raises(LaunchError, match="kubectl is not on PATH"):
        kube_run.server_version(KubeSite())


def _context():
    from repro.launch import collect
    from repro.launch.runtimes import RuntimeReport
    from repro.results.record import StackRef, SweepRef

    return collect.Context(StackRef(name="cpu-tf215", hash="0" * 12), RuntimeReport(),
                           SweepRef(id="sw-test", point="p", repeat=0), "docker")


def test_a_failed_pod_and_ctrl_c_give_records_that_say_so(fake, monkeypatch):
    from repro.launch import collect

    scenario, _ = fake
    scenario(condition={"type": "Failed", "status": "True", "reason": "PodFailed", "message": "node-1 exited 137"},
             pods=[POD, *NODES])
    plan = kube_plan()
    out = kube_run.run_job(plan, 60, "v1.33.2")
    rec = collect.record(plan.point, plan, _context(), out)
    assert rec.status == "failed" and "PodFailed node-1 exited 137" in rec.failure
    assert rec.batch.state == "failed" and rec.batch.id == "repro-0123abcd"
    assert sorted(rec.batch.detail["pods"]) == sorted(p["metadata"]["name"] for p in [POD, *NODES])

    scenario(polls=10**6, condition=None, pods=[POD])
    monkeypatch.setattr(kube_run, "_pause", lambda _s: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(kube_run.Cancelled) as err:
        kube_run.run_job(plan, 60, "v1.33.2")
    rec = collect.failed(plan.point, plan.placement, _context(), "interrupted", plan=plan, job=err.value.job)
    assert rec.status == "failed" and rec.batch.detail["reason"] == "interrupted"
    assert rec.batch.detail["cluster_version"] == "v1.33.2"
