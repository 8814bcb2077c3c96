"""Secrets never reach disk or output: redaction by key name and by value shape (pure).

Everything repro writes or prints that can hold a user's values goes through here: a record's manifest,
environment, command, the workload's report and log tail; an image lock; dry runs; comparisons.

A secret is replaced by `<redacted:XXXXXX>`, where XXXXXX is a short fingerprint (24 bits of a salted
SHA-256). It is too short to confirm a guess of the secret with any confidence, yet lets `repro compare`
say that a secret changed between two stacks ("env.DB_PASSWORD changed (value redacted)") without
either value ever being stored.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

# names of variables and keys that hold secrets (NCCL_IB_HCA and friends do not match)
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|PASS$|_PASS_|KEY|CREDENTIAL|AUTH|COOKIE|"
                          r"PRIVATE|SIGNATURE)", re.IGNORECASE)
_NOT_SECRET = re.compile(r"(_FILE|_PATH|_DIR|_FILES)$|^(HOROVOD_|NCCL_|OMPI_|TF_|OMP_|KMP_)", re.IGNORECASE)
# value shapes: credentials in URLs, well-known token formats, secrets in query strings and bearer headers
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s:<>]+(?::[^@\s/<>]*)?)@")
_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|hf_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}|sk-[A-Za-z0-9_-]{20,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})")
_QUERY = re.compile(r"(?P<key>[?&;](?:access_token|token|api_key|apikey|key|password|passwd|secret|sig|signature)=)"
                    r"(?P<value>[^&;#\s<>]+)", re.IGNORECASE)
_BEARER = re.compile(r"(?P<key>\b(?:Bearer|Basic|token)\s+)(?P<value>[A-Za-z0-9._~+/=-]{12,})")
_MARKER = re.compile(r"<redacted:[0-9a-f]{6}>")
_SALT = b"repro-redacted:"


def fingerprint(value: str) -> str:
    """24 bits of a salted SHA-256: enough to tell two secrets apart, too little to confirm a guess."""
    return hashlib.sha256(_SALT + value.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def marker(value: str) -> str:
    """What replaces a secret."""
    return f"<redacted:{fingerprint(value)}>"


def is_redacted(value: Any) -> bool:
    """Whether a value (or part of it) was redacted."""
    return isinstance(value, str) and bool(_MARKER.search(value))


def is_secret_name(name: str) -> bool:
    """Whether a variable or key of this name holds a secret (by name alone)."""
    return bool(_SECRET_NAME.search(name)) and not _NOT_SECRET.search(name)


def redact_text(text: str) -> str:
    """Text with secrets of a known shape replaced: URL credentials, token formats, query secrets, bearers."""
    if not text or _MARKER.fullmatch(text):
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{marker(m['userinfo'])}@", text)
    text = _TOKENS.sub(lambda m: marker(m.group(0)), text)
    text = _QUERY.sub(lambda m: f"{m['key']}{marker(m['value'])}", text)
    return _BEARER.sub(lambda m: f"{m['key']}{marker(m['value'])}", text)


def redact_value(name: str, value: Any) -> Any:
    """One named value: wholly replaced when its name says secret, else its secret-shaped parts."""
    if isinstance(value, str):
        return marker(value) if is_secret_name(name) and value and not _MARKER.fullmatch(value) else redact_text(value)
    if is_secret_name(name) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return marker(str(value))
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
    """An argv with NAME=VALUE secrets (as in `-x`, `--env`, `env K=V`) and secret-shaped values replaced."""
    out = []
    for arg in argv:
        name, sep, value = arg.partition("=")
        if sep and re.fullmatch(r"-{0,2}[A-Za-z_][A-Za-z0-9_.-]*", name):
            arg = f"{name}={redact_value(name.lstrip('-'), value)}"
        else:
            arg = redact_text(arg)
        out.append(arg)
    return out
