"""`repro bench --stack A --stack B --until-verdict`: run A/B pairs until a sequential rule decides.

    stacks -> sweeps (one point) -> prepare once -> pair 1 (A then B), pair 2 (B then A), ... -> after each
    complete pair: repro.results.sequential.decide on the pairs' log-ratios -> stop at faster / slower /
    equivalent, or when --max-pairs or --max-time is spent (undecided)

The order alternates within pairs (A B, B A, A B, ...) so that a machine drifting within a pair favours
neither stack. Every run is stored as it ends, failed ones included, and every pair is part of the result's
evidence: a failed run leaves its pair incomplete (left out of the ratios, counted, never replaced by a
luckier one). The result says how long the verdict took: pairs, wall time, and benchmark time (the runs'
own durations).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from repro.compare.kind import KINDS
from repro.errors import InputError
from repro.hosts.inventory import Inventory
from repro.launch.points import SweepSpec
from repro.manifest import LoadedStack
from repro.pipeline.progress import as_progress
from repro.pipeline.running import conditions_sampler, start_runs
from repro.pipeline.sweep_plan import BenchOptions, admitted_sweeps
from repro.progress import Progress
from repro.results import metrics, repetition, sequential, steady
from repro.results.conditions import around
from repro.results.record import RunRecord, new_id
from repro.results.store import Store
from repro.workloads.catalog import kind_of

FAILED_PAIRS_IN_A_ROW = 3  # then the runs are failing for a reason more pairs will not fix: stop, undecided


@dataclass(frozen=True)
class VerdictOptions:
    """When to stop: the sequential rule (budget in pairs, confidence, threshold) and a wall-time budget."""

    rule: sequential.Rule = field(default_factory=sequential.Rule)
    max_time: float | None = None  # seconds of wall time; no new pair starts that would likely end past it
    warmup: str = steady.FIXED  # the steps each run's figure uses


@dataclass(frozen=True)
class PairEvidence:
    """One A/B pair as it ran: its records (in the order they ran) and its ratio NEW/OLD (None: incomplete)."""

    index: int
    first: str  # the stack that ran first in this pair: "A" or "B"
    old: RunRecord
    new: RunRecord
    ratio: float | None


@dataclass(frozen=True)
class VerdictResult:
    """The verdict, what it rests on, and how long it took."""

    decision: sequential.Decision
    pairs: tuple[PairEvidence, ...]
    stopped: str  # why the loop ended: "decided", "max pairs", "max time", "failing"
    wall_s: float
    bench_s: float  # the runs' own durations, summed
    stacks: tuple[str, str]
    sweep_ids: tuple[str, str]
    steps: repetition.StepsAdvice | None = None  # steps per run worth it, from these runs (Kalibera and Jones)

    @property
    def failed_pairs(self) -> int:
        return sum(1 for p in self.pairs if p.ratio is None)

    @property
    def records(self) -> list[RunRecord]:
        return [r for p in self.pairs for r in ((p.old, p.new) if p.first == "A" else (p.new, p.old))]

    def describe(self) -> list[str]:
        """The verdict, how long it took, and every pair it rests on, as lines (verdict_lines)."""
        return verdict_lines(self)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON data (verdict_data)."""
        return verdict_data(self)


def pair_order(index: int) -> tuple[int, int]:
    """Which stack runs first in pair `index` (0-based): A B, then B A, alternately."""
    return (0, 1) if index % 2 == 0 else (1, 0)


def dry_run_lines(stacks: Sequence[LoadedStack], rule: sequential.Rule) -> list[str]:
    """What --until-verdict would do, for --dry-run: the stacks, the order of their runs, the stopping rule."""
    a, b = (f"{s.stack.name}" + (f" ({s.file})" if s.file else "") for s in stacks)
    return [f"# A = {a}; B = {b}",
            f"# runs in pairs on the same hosts, alternating the order: pair 1 A then B, pair 2 B then A, pair 3 A "
            f"then B, ...; at most {rule.max_pairs} pairs",
            f"# after every complete pair from pair {rule.first} on: a sequential test on the pairs' log-ratios "
            f"({rule.spending} alpha spending, {rule.confidence:.0%} confidence, threshold {rule.threshold:.0%}) "
            "stops at faster, slower or equivalent"
            + (f"; from pair {sequential.MIN_ADJUSTED} on, adjusted on the other work recorded around each run"
               if rule.adjust else "")]


