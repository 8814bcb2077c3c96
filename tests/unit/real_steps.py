"""Real step-time series of repro's CNN workload (tests/data/steps/cnn-resnet20-cpu.json) as RunRecords.

The fixture's "measured" block says how they were taken. Helpers here build small synthetic records
from those series: a run keeps its own series (warm-up, bursts) and may be rescaled as a whole.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from repro.results.record import RankResult, RunRecord, Settings, StackRef, SweepRef

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "steps" / "cnn-resnet20-cpu.json"


def runs(workers: int = 1) -> list[dict[str, Any]]:
    """The measured runs with this many workers, in the order they ran."""
    return [r for r in json.loads(FIXTURE.read_text())["runs"] if r["workers"] == workers]


def stack(name: str) -> StackRef:
    return StackRef(name=name, hash=hashlib.sha256(name.encode()).hexdigest()[:12])


def record(run: dict[str, Any], stack_name: str, *, scale: float = 1.0, n: int = 0,
           pair: str | None = None) -> RunRecord:
    """A record of one measured run; every step time multiplied by `scale` (0.9: a 10% shorter step)."""
    ranks = [RankResult(rank=i, warmup_times=[t * scale for t in r["warmup_times"]],
                        step_times=[t * scale for t in r["step_times"]], items_per_step=run["items_per_step"][i])
             for i, r in enumerate(run["ranks"])]
    return RunRecord(id=f"{stack_name}-{n}", created="2026-11-22T00:00:00+00:00", status="ok",
                     stack=stack(stack_name), sweep=SweepRef(id="s-" + stack_name, point="p", repeat=n, pair=pair),
                     settings=Settings(workload="cnn", model="resnet20", batch_per_worker=8, workers=run["workers"],
                                       global_batch=8 * run["workers"]), ranks=ranks)
