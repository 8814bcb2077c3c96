"""Intra-op threads against the cores other work left free during a run (pure): the `--threads` warning.

An OpenMP or TensorFlow/torch intra-op pool splits each operation over its threads and waits for all of them at
the end. When the machine's other work leaves fewer cores free than a host's workers run threads, one thread is
descheduled at almost every barrier and every step waits for it: on the 2-core development machine with other
work, a torch forward pass took 1.31 s with 2 intra-op threads against 0.034 s with 1 (issue 42). repro's
default (usable cores / local workers) cannot see the load, so the run's recorded conditions judge it
afterwards: the threads of a host's workers against its CPUs minus the mean other work during the run.
"""

from __future__ import annotations

import math
from collections import Counter

from repro.results.conditions import BUSY_FLOOR, summarize
from repro.results.record import RunRecord


def threads_per_worker(record: RunRecord) -> int | None:
    """The intra-op threads each worker ran with: as the workload reported it, else as asked (None: unknown)."""
    value = record.resolved.get("intra_threads", record.settings.threads)
    return value if isinstance(value, int) and value > 0 else None


def threads_warning(record: RunRecord) -> str | None:
    """A warning when a host's workers ran more intra-op threads than the cores free of other work during the run
    (a quarter of a core of slack, compare's floor for other work); None when they fit or nothing says."""
    threads = threads_per_worker(record)
    if threads is None or record.conditions is None or record.status != "ok":
        return None
    workers = Counter(r.host for r in record.ranks)
    hit = []
    for name, host in record.conditions.hosts.items():
        others = summarize(host).others_during
        local = workers.get(name, 0) or (record.settings.workers if len(record.conditions.hosts) == 1 else 0)
        if others is None or not host.cpus or not local:
            continue
        free = max(0.0, host.cpus - others)
        if threads * local > free + BUSY_FLOOR:
            hit.append((name, local, free, others, host.cpus))
    if not hit:
        return None
    name, local, free, others, cpus = min(hit, key=lambda h: h[2] / h[1])
    fits = max(1, math.floor((free + BUSY_FLOOR) / local))
    where = name if len(hit) == 1 else f"{name} (and {len(hit) - 1} more host(s))"
    return (f"{threads} intra-op thread(s) x {local} worker(s) on {where}, but other work left only {free:.1f} of its "
            f"{cpus} cores free during the run (other work {others:.1f} cores): threads that wait for a descheduled "
            f"one slow every step; `--threads {fits}` fits the free cores")
