"""Every real log in tests/data/logs/real imports with the figures written in it (tests/data/logs/expected.yaml).

The logs were collected from public repositories, issues and documentation (tests/data/logs/SOURCES.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from repro.results import metrics
from repro.results.importers import import_file, import_stack, parse_overrides
from repro.results.record import RunRecord

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "data" / "logs" / "real"
EXPECTED = yaml.safe_load((ROOT / "tests" / "data" / "logs" / "expected.yaml").read_text())["files"]
STACK = import_stack("real-logs")


def test_at_least_40_real_logs_are_listed_and_every_file_is():
    files = sorted(p.name for p in REAL.glob("*.log"))
    assert sorted(EXPECTED) == files
    imported = [name for name, e in EXPECTED.items() if "runs" in e]
    assert len(imported) >= 40


def _import(name: str):
    given = EXPECTED[name].get("set") or {}
    if isinstance(given, list):  # one setting per run: '#N:NAME=VALUE' (--set FILE#N:NAME=VALUE)
        return import_file(str(REAL / name), STACK, parse_overrides([f"{name}{s}" for s in given]), {})
    overrides = parse_overrides([f"{name}:{k}={str(v).lower() if isinstance(v, bool) else v}"
                                 for k, v in given.items()])
    return import_file(str(REAL / name), STACK, overrides, {})


def _value(record: RunRecord, field: str) -> Any:
    s = record.settings
    direct = {"model": s.model, "batch": s.batch_per_worker, "global_batch": s.global_batch, "workers": s.workers,
              "hosts": s.hosts, "data": s.data, "precision": s.precision, "status": record.status,
              "gpu": record.hardware.gpu if record.hardware else None, "tensorflow": record.software.get("tensorflow"),
              "samples": max((len(r.step_times) for r in record.ranks), default=0)}
    backend = s.comm.backend if s.comm is not None else None  # Horovod's controller or torch.distributed's
    direct.update({"workload": s.workload, "backend": backend, "pytorch": record.software.get("pytorch"),
                   "nccl": record.software.get("nccl")})
    if field in direct:
        return direct[field]
    fabric = record.fabric  # what the NCCL INFO lines among the run's lines say
    if field in ("nccl_loaded", "intra_node", "inter_node", "network"):
        if fabric is None:
            return None
        return {"nccl_loaded": fabric.version, "intra_node": fabric.path("intra"), "inter_node": fabric.path("inter"),
                "network": ", ".join(fabric.network)}[field]
    if field == "figure":
        return record.metrics.get("time_to_accuracy_s") if s.workload == "tta" else record.reported_images_per_sec
    if field in ("reached", "final_top1"):
        return record.metrics.get(field)
    if field == "failure":
        return record.failure
    if field == "warning":
        return " ".join(record.metrics.get("warnings", []))
    if field == "warmup_iterations":
        return max((len(r.warmup_times) for r in record.ranks), default=0)
    if field in s.extra:
        return s.extra[field]
    return record.metrics.get(field)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_log_imports_with_the_figures_it_prints(name):
    expected = EXPECTED[name]
    result = _import(name)
    if "error" in expected:
        assert result.status == "failed", f"{name} should be refused"
        text = result.error.render()
        assert f"{REAL / name}:{expected['error']['line']}:" in text
        assert expected["error"]["message"] in text
        return
    assert result.status == "imported", result.error.render() if result.error else ""
    assert len(result.records) == len(expected["runs"])
    for record, run in zip(result.records, expected["runs"], strict=True):
        for field, want in run.items():
            got = _value(record, field)
            if field in ("failure", "warning"):
                assert want in (got or ""), f"{name}: {field} {got!r} lacks {want!r}"
            elif isinstance(want, float):
                assert got == pytest.approx(want, abs=1e-6), f"{name}: {field}"
            else:
                assert got == want, f"{name}: {field} is {got!r}, the log says {want!r}"
        if record.status == "ok" and record.settings.workload != "tta":
            # the record's images/sec is the log's own summary, exactly
            assert metrics.throughput(record) == run["figure"]
