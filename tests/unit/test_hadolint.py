"""The rules docker/hadolint.yaml lets repro's Dockerfiles break are the documented few. hadolint itself runs
once per test run, in scripts/lint.sh's lint stage: on every Dockerfile repro renders (tests/lint_inputs.py:
each shipped stack with each variant of the render options, and a rebuilt CUDA base), and without the
configuration, where it must report each ignored rule (so the exceptions matter)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests import lint_inputs

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "docker" / "hadolint.yaml"


def test_the_exceptions_are_the_documented_few():
    ignored = yaml.safe_load(CONFIG.read_text())["ignored"]
    assert sorted(ignored) == ["DL3003", "DL3008", "DL3059", "SC2046"]
    design = (ROOT / "docs" / "design.md").read_text()
    assert all(rule in design for rule in ignored)


def test_the_lint_stage_gets_every_stack_and_variant():
    names = lint_inputs.rendered()
    assert set(lint_inputs.STACKS) <= {p.stem for p in (ROOT / "stacks").glob("*.yaml")}
    expected = {f"{s}-{v}.Dockerfile" for s in lint_inputs.STACKS for v in lint_inputs.VARIANTS}
    assert set(names) == expected | {"tf114-cuda10.base.Dockerfile"}
    assert all(any(line.startswith("FROM ") for line in text.splitlines()) for text in names.values())