def until_verdict(stacks: Sequence[LoadedStack], inventory: Inventory, spec: SweepSpec, options: BenchOptions,
                  store: Store, verdict: VerdictOptions | None = None, progress: object = None) -> VerdictResult:
    """Run A/B pairs of one point until the sequential rule decides or the budget is spent (module docstring)."""
    verdict = verdict or VerdictOptions()
    rule = verdict.rule
    if len(stacks) != 2:
        raise InputError(f"--until-verdict compares two stacks; {len(stacks)} given",
                         hint="give --stack OLD --stack NEW")
    if options.resume:
        raise InputError("--until-verdict does not resume: every invocation is its own sequential test",
                         hint="run it again without --resume (earlier pairs stay in the store)")
    out = as_progress(progress)
    options = replace(options, repeats=rule.max_pairs)  # the sweep id names the plan: one point, up to N pairs
    loaded, sweeps = admitted_sweeps(list(stacks), inventory, spec, options, store)
    if len(sweeps[0].points) != 1:
        raise InputError(f"--until-verdict decides one point at a time; these flags make {len(sweeps[0].points)}",
                         hint="give one value each of --workers, --model, --batch-size, ...")
    point = sweeps[0].points[0]
    if not KINDS.get(kind_of(point.workload)).sequential:
        raise InputError(f"--until-verdict compares throughput; the {point.workload} workload measures something "
                         "else", hint="use --repeats N and `repro compare`")
    runs = start_runs(loaded, sweeps, inventory, spec, options, store, out)
    group = "-".join(r.sweep.id.removeprefix("sw-")[:6] for r in runs) + "-" + new_id().split("-")[-1]
    started = time.monotonic()
    evidence: list[PairEvidence] = []
    decision = sequential.decide([], rule)
    stopped = "max pairs"
    last_pair = 0.0
    with conditions_sampler(runs) as sampler:
        for run in runs:
            run.sampler = sampler
        for i in range(rule.max_pairs):
            elapsed = time.monotonic() - started
            if verdict.max_time is not None and elapsed + last_pair > verdict.max_time:
                stopped = "max time"
                break
            begun = time.monotonic()
            pair = _run_pair(runs, i, group, rule, out)
            last_pair = time.monotonic() - begun
            evidence.append(_evidence(pair, i, verdict.warmup))
            final = i + 1 == rule.max_pairs
            decision = _decide(evidence, rule, final=final)
            out.message(_progress_line(evidence[-1], decision, rule))
            if decision.decided:
                stopped = "decided"
                break
            recent = evidence[-FAILED_PAIRS_IN_A_ROW:]
            if len(recent) == FAILED_PAIRS_IN_A_ROW and all(p.ratio is None for p in recent):
                stopped = "failing"
                break
    if not decision.decided:
        decision = _decide(evidence, rule, final=True)
    bench_s = sum(r.duration_s or 0.0 for p in evidence for r in (p.old, p.new))
    ok = [r for p in evidence for r in (p.old, p.new) if r.status == "ok" and r.duration_s]
    advice = repetition.steps_worth([metrics.global_step_times(r, verdict.warmup) for r in ok],
                               [r.duration_s or 0.0 for r in ok])
    return VerdictResult(decision, tuple(evidence), stopped, time.monotonic() - started, bench_s,
                         (loaded[0].stack.name, loaded[1].stack.name), (runs[0].sweep.id, runs[1].sweep.id), advice)


def _run_pair(runs: list, index: int, group: str, rule: sequential.Rule, out: Progress) -> list[RunRecord]:
    """Both runs of pair `index`, in its order; returns [A's record, B's record]."""
    got: dict[int, RunRecord] = {}
    for n, k in enumerate(pair_order(index)):
        run = runs[k]
        point = run.sweep.points[0]
        label = f"[pair {index + 1}/{rule.max_pairs}, {'AB'[k]}] {run.loaded.stack.name}"
        run.point(point, index, label, 2 * index + n + 1, 2 * rule.max_pairs, pair=f"{group}-0-{index}")
        got[k] = run.records[-1]
    return [got[0], got[1]]


def _decide(evidence: Sequence[PairEvidence], rule: sequential.Rule, *, final: bool) -> sequential.Decision:
    """The rule on the complete pairs, adjusted on their runs' other work where every one of them recorded it."""
    complete = [p for p in evidence if p.ratio is not None and p.ratio > 0]
    d = sequential.log_ratios([(1.0, p.ratio) for p in complete])
    x = [around(p.new) - around(p.old) for p in complete if around(p.new) is not None and around(p.old) is not None]
    return sequential.decide(d, rule, final=final, covariate=x if rule.adjust and len(x) == len(d) else None)


def _evidence(pair: list[RunRecord], index: int, warmup: str) -> PairEvidence:
    a, b = (metrics.throughput(r, warmup) for r in pair)
    ratio = b / a if a and b else None
    return PairEvidence(index + 1, "AB"[pair_order(index)[0]], pair[0], pair[1], ratio)


def _progress_line(pair: PairEvidence, decision: sequential.Decision, rule: sequential.Rule) -> str:
    what = f"B/A {pair.ratio:.3f}" if pair.ratio is not None else "incomplete (a run failed)"
    if decision.low is None or decision.high is None:
        so_far = f"{decision.pairs} complete pair(s); the first look is after {rule.first}"
    else:
        so_far = f"so far {decision.ratio:.3f} [{decision.low:.3f}, {decision.high:.3f}] over {decision.pairs} pairs"
    word = "continuing" if decision.verdict == sequential.CONTINUE else decision.verdict
    return f"pair {pair.index}: {what}; {so_far}: {word}"


