"""`--format json` of validate, stacks, show, up --dry-run and prepare (issue 39 item 1): the shapes documented in
docs/design.md ("JSON output of the stack and image commands") and docs/prepare.md ("JSON output")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from repro.cli import main
from repro.hosts.ansible import HostOutcome, PlaybookRun, RunOutcome, TaskResult
from repro.hosts.inventory import load_inventory
from repro.hosts.readiness import Check, Readiness
from repro.pipeline.prepare import PrepareResult

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "tests" / "data" / "stacks"
CPU = ROOT / "stacks" / "cpu-tf215.yaml"
SECRET = "Zq9-S3cr3t-Vx"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_validate_json_has_one_entry_per_file_and_exit_2_when_one_fails(capsys):
    bad = STACKS / "bad" / "wrong-type.yaml"
    code, out, _ = run(capsys, "validate", str(CPU), str(bad), "--format", "json")
    assert code == 2
    good, wrong = json.loads(out)
    assert set(good) == {"file", "valid", "stack", "hash", "errors", "warnings", "notes", "diagnostics", "findings"}
    assert good["valid"] is True and good["stack"] == "cpu-tf215" and good["errors"] == 0
    assert wrong["valid"] is False and wrong["stack"] is None and wrong["errors"] == len(wrong["diagnostics"]) > 0


def test_stacks_json_rows_name_versions_and_status(capsys, tmp_path):
    (tmp_path / "cpu-tf215.yaml").write_text(CPU.read_text())
    (tmp_path / "broken.yaml").write_text("stack: [\n")
    code, out, _ = run(capsys, "stacks", str(tmp_path), "--format", "json")
    assert code == 0
    broken, valid = json.loads(out)  # by file name
    assert valid["stack"] == "cpu-tf215" and valid["framework"] == "tensorflow" and valid["status"] == "ok"
    assert valid["mpi"].startswith("openmpi ") and isinstance(valid["warnings"], int)
    assert broken == {"stack": "broken.yaml", "file": str(tmp_path / "broken.yaml"), "status": "invalid"}


def test_show_json_is_the_resolved_stack(capsys):
    code, out, _ = run(capsys, "show", str(CPU), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["name"] == "cpu-tf215" and data["stack"]["name"] == "cpu-tf215"
    assert len(data["hash"]) == 12 and isinstance(data["findings"], list)


def test_up_dry_run_json_says_what_would_be_built_and_where_it_would_go(capsys):
    code, out, _ = run(capsys, "up", str(CPU), "--dry-run", "--no-ca-bundle", "--hosts",
                         str(ROOT / "inventories" / "c4140"), "--format", "json")
    data = json.loads(out)  # the stack's warnings went to stderr: stdout is the document alone
    assert code == 0 and data["dry_run"] is True and data["stack"] == "cpu-tf215"
    assert data["tag"].startswith("repro/") and data["hosts"] == ["c4140-1", "c4140-2"]
    assert data["dockerfile"].startswith("# syntax") or "FROM " in data["dockerfile"]
    assert all(set(f) == {"name", "size", "sha256"} for f in data["context"])
    assert "nothing was built" not in out


def test_prepare_dry_run_json_has_the_command_and_redacted_variables(capsys):
    code, out, _ = run(capsys, "prepare", "--dry-run", "--hosts", str(ROOT / "inventories" / "localhost"),
                       "-e", f"db_password={SECRET}", "-e", "nvidia_manage=true", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["dry_run"] is True and data["argv"][0] == "ansible-playbook"
    assert data["variables"]["nvidia_manage"] is True
    assert data["variables"]["db_password"].startswith("<redacted:")
    assert SECRET not in out


def _prepared(tmp_path: Path) -> PrepareResult:
    """Two hosts: c4140-1 ran every role, c4140-2 failed at the nvidia role; readiness found a failure."""
    inventory = load_inventory(ROOT / "inventories" / "c4140")
    run_ = PlaybookRun("site.yml", str(inventory.path))
    failure = TaskResult("c4140-2", "nvidia", "load the driver", "failed", "modprobe: nvidia not found")
    hosts = {"c4140-1": HostOutcome("c4140-1", ok=12, changed=2, skipped=1, skips=[("ofed", "no Mellanox adapter")]),
             "c4140-2": HostOutcome("c4140-2", ok=4, failed=1, failure=failure)}
    outcome = RunOutcome(run_, "failed", 2, hosts, artifact_dir=str(tmp_path / "artifacts"))
    readiness = Readiness((Check("c4140-1", "gpu", "ok", "4 GPUs"), Check("c4140-2", "driver", "fail", "no driver")))
    facts = {"c4140-1": tmp_path / "facts" / "c4140-1.json"}
    return PrepareResult(run_, inventory, outcome, {}, facts, readiness, tmp_path, "docker")


def _args(fmt: str) -> argparse.Namespace:
    return argparse.Namespace(format=fmt, check_only=False, runtime=None, hosts="inventories/c4140", stack=None)


def test_prepare_json_has_each_host_its_notes_readiness_and_the_failure(tmp_path, capsys):
    from repro.cli.hosts_cmds import _write_prepared

    _write_prepared(_prepared(tmp_path), _args("json"))
    data = json.loads(capsys.readouterr().out)
    assert data["mode"] == "apply" and data["runtime"] == "docker" and data["ok"] is False
    assert "failed on 1 of 2 hosts" in data["error"]
    one, two = data["hosts"]
    assert one == {"host": "c4140-1", "result": "changed", "ok": 12, "changed": 2, "skipped": 1, "failed": 0,
                   "notes": ["all selected roles ran, 2 changes", "ofed: skipped: no Mellanox adapter"]}
    assert two["result"] == "FAILED" and two["notes"][0] == "failed at nvidia / load the driver: modprobe: nvidia " \
                                                            "not found"
    assert data["facts"] == {"c4140-1": str(tmp_path / "facts" / "c4140-1.json")}
    assert [c["status"] for c in data["readiness"]] == ["ok", "fail"]
    assert data["artifacts"] == str(tmp_path / "artifacts")


@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_prepare_summary_renders_every_host_in_text_formats(tmp_path, capsys, fmt):
    from repro.cli.hosts_cmds import _write_prepared

    _write_prepared(_prepared(tmp_path), _args(fmt))
    out = capsys.readouterr().out
    assert "c4140-1" in out and "FAILED" in out and "failed at nvidia / load the driver" in out
    if fmt == "markdown":
        assert "| host " in out and "<br>" in out  # a multi-line cell stays one markdown row
    else:
        assert "readiness: 1 failed, 0 warnings" in out and f"ansible-runner artifacts: {tmp_path / 'artifacts'}" in out


def _up_result(tmp_path: Path):
    """What `repro up` returns for cpu-tf215 with the lock of the test store, built in 93 s, shipped to two hosts."""
    from repro.hosts.ship import ShipResult
    from repro.image.build import BuildOutcome, plan_build
    from repro.manifest import load_stack
    from repro.pipeline.up import BuildOptions, UpResult
    from repro.results.store import Store

    lock = Store(ROOT / "tests" / "data" / "stores" / "v1").lock("bd779ae04811")
    plan = plan_build(load_stack(CPU), BuildOptions(), check_inputs=False)
    outcome = BuildOutcome(plan.tag, lock.image.id, True, 93.4, None, "2026-11-28T01:00:00Z", "2026-11-28T01:01:33Z")
    shipping = (ShipResult("h1", "shipped", "docker save | ssh docker load", 12.5, 3 << 30),
                ShipResult("h2", "failed", "docker save | ssh docker load", detail="no space left on device"))
    return UpResult(plan, outcome, lock, str(tmp_path / "lock.json"), True, shipping)


def test_up_json_has_the_image_lock_versions_and_shipping(tmp_path):
    from repro.cli.image_cmds import _summary, _up_data

    result = _up_result(tmp_path)
    data = _up_data(result)
    assert data["built"] is True and data["build_seconds"] == 93.4 and data["verified"] is True
    assert data["image_id"] == result.lock.image.id and data["lock"] == str(tmp_path / "lock.json")
    assert data["versions"]["tensorflow"] and data["sshd_port"] == result.lock.sshd.port
    assert [h["status"] for h in data["hosts"]] == ["shipped", "failed"]
    assert data["hosts"][1]["detail"] == "no space left on device"
    text = _summary(result)  # the terminal form says the same
    assert f"  id {result.lock.image.id}, built in 93 s, verified\n" in text
    assert text.endswith("hosts:\n  h1: shipped (docker save | ssh docker load, 3072 MiB in 12.5 s)\n"
                         "  h2: failed: no space left on device\n")
    assert "did not reach 1 of 2 hosts: h2" in result.failure().message


def test_prepare_runtime_takes_the_registered_runtimes_only(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["prepare", "--hosts", str(ROOT / "inventories" / "localhost"), "--runtime", "dockr", "--dry-run"])
    assert exc.value.code == 2 and "did you mean docker?" in capsys.readouterr().err
