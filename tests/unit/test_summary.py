"""End-of-sweep summaries: all-reduce table against the link speed, its plot, time-to-accuracy table."""

from __future__ import annotations

import pytest

from repro.compare.kind import plot_records
from repro.compare.kinds.allreduce.sweep import GB, GBIT, allreduce_report, allreduce_sweeps
from repro.compare.kinds.tta.sweep import tta_report
from repro.results.provenance import HostFacts, Link
from repro.results.record import HostRef, RunRecord, Settings, StackRef


def allreduce_record(backend: str, link: float | None = None) -> RunRecord:
    results = []
    for elements in (1, 1000, 1_000_000):
        size = elements * 4
        latency = 20e-6 + size / (0.5 * GBIT * 10)  # 5 Gbit/s algorithm bandwidth plus 20 us
        results.append({"dtype": "fp32", "elements": elements, "bytes": size, "latencies": [latency] * 3,
                        "latency_median": latency, "algbw_median": size / latency,
                        "busbw_median": size / latency})
    # host facts as `repro prepare` stores them (repro.facts/1): the speed is the MPI/NCCL interface's
    facts = {h: HostFacts(host=h, interface=Link(name="eth0", link_gbps=link)) for h in ("h1", "h2")}
    facts = facts if link else {}
    return RunRecord(id=f"r-{backend}", created="2026-11-22T00:00:00+00:00", status="ok",
                     stack=StackRef(name="cpu", hash="abc"),
                     settings=Settings(workload="allreduce", workers=2, hosts=2, backend=backend),
                     hosts=[HostRef(name="h1", address="10.0.0.1"), HostRef(name="h2", address="10.0.0.2")],
                     facts=facts, metrics={"backend": backend, "bus_factor": 1.0, "results": results})


def test_allreduce_rows_relate_bus_bandwidth_to_the_link_speed_from_facts():
    (sweep,) = allreduce_sweeps([allreduce_record("mpi", link=10.0)])
    assert [s.elements for s in sweep.sizes] == [1, 1000, 1_000_000]
    big = sweep.sizes[-1].horovod
    assert sweep.link_gbps == 10.0
    assert 0.61 < big.busbw / GB < 0.625 and 0.49 < sweep.of_link(big.busbw) < 0.5  # 5 Gbit/s = 0.625 GB/s
    assert sweep.sizes[0].horovod.busbw < big.busbw
    assert sweep.sizes[0].raw is None and not sweep.has_raw  # a record from before the raw path existed


def test_allreduce_report_says_when_the_link_speed_is_unknown_and_takes_an_override():
    assert "link speed unknown" in allreduce_report([allreduce_record("gloo")])
    text = allreduce_report([allreduce_record("gloo")], link_gbps=100)
    assert "100 Gbit/s = 12.5 GB/s" in text and "gloo controller" in text
    assert "raw path not recorded" in text


def test_allreduce_plot_writes_png_and_svg(tmp_path):
    records = [allreduce_record("mpi", 10.0), allreduce_record("gloo", 10.0)]
    png = plot_records(records, tmp_path / "a.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = plot_records(records, tmp_path / "a.svg")
    assert "<svg" in svg.read_text()[:500]


def test_tta_report_lists_time_epochs_and_split():
    rec = RunRecord(id="t", created="2026-11-22T00:00:00+00:00", status="ok", stack=StackRef(name="cpu", hash="a"),
                    settings=Settings(workload="tta", workers=2),
                    metrics={"target": 0.95, "reached": True, "time_to_accuracy_s": 12.5, "epochs": 7,
                             "final_top1": 0.96, "final_top5": 1.0, "compute_s": 9.0, "communication_s": 1.5})
    text = tta_report([rec])
    assert "12.5" in text and "9.0" in text and "1.5" in text and "96.0%" in text


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_every_summary_renders_in_every_format(fmt):
    assert "1,000" in allreduce_report([allreduce_record("mpi", 10.0)], fmt=fmt).replace("1000", "1,000")
