"""Secrets out of what an Ansible run leaves: the values known to be secret, scrubbed from its output, and the
redacted copy of ansible-runner's artifacts repro keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from repro.secrets import is_secret_name, marker, redact_text, redact_tree

# What repro keeps of ansible-runner's artifacts (redacted): the rest holds the caller's environment and the
# extra variables, and is never written outside a private scratch directory removed after the run.
KEPT = ("stdout", "status", "rc", "job_events")
MIN_SCRUB = 4  # shorter secret values are not searched for literally (they would blank ordinary words)


def secret_values(*trees: Any) -> frozenset[str]:
    """Every value whose key says secret in these trees (extra variables, host variables, an environment), as
    text: looked for literally in what Ansible printed, which redaction by name and shape cannot see."""
    found: set[str] = set()

    def walk(tree: Any, secret: bool) -> None:
        if isinstance(tree, dict):
            for k, v in tree.items():
                walk(v, secret or is_secret_name(str(k)))
        elif isinstance(tree, (list, tuple)):
            for v in tree:
                walk(v, secret)
        elif secret and isinstance(tree, (str, int, float)) and not isinstance(tree, bool) \
                and len(str(tree)) >= MIN_SCRUB:
            found.add(str(tree))

    for tree in trees:
        walk(tree, False)
    return frozenset(found)


def scrub(text: str, secrets: frozenset[str]) -> str:
    """Text with secrets of a known shape and every one of `secrets` replaced by its marker."""
    for value in sorted(secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, marker(value))
    return redact_text(text)


def keep_artifacts(source: Path, dest: Path, secrets: frozenset[str]) -> None:
    """Copy what is worth keeping of ansible-runner's artifacts (KEPT), every secret in them redacted."""
    if not source.is_dir():
        return
    for name in KEPT:
        path = source / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            (dest / name).write_text(scrub(text, secrets), encoding="utf-8")
        elif path.is_dir():
            (dest / name).mkdir(exist_ok=True)
            for event in sorted(path.glob("*.json")):
                try:
                    data = redact_tree(json.loads(event.read_text(encoding="utf-8")))
                except (OSError, ValueError):
                    continue
                (dest / name / event.name).write_text(scrub(json.dumps(data), secrets), encoding="utf-8")
