"""`repro bench --stack A --stack B --until-verdict`: its options are checked before anything starts, its dry
run says which stack each command is and in which order they run, and its report lists every pair."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from repro.cli import main
from repro.cli.bench_cmds import duration, verdict_lines
from repro.pipeline.verdict import PairEvidence, VerdictResult, _decide, pair_order
from repro.results import conditions as cond
from repro.results import sequential
from tests.unit import real_steps

ROOT = Path(__file__).resolve().parents[2]
LOCAL = str(ROOT / "inventories" / "localhost")


@pytest.fixture
def two_stacks(tmp_path) -> list[str]:
    """Two manifests of the same software under two names (an A/A pair the host runtime accepts)."""
    out = []
    for name in ("aa-one", "aa-two"):  # an env entry each: the same software, two content hashes
        text = (ROOT / "stacks" / "cpu-tf215.yaml").read_text() + f"env:\n  REPRO_AA_COPY: {name}\n"
        (tmp_path / f"{name}.yaml").write_text(text)
        out += ["--stack", str(tmp_path / f"{name}.yaml")]
    return out


def test_interleaving_a_stack_with_an_identical_copy_is_refused(tmp_path, capsys):
    for name in ("one", "two"):
        shutil.copy(ROOT / "stacks" / "cpu-tf215.yaml", tmp_path / f"{name}.yaml")
    code = main(["bench", "--stack", str(tmp_path / "one.yaml"), "--stack", str(tmp_path / "two.yaml"), "--hosts",
                 LOCAL, "--dry-run", "--store", str(tmp_path / "s")])
    err = capsys.readouterr().err
    assert code == 2 and "have the same content" in err and "an `env:` entry each" in err


def test_the_dry_run_of_until_verdict_names_the_stacks_their_alternating_order_and_the_rule(two_stacks, tmp_path,
                                                                                           capsys):
    code = main(["bench", *two_stacks, "--hosts", LOCAL, "--until-verdict", "--max-pairs", "12", "--dry-run",
                 "--store", str(tmp_path / "s")])
    out = capsys.readouterr().out
    assert code == 0
    assert "# A = aa-one" in out and "B = aa-two" in out
    assert "pair 1 A then B, pair 2 B then A" in out and "at most 12 pairs" in out
    assert "pocock alpha spending, 95% confidence, threshold 2%" in out
    assert out.index("# A: aa-one") < out.index("# B: aa-two") and out.count("mpirun") == 2
    assert not (tmp_path / "s" / "runs").exists()


def test_the_dry_run_of_an_interleaved_sweep_says_which_stack_each_plan_is_and_when_it_runs(two_stacks, tmp_path,
                                                                                          capsys):
    assert main(["bench", *two_stacks, "--hosts", LOCAL, "--workers", "1,2", "--repeats", "2", "--dry-run",
                 "--store", str(tmp_path / "s")]) == 0
    labels = [line for line in capsys.readouterr().out.splitlines() if line.startswith("# stack")]
    assert labels[0].startswith("# stack aa-one") and "point 1 of 2: runs 1, 3 of 8" in labels[0]
    assert labels[1].startswith("# stack aa-two") and "point 1 of 2: runs 2, 4 of 8" in labels[1]
    assert "runs 1st of 2 stacks (aa-one then aa-two)" in labels[0] and "point 2 of 2: runs 6, 8 of 8" in labels[3]


@pytest.mark.parametrize(("extra", "says"), [
    (["--max-pairs", "5"], "--max-pairs and --max-time are budgets of --until-verdict"),
    (["--until-verdict", "--max-pairs", "2"], "--max-pairs: at least 3"),
    (["--until-verdict", "--max-time", "soon"], "--max-time"),
    (["--until-verdict", "--threshold", "1.5"], "--threshold: expected a fraction"),
    (["--until-verdict", "--workers", "1,2"], "--until-verdict decides one point at a time"),
])
def test_bad_until_verdict_options_are_refused_before_anything_starts(extra, says, two_stacks, tmp_path, capsys):
    try:
        code = main(["bench", *two_stacks, "--hosts", LOCAL, *extra, "--dry-run", "--store", str(tmp_path / "s")])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err, err


def test_one_stack_is_not_enough_for_until_verdict(tmp_path, capsys):
    code = main(["bench", "--stack", str(ROOT / "stacks" / "cpu-tf215.yaml"), "--hosts", LOCAL, "--until-verdict",
                 "--dry-run", "--store", str(tmp_path)])
    assert code == 2 and "--until-verdict compares two stacks; 1 given" in capsys.readouterr().err


def test_durations_take_units():
    assert duration("90") == 90 and duration("90s") == 90 and duration("20m") == 1200 and duration("1.5h") == 5400


def test_pairs_alternate_which_stack_runs_first():
    assert [pair_order(i) for i in range(4)] == [(0, 1), (1, 0), (0, 1), (1, 0)]


def test_the_report_says_the_time_to_verdict_and_lists_every_pair_failed_ones_included():
    runs = real_steps.runs()
    a = [real_steps.record(runs[i], "aa-one", n=i) for i in range(3)]
    b = [real_steps.record(runs[i], "aa-two", n=i, scale=1.2) for i in range(3)]
    b[1] = b[1].model_copy(update={"status": "failed", "failure": "host h1 stopped answering"})
    pairs = tuple(PairEvidence(i + 1, "AB"[i % 2], a[i], b[i], None if i == 1 else 1 / 1.2) for i in range(3))
    decision = sequential.Decision(sequential.SLOWER, 2, 1 / 1.2, 0.8, 0.86, 0.95, 0.02)
    result = VerdictResult(decision, pairs, "decided", 600.0, 420.0, ("aa-one", "aa-two"), ("sw-1", "sw-2"))
    text = "\n".join(verdict_lines(result))
    assert "verdict: aa-two is 1.20x slower than aa-one; B/A 0.833, 95% sequential interval [0.800, 0.860]" in text
    assert "time to verdict: 3 pair(s) (1 incomplete), wall time 10.0 min, benchmark time 7.0 min" in text
    assert "pair 2: aa-two aa-two-1 then aa-one aa-one-1: incomplete: aa-two failed: host h1 stopped answering" in text
    assert len(result.records) == 6 and result.failed_pairs == 1


def _with_other_work(record, cores: float):
    samples = [cond.HostSample(phase=p, t=0.0, seconds=0.5, others=cores) for p in ("before", "after")]
    return record.model_copy(update={"conditions": cond.Conditions(
        hosts={"localhost": cond.HostConditions(cpus=2, samples=samples)})})


def test_the_verdict_adjusts_on_the_other_work_around_each_run_when_every_pair_recorded_it():
    run = real_steps.runs()[0]
    rng = np.random.default_rng(4)
    x = rng.normal(0.0, 0.6, 20)  # B's run had x more cores of other work around it than A's
    evidence = []
    for i, xi in enumerate(x):  # B is 5% faster at equal conditions, 20% slower per core of other work
        ratio = 1.05 * math.exp(-0.2 * xi + rng.normal(0.0, 0.01))
        old = _with_other_work(real_steps.record(run, "a", n=i), 1.0)
        new = _with_other_work(real_steps.record(run, "b", n=i), 1.0 + xi)
        evidence.append(PairEvidence(i + 1, "A", old, new, ratio))
    rule = sequential.Rule(max_pairs=40)
    adjusted = _decide(evidence, rule, final=False)
    assert adjusted.verdict == sequential.FASTER and abs(adjusted.ratio - 1.05) < 0.01
    plain = _decide(evidence, sequential.Rule(max_pairs=40, adjust=False), final=False)
    assert plain.high - plain.low > 5 * (adjusted.high - adjusted.low)
    bare = [*evidence[:-1], PairEvidence(20, "B", real_steps.record(run, "a", n=99), evidence[-1].new,
                                         evidence[-1].ratio)]  # one run without conditions: no adjustment
    assert _decide(bare, rule, final=False).high - _decide(bare, rule, final=False).low == pytest.approx(
        plain.high - plain.low, rel=0.2)