def verdict_options(*, max_pairs: int | None = None, max_time: float | None = None, threshold: float | None = None,
                    confidence: float | None = None, warmup: str = steady.FIXED) -> VerdictOptions:
    """The sequential rule and budget of --until-verdict, checked (defaults where a value is not given)."""
    from repro.pipeline import DEFAULT_MAX_PAIRS
    from repro.pipeline.compare import levels

    threshold, confidence = levels(threshold, confidence)
    pairs = max_pairs or DEFAULT_MAX_PAIRS
    if pairs < sequential.FIRST_LOOK:
        raise InputError(f"--max-pairs: at least {sequential.FIRST_LOOK} (the first look of the test), found {pairs}")
    if pairs > 500:
        raise InputError(f"--max-pairs: at most 500, found {pairs}")
    rule = sequential.Rule(max_pairs=pairs, confidence=confidence, threshold=threshold)
    return VerdictOptions(rule=rule, max_time=max_time, warmup=warmup)


# -- the report --------------------------------------------------------------------------------------------------

def verdict_lines(result: VerdictResult) -> list[str]:
    """The verdict of --until-verdict, how long it took, and every pair it rests on."""
    d = result.decision
    a, b = result.stacks
    if d.verdict in (sequential.FASTER, sequential.SLOWER) and d.ratio:
        factor = d.ratio if d.ratio >= 1 else 1 / d.ratio
        said = f"{b} is {factor:.2f}x {d.verdict} than {a}"
    elif d.verdict == sequential.EQUIVALENT:
        said = f"{b} and {a} are equivalent within {d.threshold:.0%}"
    else:
        said = f"undecided ({result.stopped.replace('max', 'budget spent: max')})" if result.stopped != "decided" \
            else "undecided"
    interval = f"; B/A {d.ratio:.3f}, {d.confidence:.0%} sequential interval [{d.low:.3f}, {d.high:.3f}]" \
        if d.ratio is not None and d.low is not None and d.high is not None else ""
    lines = [f"\nverdict: {said}{interval}",
             f"time to verdict: {len(result.pairs)} pair(s) ({result.failed_pairs} incomplete), wall time "
             f"{result.wall_s / 60:.1f} min, benchmark time {result.bench_s / 60:.1f} min",
             *_steps_line(result.steps),
             "evidence (every pair, in the order run):"]
    for p in result.pairs:
        ratio = f"B/A {p.ratio:.3f}" if p.ratio is not None else "incomplete: " + "; ".join(
            f"{r.stack.name} {r.status}: {r.failure}" for r in (p.old, p.new) if r.status != "ok")
        first, second = (p.old, p.new) if p.first == "A" else (p.new, p.old)
        lines.append(f"  pair {p.index}: {first.stack.name} {first.id} then {second.stack.name} {second.id}: {ratio}")
    return lines


def _steps_line(advice: repetition.StepsAdvice | None) -> list[str]:
    """Kalibera and Jones' steps per run, from the runs just made (none without an estimate)."""
    if advice is None:
        return []
    cost = f"a run's start costs {advice.start_s:.1f} s, a step {advice.step_s:.3f} s"
    if advice.steps is None:
        return [f"steps per run: runs differ no more than their steps suggest ({cost}): longer runs and fewer "
                "pairs would do (Kalibera and Jones 2013)"]
    return [f"steps per run worth measuring (Kalibera and Jones 2013): about {advice.steps} ({cost})"]


def _run_dict(record: RunRecord) -> dict[str, Any]:
    return {"stack": record.stack.name, "id": record.id, "status": record.status, "failure": record.failure}


def verdict_data(result: VerdictResult) -> dict[str, Any]:
    """The verdict as JSON data (docs/statistics.md, "The verdict as JSON")."""
    d, s = result.decision, result.steps
    return {"format": "repro.verdict/1", "a": result.stacks[0], "b": result.stacks[1],
            "sweep_ids": list(result.sweep_ids), "verdict": d.verdict, "stopped": result.stopped,
            "ratio": d.ratio, "low": d.low, "high": d.high, "confidence": d.confidence, "threshold": d.threshold,
            "pairs_run": len(result.pairs), "incomplete_pairs": result.failed_pairs, "wall_s": result.wall_s,
            "bench_s": result.bench_s,
            "steps": None if s is None else {"steps": s.steps, "start_s": s.start_s, "step_s": s.step_s},
            "pairs": [{"pair": p.index, "first": p.first, "ratio": p.ratio, "a": _run_dict(p.old),
                       "b": _run_dict(p.new)} for p in result.pairs]}
