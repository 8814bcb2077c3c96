"""Comparison kinds: how the results of a family of workloads are summed up and compared.

    @KINDS.register("throughput", instance=True)
    class Throughput:
        def summary(self, record) -> str: ...                       # one line after a bench point
        def compare(self, pairs, old, new, options) -> KindRows: ... # the aligned rows of a comparison

Built in: throughput (items/sec: cnn, tf_cnn_benchmarks, imported logs), allreduce (per-size latency and
bandwidth), tta (time to accuracy). A workload names its kind in its spec (repro.workloads.spec).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from repro.compare.align import Pair
from repro.compare.allreduce import allreduce_rows
from repro.compare.throughput import Options, throughput_rows
from repro.compare.tta import tta_rows
from repro.registry import Registry
from repro.results.record import RunRecord


@dataclass(frozen=True)
class KindRows:
    """A kind's part of a comparison: its rows and notes."""

    rows: tuple[Any, ...]
    notes: tuple[str, ...] = ()


class Kind(Protocol):
    name: str

    def summary(self, record: RunRecord) -> str: ...

    def compare(self, pairs: Sequence[Pair], old: Sequence[RunRecord], new: Sequence[RunRecord],
                options: Options) -> KindRows: ...


KINDS: Registry[Kind] = Registry("comparison kind")


@KINDS.register("throughput", instance=True)
class Throughput:
    """items (images) per second, with speedup and scaling efficiency"""

    name = "throughput"

    def summary(self, record: RunRecord) -> str:
        from repro.results.metrics import throughput

        ips = throughput(record)
        took = f"({record.duration_s or 0:.1f} s)"
        return f"{ips:.1f} images/sec {took}" if ips else f"ok {took}"

    def compare(self, pairs, old, new, options) -> KindRows:
        mine = [r for r in old if kind_of_record(r) == self.name], [r for r in new if kind_of_record(r) == self.name]
        return KindRows(throughput_rows(pairs, mine[0], mine[1], options))


@KINDS.register("allreduce", instance=True)
class Allreduce:
    """all-reduce latency and bandwidth per message size"""

    name = "allreduce"

    def summary(self, record: RunRecord) -> str:
        return f"ok ({record.duration_s or 0:.1f} s)"

    def compare(self, pairs, old, new, options) -> KindRows:
        rows, notes = allreduce_rows(pairs, options)
        return KindRows(rows, tuple(notes))


@KINDS.register("tta", instance=True)
class TimeToAccuracy:
    """time to a target validation accuracy"""

    name = "tta"

    def summary(self, record: RunRecord) -> str:
        m = record.metrics
        if m.get("reached"):
            return f"reached {m.get('target')} in {m.get('time_to_accuracy_s', 0):.1f} s, {m.get('epochs')} epochs"
        return f"did not reach {m.get('target')} (top-1 {m.get('final_top1')}) in {m.get('epochs')} epochs"

    def compare(self, pairs, old, new, options) -> KindRows:
        return KindRows(tta_rows(pairs, options))


def kind_of_record(record: RunRecord) -> str:
    from repro.workloads.catalog import kind_of

    return kind_of(record.settings.workload)
