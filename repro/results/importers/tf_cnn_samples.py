"""The step samples of a tf_cnn_benchmarks run, per printing rank, and what is missing from them (pure).

Each printing stream (a tagged rank, or the k-th figure of each step number in untagged output) gives
the mean step time of every display interval (see interval_times). Under Horovod each rank's
step processes its own batch; a single printed stream of a multi-rank run stands for the synchronous
job and carries the global batch, as the program's own total assumes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from repro.results.importers.runs import Shown
from repro.results.importers.seen import Seen
from repro.results.record import RankResult


@dataclass
class Scan:
    """One pass over a run's lines."""

    header: dict[str, tuple[str, int]] = field(default_factory=dict)
    series: dict[int, list[tuple[int, float, int]]] = field(default_factory=lambda: defaultdict(list))
    totals: list[tuple[int | None, float, int]] = field(default_factory=list)
    warmup_lines: int = 0
    failure: tuple[str, int] | None = None
    elided: list[int] = field(default_factory=list)


def interval_times(points: Sequence[tuple[int, float, int]], batch: int) -> tuple[list[float], int]:
    """Mean step time of each display interval from cumulative (step, images/sec) figures, and how many
    intervals were dropped because the rounded figures make them non-positive."""
    if len(points) > 1 and points[0][0] == 1:
        points = points[1:]  # step 1 alone would make the first interval 1 step long instead of display_every
    times, done, elapsed, dropped = [], 0, 0.0, 0
    for step, ips, _ in points:
        if ips <= 0 or step <= done:
            dropped += 1
            continue
        total = step * batch / ips
        dt = (total - elapsed) / (step - done)
        if dt <= 0:
            dropped += 1
            continue
        times.append(dt)
        done, elapsed = step, total
    return times, dropped


def _device(scan: Scan, seen: Seen, rank: int) -> str:
    devices = scan.header.get("devices", ("", 0))[0].lower()
    if "cpu" in devices and "gpu" not in devices:
        return "CPU"
    name = seen.name(rank) or seen.name(0)
    return f"GPU:{rank if seen.name(rank) else 0} {name}" if name else ""  # "" : the model is not shown


def _batch_per_process(shown: Shown, processes: int) -> int | None:
    total, per, workers = shown.get("global_batch"), shown.get("batch_per_worker"), shown.get("workers")
    if total:
        return total // processes
    if per and workers:
        return per * workers // processes
    return None


def samples(scan: Scan, shown: Shown, seen: Seen, no_figure: bool) -> tuple[tuple[RankResult, ...], list[str]]:
    """Per-rank step samples and warnings about what the log leaves out."""

    warnings: list[str] = []
    workers = shown.get("workers")
    processes = workers if shown.get("extra.variable_update") == "horovod" and workers else 1
    batch = _batch_per_process(shown, processes)
    local = shown.get("extra.devices_per_process")  # a distributed job's process: its step is its devices' batch
    if local and shown.get("batch_per_worker"):
        batch = shown.get("batch_per_worker") * local
    series = dict(sorted(scan.series.items()))
    if scan.elided:
        warnings.append(f"the log leaves lines out (at line {', '.join(map(str, scan.elided[:5]))}): "
                        "the step samples are incomplete")
    if series and len(series) not in (1, processes):
        warnings.append(f"step figures of {len(series)} of the {processes} ranks")
    if series and batch is None:
        warnings.append("the batch size is not shown: no step samples (set it with --set FILE:batch=N)")
        series = {}
    stands_for_job = len(series) == 1 and processes > 1
    ranks, dropped = [], 0
    for slot, points in series.items():
        times, lost = interval_times(points, batch)
        dropped += lost
        items = shown.get("global_batch") if local else batch * processes if stands_for_job else batch
        ranks.append(RankResult(rank=slot, device=_device(scan, seen, slot), step_times=times,
                                items_per_step=items))
    steps = shown.get("steps")
    last = max((p[-1][0] for p in series.values() if p), default=None)
    if steps and last is not None and last < steps:
        warnings.append(f"the step figures end at step {last} of {steps}")
    if dropped:
        warnings.append(f"{dropped} step figure(s) not consistent with a running mean were left out")
    if not series and scan.failure is None:
        warnings.append("no step figures: the figure has no interval (compare says 'not enough data')")
    if series and no_figure:
        warnings.append("no 'total images/sec' line: the figure is computed from the step figures")
    return tuple(ranks), warnings
