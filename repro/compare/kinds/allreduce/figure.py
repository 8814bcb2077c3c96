"""The allreduce kind's figures: its row of the comparison figure (latency and bus bandwidth per message size,
both sides, both paths) and its end-of-sweep figure (both paths of each point, the link speed as a line)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from repro.compare.kinds.allreduce.sweep import GB, AllreduceSweep
from repro.compare.kinds.allreduce.tables import PATH_LABEL
from repro.errors import ResultsError
from repro.results.plots import REFERENCE, color, figure, finish, legend_entries, log_if_wide


def allreduce_row(row: Any, compared: Sequence[Any], labels: tuple[str, str]) -> None:
    """The allreduce kind's row of the figure: latency and bus bandwidth per message size."""
    lat, bw = row.bars, row.speedup
    for i, (side, label) in enumerate(zip(("old", "new"), labels, strict=True)):
        for path, style in (("horovod", "-"), ("raw", "--")):
            pts = sorted((r.bytes, getattr(r, side)) for r in compared if r.path == path)
            if not pts:
                continue
            name = f"{label}: {PATH_LABEL.get(path, path)} ({pts[0][1].backend})" if path == "horovod" else \
                f"{label}: raw"
            lat.plot([p[0] for p in pts], [(p[1].time_s or 0) * 1e6 for p in pts], style, marker=".",
                     color=color(i), label=name)
            bw.plot([p[0] for p in pts], [(p[1].busbw or 0) / 1e9 for p in pts], style, marker=".",
                    color=color(i), label=name)
    lat.set(xscale="log", yscale=log_if_wide(lat), xlabel="message size (bytes)", ylabel="latency (us)",
            title="all-reduce time (geometric mean over runs)")
    bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)", title="bus bandwidth")
    for ax in (lat, bw):
        ax.grid(True, which="both", alpha=0.3)


def _sweep_label(sweep: AllreduceSweep, path: str, several: bool) -> str:
    what = f"Horovod ({sweep.backend})" if path == "horovod" else "raw MPI_Allreduce"
    who = f"{sweep.stack}, {sweep.workers} workers" if several else ""
    return f"{who}: {what}" if who else what


def allreduce_figure(sweeps: Sequence[AllreduceSweep]) -> Any:
    """Latency (log-log) and bus bandwidth per message size for both paths, the link speed as a line."""
    if not sweeps:
        raise ResultsError("nothing to plot: no successful all-reduce run")
    fig, (row,) = figure(1, [True])
    lat, bw = row.bars, row.speedup
    several = len(sweeps) > 1
    for i, sweep in enumerate(sweeps):
        for path, style in (("horovod", "-"), ("raw", "--")):
            pts = [(s.bytes, f) for s in sweep.sizes if (f := getattr(s, path)) is not None and f.latency_s]
            if not pts:
                continue
            label = _sweep_label(sweep, path, several)
            c = color(i * 2 + (path == "raw"))
            lat.plot([p[0] for p in pts], [p[1].latency_s * 1e6 for p in pts], style, marker=".", color=c,
                     label=label)
            bw.plot([p[0] for p in pts], [(p[1].busbw or 0) / GB for p in pts], style, marker=".", color=c,
                    label=label)
    link = next((s.link_gbps for s in sweeps if s.link_gbps), None)
    if link:
        bw.axhline(link / 8, color="#777777", linestyle=":", label=f"link {link / 8:g} GB/s ({link:g} Gbit/s)",
                   gid=REFERENCE)
    lat.set(xscale="log", yscale=log_if_wide(lat), xlabel="message size (bytes)", ylabel="latency (us)",
            title="latency per all-reduce (median)")
    averages = ", ".join(f"{'hvd' if p == 'horovod' else p} {v / GB:.2f}" for s in sweeps[:1]
                         for p in ("horovod", "raw") if (v := s.average_busbw(p)) is not None)
    bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (GB/s)",
           title="bus bandwidth (nccl-tests' busbw)" + (f"\naverage: {averages} GB/s" if averages and not several
                                                          else ""))
    for ax in (lat, bw):
        ax.grid(True, which="both", alpha=0.3)
    first = sweeps[0]
    hosts = "? hosts" if first.hosts is None else f"{first.hosts} host{'s' if first.hosts != 1 else ''}"
    where = "" if several else f"{first.stack}, {first.workers} workers on {hosts}: "
    finish(fig, f"{where}all-reduce, Horovod's path and the raw path", *legend_entries(fig))
    return fig
