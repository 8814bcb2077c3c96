"""Judging the conditions two sides ran under (pure): "conditions differed" instead of a verdict, instability
warnings (the interleaved command that settles the question is repro.pipeline.suggest's: it is checked by planning
it, which needs the manifests and the inventory).

Two sides measured at different times (not interleaved) compare the stacks *and* whatever else changed on
the machine in between. Each run's record carries the conditions sampled on its hosts
(repro.results.conditions). Per host, and per condition (other work in cores, CPU steal, CPU clock, GPU SM
clock, GPU throttle reasons):

- **differ**: the sides' means differ by more than the condition's floor (a change too small to matter is
  ignored: FLOORS) *and* by more than the runs' own spread explains (Welch's t on the runs' values at the
  comparison's confidence; one run on a side: the floor alone);
- **moved**: within one side, the condition moved by more than twice its floor from run to run.

Either makes an unpaired verdict meaningless: the row's verdict becomes "conditions differed", with the
differences named ("other work 0.2 vs 1.4 cores, load 2.1 vs 11.4 on h1"). Interleaved pairs are not judged
so: both runs of a pair shared the machine's state, and the paired test cancels it.

Instability (pyperf's "the benchmark seems unstable"): a side's runs spread by more than UNSTABLE_SD, or its
figures drifted in the order they ran (a t test on the slope of the log figure against run order, 4 runs
or more).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from repro.results import conditions as cond
from repro.results import metrics, stats, steady
from repro.results.record import RunRecord

UNSTABLE_SD = 0.10  # sd of the log figures of a side's runs (pyperf warns above 10% too)
MIN_OTHERS_FLOOR = 0.25  # cores of other work: less than a quarter of a core is no difference
OTHERS_FLOOR_SHARE = 0.05  # ... nor, on big hosts, less than 5% of their CPUs
MIN_LOAD_FLOOR = 0.5  # runnable tasks (1-minute load average) ...
LOAD_FLOOR_SHARE = 0.25  # ... or a quarter of the host's CPUs, whichever is more
CLOCK_FLOOR = 0.03  # relative change of a CPU or GPU clock
STEAL_FLOOR = 0.02  # share of CPU time stolen by the hypervisor


@dataclass(frozen=True)
class Judgement:
    """What the conditions of two sides say about one aligned point."""

    differed: tuple[str, ...] = ()  # named differences and movements (empty: nothing beyond the spread)
    warnings: tuple[str, ...] = ()  # instability of a side's own runs
    unrecorded: str = ""  # a side without recorded conditions (then nothing could be judged)


@dataclass(frozen=True)
class _Metric:
    name: str
    unit: str
    value: Callable[[cond.HostConditions], float | None]
    floor: Callable[[float, int | None], float]  # (level, cpus) -> smallest difference that matters
    digits: int = 1


def _others(host: cond.HostConditions) -> float | None:
    return cond.other_work(host)


def _load(host: cond.HostConditions) -> float | None:
    s = cond.summarize(host)
    return s.load_during if s.load_during is not None else s.load_before


METRICS = (
    _Metric("other work", " cores", _others,
            lambda level, cpus: max(MIN_OTHERS_FLOOR, OTHERS_FLOOR_SHARE * (cpus or 0))),
    # on a saturated host other work cannot grow (the CPUs are all busy either way): the load average still
    # shows the demand, which the run's share of the CPUs follows
    _Metric("load", "", _load, lambda level, cpus: max(MIN_LOAD_FLOOR, LOAD_FLOOR_SHARE * (cpus or 0))),
    _Metric("CPU steal", "", lambda h: cond.summarize(h).steal, lambda level, cpus: STEAL_FLOOR, 3),
    _Metric("CPU clock", " MHz", lambda h: cond.summarize(h).mhz, lambda level, cpus: CLOCK_FLOOR * level, 0),
    _Metric("GPU SM clock", " MHz", lambda h: cond.summarize(h).gpu_sm_mhz, lambda level, cpus: CLOCK_FLOOR * level, 0),
)


# Student's t quantiles of the few distinct run counts a comparison has, once each (each is a root search)
def _values(records: Sequence[RunRecord], host: str, metric: _Metric) -> list[float]:
    out = []
    for r in records:
        hc = r.conditions.hosts.get(host) if r.conditions else None
        value = metric.value(hc) if hc is not None else None
        if value is not None and math.isfinite(value):
            out.append(float(value))
    return out


def _beyond_spread(a: list[float], b: list[float], confidence: float) -> bool:
    """Whether the means of a and b differ by more than their spread explains (Welch's t; with one value on a
    side there is no spread to compare with, and the floor alone decides)."""
    if len(a) < 2 or len(b) < 2:
        return True
    va, vb = float(np.var(a, ddof=1)) / len(a), float(np.var(b, ddof=1)) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return True
    df = (va + vb) ** 2 / ((va**2 / (len(a) - 1) if va else 0) + (vb**2 / (len(b) - 1) if vb else 0) or 1e-300)
    return abs(float(np.mean(b)) - float(np.mean(a))) / se > stats.t_quantile(0.5 + confidence / 2, max(1.0, df))


def _fmt(x: float, metric: _Metric) -> str:
    if metric.name == "CPU steal":
        return f"{x:.1%}"
    return f"{x:.{metric.digits}f}"


def _cpus(records: Sequence[RunRecord], host: str) -> int | None:
    for r in records:
        hc = r.conditions.hosts.get(host) if r.conditions else None
        if hc is not None and hc.cpus:
            return hc.cpus
    return None


def _mean_load(records: Sequence[RunRecord], host: str) -> float | None:
    loads = [x for r in records if r.conditions and (hc := r.conditions.hosts.get(host)) and (x := _load(hc))
             is not None]
    return sum(loads) / len(loads) if loads else None


def judge(old: Sequence[RunRecord], new: Sequence[RunRecord], *, confidence: float = stats.DEFAULT_CONFIDENCE,
          warmup: str = steady.FIXED) -> Judgement:
    """The conditions of one point's OLD and NEW runs (successful ones), judged as the module docstring says."""
    old = [r for r in old if r.status == "ok"]
    new = [r for r in new if r.status == "ok"]
    warnings = (*instability(old, "OLD", warmup), *instability(new, "NEW", warmup))
    missing = [side for side, rs in (("OLD", old), ("NEW", new)) if not any(r.conditions for r in rs)]
    if missing:
        return Judgement((), warnings, f"conditions not recorded on {' and '.join(missing)}" if len(missing) < 2
                         else "")
    hosts = sorted({h for r in (*old, *new) for h in (r.conditions.hosts if r.conditions else {})})
    found: list[str] = []
    for host in hosts:
        cpus = _cpus((*old, *new), host)
        load_said = False
        for metric in METRICS:
            a, b = _values(old, host, metric), _values(new, host, metric)
            if not a or not b:
                continue
            ma, mb = float(np.mean(a)), float(np.mean(b))
            floor = metric.floor(max(abs(ma), abs(mb)), cpus)
            if abs(mb - ma) > floor and _beyond_spread(a, b, confidence):
                if metric.name == "load" and load_said:
                    continue
                text = f"{metric.name} {_fmt(ma, metric)} vs {_fmt(mb, metric)}{metric.unit}"
                la, lb = _mean_load(old, host), _mean_load(new, host)
                if metric.name == "other work" and la is not None and lb is not None:
                    text += f", load {la:.1f} vs {lb:.1f}"
                    load_said = True
                found.append(f"{text} on {host}")
                continue
            for side, values in (("OLD", a), ("NEW", b)):
                if len(values) > 1 and max(values) - min(values) > 2 * floor:
                    found.append(f"{metric.name} moved {_fmt(min(values), metric)}-{_fmt(max(values), metric)}"
                                 f"{metric.unit} during {side} on {host}")
        reasons_a = _throttled(old, host)
        reasons_b = _throttled(new, host)
        if reasons_a != reasons_b and (reasons_a or reasons_b):
            found.append(f"GPU throttling {', '.join(reasons_a) or 'none'} vs {', '.join(reasons_b) or 'none'} "
                         f"on {host}")
    return Judgement(tuple(found), warnings)


