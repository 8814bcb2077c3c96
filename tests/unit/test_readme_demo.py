"""The README's quick-start sample is what scripts/demo.sh's job prints: written by scripts/readme-sample.sh between
markers, with the columns the scaling table has now and the runs the demo makes."""

from __future__ import annotations

import re
from pathlib import Path

from repro.compare.kinds.throughput.sweep import scaling_document
from repro.results import metrics
from tests.unit import real_steps

ROOT = Path(__file__).resolve().parents[2]


def _block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- demo-output: written by scripts/readme-sample\.sh.*?-->\n```\n(.*?)```\n<!-- /demo-output -->",
                  text, re.S)
    assert m, "README.md has no demo-output block written by scripts/readme-sample.sh"
    return m.group(1).splitlines()


def test_the_readme_sample_has_the_scaling_tables_columns_and_the_demos_runs():
    lines = _block()
    header = next(line for line in lines if line.startswith("workers"))
    columns = re.split(r"\s{2,}", header.strip())
    records = [real_steps.record(r, "cpu", n=i) for i, r in enumerate(real_steps.runs(1)[:2])]
    (table,) = scaling_document(metrics.scaling(metrics.points(records))).tables
    known = {*table.headers, "hosts", "±", "across-node eff", "failed", "notes"}
    assert set(columns) <= known and columns[0] == "workers", columns
    demo = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    repeats = re.search(r"--repeats (\d+)", demo)
    assert repeats and int(repeats.group(1)) >= 2  # a verdict needs 2 runs a side
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[lines.index(header) + 2:]
            if re.match(r"\s+\d", line)]
    assert [r[0] for r in rows] == ["1", "2"]  # the demo's --workers 1,2
    assert all(r[columns.index("runs")] == repeats.group(1) for r in rows)
