"""End-of-sweep summaries `repro bench` prints (pure text from records).

CNN sweeps print the scaling table of seeds 000/001; all-reduce sweeps the per-size latency and
bandwidth table with the link speed as a physical reference; time-to-accuracy sweeps the time,
epochs, accuracy and the compute/communication split.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from repro.results.record import RunRecord

GBIT = 1e9 / 8  # bytes per second in one Gbit/s


def scaling_report(records: Sequence[RunRecord], fmt: str = "table", *, warmup: str = "fixed",
                   baseline_workers: int | None = None) -> str:
    """The scaling table (workers, images/sec, per worker, speedup, efficiency) of these records.

    warmup: "fixed" or "auto" (repro.results.steady); baseline_workers: a named baseline point.
    """
    from repro.results import metrics, report

    pts = metrics.points(records, warmup=warmup)
    return report.scaling_table(metrics.scaling(pts, baseline_workers=baseline_workers), fmt)


def link_gbps(record: RunRecord) -> float | None:
    """The slowest link among the record's hosts, from the facts `repro prepare` gathered."""
    speeds = []
    for host in record.hosts:
        facts = record.facts.get(host.name)
        # the facts keep the speed of the host's MPI/NCCL interface (repro_interface)
        value = facts.interface.link_gbps if facts else None
        if value is not None and value > 0:
            speeds.append(float(value))
    return min(speeds) if speeds else None


def allreduce_rows(records: Sequence[RunRecord], link: float | None = None) -> list[dict[str, Any]]:
    """One row per (backend, workers, dtype, size) from all-reduce records."""
    rows = []
    for rec in records:
        if rec.status != "ok" or rec.settings.workload != "allreduce":
            continue
        reference = link or link_gbps(rec)
        backend = rec.metrics.get("backend") or rec.settings.backend
        for r in rec.metrics.get("results", []):
            busbw = r.get("busbw_median")
            rows.append({
                "backend": backend, "workers": rec.settings.workers, "hosts": rec.settings.hosts,
                "dtype": r.get("dtype"), "elements": r.get("elements"), "bytes": r.get("bytes"),
                "latency_us": (r.get("latency_median") or 0) * 1e6,
                "algbw_gbps": (r.get("algbw_median") or 0) / GBIT,
                "busbw_gbps": (busbw or 0) / GBIT,
                "link_gbps": reference,
                "of_link": (busbw / GBIT / reference) if (busbw and reference) else None,
            })
    return rows


def allreduce_report(records: Sequence[RunRecord], link_gbps: float | None = None) -> str:
    rows = allreduce_rows(records, link_gbps)
    if not rows:
        return "no successful all-reduce runs"
    table = [[r["backend"], r["workers"], r["dtype"], r["elements"], r["bytes"], f"{r['latency_us']:.1f}",
              f"{r['algbw_gbps']:.3f}", f"{r['busbw_gbps']:.3f}",
              f"{r['of_link']:.1%}" if r["of_link"] is not None else "-"] for r in rows]
    link = next((r["link_gbps"] for r in rows if r["link_gbps"]), None)
    head = f"link speed reference: {link:g} Gbit/s" if link else "link speed unknown (repro prepare, or --link-gbps)"
    return head + "\n" + tabulate(table, headers=["backend", "workers", "dtype", "elements", "bytes", "latency us",
                                                  "algbw Gbit/s", "busbw Gbit/s", "busbw/link"],
                               disable_numparse=True)


def tta_report(records: Sequence[RunRecord]) -> str:
    table = []
    for rec in records:
        if rec.settings.workload != "tta":
            continue
        m = rec.metrics
        if rec.status != "ok":
            table.append([rec.settings.workers, "FAILED", "-", "-", "-", "-", "-", rec.failure])
            continue
        tta = m.get("time_to_accuracy_s")
        table.append([rec.settings.workers, f"{tta:.1f}" if tta is not None else "not reached", m.get("epochs"),
                      m.get("final_top1"), m.get("final_top5"), _seconds(m.get("compute_s")),
                      _seconds(m.get("communication_s")), f"target {m.get('target')}"])
    return tabulate(table, headers=["workers", "time to accuracy s", "epochs", "top-1", "top-5", "compute s",
                                    "communication s", ""], disable_numparse=True)


def _seconds(value: Any) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) else "-"