def _throttled(records: Sequence[RunRecord], host: str) -> tuple[str, ...]:
    """Throttle reasons seen in every run of a side on the host (a reason in some runs only is not a side's)."""
    sets = [set(cond.summarize(hc).throttle) for r in records if r.conditions
            and (hc := r.conditions.hosts.get(host)) is not None and any(s.gpus for s in hc.samples)]
    return tuple(sorted(set.intersection(*sets))) if sets else ()


def instability(records: Sequence[RunRecord], side: str, warmup: str = steady.FIXED) -> tuple[str, ...]:
    """pyperf-style warnings about one side's own runs: too spread out, or drifting in the order they ran."""
    ordered = sorted(records, key=lambda r: r.created)
    figures = [f for r in ordered if (f := metrics.throughput(r, warmup))]
    if len(figures) < 2:
        return ()
    logs = np.log(figures)
    out = []
    sd = float(logs.std(ddof=1))
    if sd > UNSTABLE_SD:
        out.append(f"{side}: the benchmark seems unstable: its {len(figures)} runs spread by {sd:.0%} (standard "
                   f"deviation of their figures; {min(figures):,.1f} to {max(figures):,.1f})")
    if len(figures) >= 4:
        x = np.arange(len(figures), dtype=float)
        slope, intercept = np.polyfit(x, logs, 1)
        resid = logs - (slope * x + intercept)
        se = math.sqrt(float(resid @ resid) / (len(x) - 2) / float(((x - x.mean()) ** 2).sum()))
        drift = math.expm1(slope * (len(x) - 1))
        if (se == 0 or abs(slope) / se > stats.t_quantile(0.975, len(x) - 2)) and abs(drift) > stats.DEFAULT_THRESHOLD:
            out.append(f"{side}: figures drifted by {drift:+.0%} from the first run to the last, in the order they ran")
    return tuple(out)
