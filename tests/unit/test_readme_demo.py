"""The README's quick-start sample is what scripts/demo.sh's job prints: written by scripts/readme-sample.sh between
markers; the job compares two stacks interleaved until a verdict, and ends with the verdict and the
`repro compare` line that prints it again."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from repro.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DEMO = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")


def _block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- demo-output: written by scripts/readme-sample\.sh.*?-->\n```\n(.*?)```\n<!-- /demo-output -->",
                  text, re.S)
    assert m, "README.md has no demo-output block written by scripts/readme-sample.sh"
    return m.group(1).splitlines()


def test_the_demo_compares_two_stacks_interleaved_until_a_verdict():
    bench = re.search(r"^repro bench (.*?)\"\$@\"$", DEMO.replace("\\\n", " "), re.M | re.S)
    assert bench, "scripts/demo.sh has no `repro bench ...` line"
    line = bench.group(1).replace('"stacks/$old.yaml"', "stacks/cpu-tf215.yaml").replace(
        '"stacks/$new.yaml"', "stacks/cpu-tf215-xla.yaml")
    args = build_parser().parse_args(["bench", *shlex.split(line)])
    assert len(args.stack) == 2 and args.until_verdict and args.max_pairs
    from repro.manifest import load_stack

    pairs = re.findall(r"old=(\S+) new=(\S+)", DEMO)
    assert len(pairs) == 2  # TensorFlow's and PyTorch's
    for old, new in pairs:  # each pair exists and differs (interleaving a stack with itself is refused)
        assert load_stack(ROOT / "stacks" / f"{old}.yaml").hash != load_stack(ROOT / "stacks" / f"{new}.yaml").hash


def test_the_readme_sample_ends_with_the_verdict_and_the_compare_line():
    lines = _block()
    assert re.match(r"verdict: (\S+ is \d+\.\d\dx (faster|slower) than \S+|\S+ and \S+ are equivalent|undecided)",
                    lines[0]), lines[0]
    assert any(line.startswith("time to verdict: ") for line in lines)
    compare = lines[-1].split(": ", 1)[-1]
    assert compare.startswith("repro compare stacks/cpu-tf215.yaml stacks/cpu-tf215-xla.yaml"), lines[-1]
    args = build_parser().parse_args(shlex.split(compare)[1:])
    assert args.store is None  # the sample names no temporary store
