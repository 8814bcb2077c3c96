"""Secrets never reach disk or output: redaction by key name and by value shape (pure).

Everything repro writes or prints that can hold a user's values goes through here: a record's manifest,
environment, command, the workload's report and log tail; an image lock; dry runs; comparisons;
ansible-runner's artifacts. What counts as a secret (the rule of docs/secrets.md) is in repro.secrets.

A secret is replaced by `<redacted:XXXXXX>`, where XXXXXX is a short fingerprint (24 bits of a salted
SHA-256). It is too short to confirm a guess of the secret with any confidence, yet lets `repro compare`
say that a secret changed between two stacks ("env.DB_PASSWORD changed (value redacted)") without
either value ever being stored.
"""

from __future__ import annotations

import re
from typing import Any

from repro.secrets import MARKER as _MARKER
from repro.secrets import fingerprint, is_secret_name, marker, redact_text

__all__ = ["fingerprint", "is_redacted", "is_secret_name", "marker", "redact_argv", "redact_env", "redact_text",
           "redact_tree", "redact_value"]


def is_redacted(value: Any) -> bool:
    """Whether a value (or part of it) was redacted."""
    return isinstance(value, str) and bool(_MARKER.search(value))


def redact_value(name: str, value: Any) -> Any:
    """One named value: wholly replaced when its name says secret, else its secret-shaped parts."""
    if isinstance(value, str):
        return marker(value) if is_secret_name(name) and value and not _MARKER.fullmatch(value) else redact_text(value)
    if is_secret_name(name) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return marker(str(value))
    if is_secret_name(name) and isinstance(value, (dict, list, tuple)) and value:
        return marker(repr(value))  # a structured secret (a list of passwords, a credentials mapping)
    return redact_tree(value)


def redact_tree(data: Any) -> Any:
    """A JSON-like tree with every secret replaced (keys by name, strings by shape), recursively."""
    if isinstance(data, dict):
        return {k: redact_value(str(k), v) for k, v in data.items()}
    if isinstance(data, list):
        return [redact_tree(v) for v in data]
    if isinstance(data, tuple):
        return tuple(redact_tree(v) for v in data)
    if isinstance(data, str):
        return redact_text(data)
    return data


def redact_env(env: dict[str, str]) -> dict[str, str]:
    """An environment with secrets replaced (by variable name, and by value shape)."""
    return {name: redact_value(name, value) for name, value in env.items()}


def redact_argv(argv: list[str]) -> list[str]:
    """An argv with NAME=VALUE secrets (as in `-x`, `--env`, `env K=V`) and secret-shaped values replaced;
    the value after an option whose name says secret (`--password X`, `--token X`) too."""
    out: list[str] = []
    secret_next = False
    for arg in argv:
        name, sep, value = arg.partition("=")
        if secret_next and not arg.startswith("-") and arg and not _MARKER.fullmatch(arg):
            arg = marker(arg)
        elif sep and re.fullmatch(r"-{0,2}[A-Za-z_][A-Za-z0-9_.-]*", name):
            arg = f"{name}={redact_value(name.lstrip('-'), value)}"
        else:
            arg = redact_text(arg)
        secret_next = not sep and arg.startswith("--") and is_secret_name(arg[2:])
        out.append(arg)
    return out
