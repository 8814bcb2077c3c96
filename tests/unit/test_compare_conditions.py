"""compare judges the conditions (repro.compare.conditions): unpaired sides measured under different conditions
give "conditions differed", never faster/slower; interleaved pairs are compared paired whatever the
conditions; a side's drifting runs are warned about; the interleaved command is printed.

The records keep real step series (tests/data/steps): invocations 1-4 of the fixture ran at a load of about 3
on the 2-core machine, invocations 5-6 at about 16 (its "measured" block); their conditions are built to say
so (other work about 0.5 and 1.7 cores).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from repro.compare import Options, compare
from repro.compare.conditions import instability, judge
from repro.compare.render import render
from repro.pipeline.suggest import suggest, suggester
from repro.results import conditions as cond
from repro.results import stats
from repro.results.store import Store
from tests.unit import real_steps

ROOT = Path(__file__).resolve().parents[2]
RUNS = real_steps.runs(workers=1)
CALM = [r for r in RUNS if r["invocation"] <= 4]
BUSY = [r for r in RUNS if r["invocation"] >= 5]


def conditions(others: float, load: float, rng: np.random.Generator, host: str = "localhost") -> cond.Conditions:
    """Samples of one run: other work around `others` cores (10% noise), the load average around `load`."""
    jitter = lambda x: float(x * np.exp(0.1 * rng.standard_normal()))  # noqa: E731
    samples = [cond.HostSample(phase="before", t=0.0, seconds=0.5, load1=jitter(load), others=jitter(others))]
    samples += [cond.HostSample(phase="during", t=5.0 * (i + 1), seconds=5.0, load1=jitter(load),
                                others=jitter(others), steal=0.0, mhz=2596.0) for i in range(3)]
    samples.append(cond.HostSample(phase="after", t=16.0, seconds=0.5, load1=jitter(load), others=jitter(others)))
    return cond.Conditions(hosts={host: cond.HostConditions(cpus=2, samples=samples)})


def records(runs, name: str, rng, *, others: float, load: float, scale: float = 1.0, pairs: bool = False,
            file: str | None = None):
    out = []
    for i, run in enumerate(runs):
        rec = real_steps.record(run, name, n=i, scale=scale, pair=f"p{i}" if pairs else None)
        stack = rec.stack.model_copy(update={"file": file or f"stacks/{name}.yaml"})
        out.append(rec.model_copy(update={"conditions": conditions(others, load, rng), "stack": stack,
                                          "created": f"2026-11-22T16:{10 + i:02d}:00+00:00"}))
    return out


def row(old, new, **options):
    (r,) = compare(old, new, Options(**options)).throughput
    return r


def test_a_a_sweeps_twenty_minutes_apart_under_a_changed_load_give_conditions_differed_not_slower():
    rng = np.random.default_rng(1)
    old = records(CALM[:6], "a", rng, others=0.5, load=3.0)
    new = records(BUSY, "b", rng, others=1.7, load=16.0)
    bare = row([r.model_copy(update={"conditions": None}) for r in old],
               [r.model_copy(update={"conditions": None}) for r in new])
    # the same stack measured 25% slower: before, only the runs' own spread kept that from a verdict
    assert bare.ratio.ratio < 0.8 and bare.ratio.verdict != stats.CONDITIONS
    judged = row(old, new)
    assert judged.ratio.verdict == stats.CONDITIONS and not judged.regression
    assert "conditions differed (other work 0.5 vs 1.7 cores, load 3.0 vs 15.8 on localhost)" in judged.ratio.note


def test_non_interleaved_sides_with_a_drift_between_them_never_get_a_verdict():
    rng = np.random.default_rng(2)
    verdicts = []
    for _ in range(30):
        picks = rng.permutation(len(CALM))
        drift = float(np.exp(rng.uniform(0.03, 0.3)))  # the machine got 3-35% slower between the sides
        old = records([CALM[i] for i in picks[:3]], "a", rng, others=0.4, load=3.0)
        new = records([CALM[i] for i in picks[3:6]], "b", rng, others=0.4 + rng.uniform(0.5, 1.5), load=9.0,
                      scale=drift)
        verdicts.append(row(old, new).ratio.verdict)
    assert set(verdicts) == {stats.CONDITIONS}, verdicts


def test_the_same_conditions_on_both_sides_keep_the_ordinary_verdict():
    rng = np.random.default_rng(3)
    old = records(CALM[:3], "a", rng, others=0.5, load=3.0)
    new = records(CALM[3:6], "b", rng, others=0.5, load=3.0, scale=1 / 1.5)
    assert row(old, new).ratio.verdict == stats.FASTER


def test_on_a_saturated_host_a_higher_load_is_a_difference_though_other_work_cannot_grow():
    # both CPUs busy on both sides (other work is what the run leaves: about 1 core), but 8 more tasks wanted them
    rng = np.random.default_rng(9)
    old = records(CALM[:3], "a", rng, others=1.0, load=18.0)
    new = records(CALM[3:6], "b", rng, others=1.0, load=26.0, scale=1.3)
    judged = judge(old, new)
    assert len(judged.differed) == 1 and judged.differed[0].startswith("load 1") and "vs 2" in judged.differed[0]
    assert row(old, new).ratio.verdict == stats.CONDITIONS


def test_interleaved_pairs_are_compared_paired_whatever_the_conditions():
    rng = np.random.default_rng(4)
    old = records(CALM[:3], "a", rng, others=0.3, load=3.0, pairs=True)
    new = [r.model_copy(update={"conditions": conditions(1.6, 14.0, rng)})
           for r in records(CALM[:3], "b", rng, others=0.3, load=3.0, scale=1 / 1.10, pairs=True)]
    r = row(old, new)
    assert r.ratio.method == stats.PAIRED and r.ratio.verdict == stats.FASTER


def test_conditions_that_moved_during_one_side_are_named():
    rng = np.random.default_rng(5)
    old = records(CALM[:3], "a", rng, others=0.4, load=3.0)
    new = records(CALM[3:5], "b", rng, others=0.4, load=3.0) + records(CALM[5:6], "b", rng, others=2.0, load=12.0)
    judged = judge(old, new)
    assert any("moved" in d and "during NEW on localhost" in d for d in judged.differed), judged


def test_a_side_without_recorded_conditions_is_said_and_not_judged():
    rng = np.random.default_rng(6)
    old = [r.model_copy(update={"conditions": None}) for r in records(CALM[:3], "a", rng, others=0.4, load=3.0)]
    new = records(CALM[3:6], "b", rng, others=2.0, load=12.0)
    judged = judge(old, new)
    assert judged.differed == () and judged.unrecorded == "conditions not recorded on OLD"


def test_instability_warnings_for_spread_and_drift_in_run_order():
    rng = np.random.default_rng(7)
    spread = records(RUNS[12:18], "a", rng, others=1.0, load=10.0)  # invocations 5-6: 104 to 208 images/sec
    assert any("seems unstable" in w for w in instability(spread, "OLD"))
    drifting = records(CALM[:5], "a", rng, others=0.4, load=3.0)
    level = np.mean(CALM[0]["ranks"][0]["step_times"])
    drifting = [records([run], "a", rng, others=0.4, load=3.0,
                        scale=level / np.mean(run["ranks"][0]["step_times"]) * (1 + 0.05 * i))[0]
                .model_copy(update={"created": f"2026-11-22T16:{10 + i:02d}:00+00:00"})
                for i, run in enumerate(CALM[:5])]
    warnings = instability(drifting, "NEW")
    assert any("drifted by -" in w for w in warnings), warnings
    assert instability(records(CALM[:1], "a", rng, others=0.4, load=3.0), "OLD") == ()


def test_compare_of_unpaired_sides_prints_the_exact_interleaved_command(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the records name their manifests as bench was given them: relative to the checkout
    rng = np.random.default_rng(8)
    old = records(CALM[:3], "a", rng, others=0.5, load=3.0, file="stacks/cpu-tf215.yaml")
    new = records(BUSY[:3], "b", rng, others=1.7, load=16.0, file="stacks/cpu-tf212.yaml")
    command = ("repro bench --stack stacks/cpu-tf215.yaml --stack stacks/cpu-tf212.yaml --runtime host "
               "--workload cnn --model resnet20 --batch-size 8 --workers 1 --until-verdict")
    store = Store(tmp_path / "store")
    assert suggest(old, new, store=store) == (command, "")
    assert suggest(old, new, store=store, store_flag="/tmp/s")[0].endswith("--until-verdict --store /tmp/s")
    text = render(compare(old, new, Options(), suggest=suggester(store, None)), "table")
    assert "conditions differed" in text and command in text.replace("\n  ", " ")
    paired = records(CALM[:3], "a", rng, others=0.5, load=3.0, pairs=True)
    assert compare(paired, records(CALM[:3], "b", rng, others=0.5, load=3.0, pairs=True),
                   suggest=suggester(store, None)).interleave is None
