"""The all-reduce sweep's latency and bandwidth plot, one line per backend and dtype (matplotlib)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from repro.errors import InputError, ResultsError
from repro.extras import need
from repro.results.record import RunRecord
from repro.results.summary import allreduce_rows


def plot_allreduce(records: Sequence[RunRecord], path: str | Path, link_gbps: float | None = None) -> Path:
    """Latency (log-log) and bus bandwidth against message size, with the link speed as a reference line."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise InputError(f"--plot {path}: expected a file name ending in .png or .svg")
    rows = allreduce_rows(records, link_gbps)
    if not rows:
        raise ResultsError("nothing to plot: no successful all-reduce run")
    matplotlib = need("matplotlib", "plot", "--plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        lines[f"{r['backend']} {r['dtype']} ({r['workers']} workers)"].append(r)
    fig, (lat, bw) = plt.subplots(1, 2, figsize=(11, 4))
    for label, pts in sorted(lines.items()):
        pts.sort(key=lambda r: r["bytes"])
        sizes = [r["bytes"] for r in pts]
        lat.plot(sizes, [r["latency_us"] for r in pts], marker=".", label=label)
        bw.plot(sizes, [r["busbw_gbps"] for r in pts], marker=".", label=label)
    link = next((r["link_gbps"] for r in rows if r["link_gbps"]), None)
    if link:
        bw.axhline(link, color="grey", linestyle=":", label=f"link {link:g} Gbit/s")
    lat.set(xscale="log", yscale="log", xlabel="message size (bytes)", ylabel="latency (us)", title="latency")
    bw.set(xscale="log", xlabel="message size (bytes)", ylabel="bus bandwidth (Gbit/s)", title="bus bandwidth")
    for ax in (lat, bw):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=path.suffix.lower().lstrip("."))
    plt.close(fig)
    return path
