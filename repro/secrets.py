"""Secrets never reach disk or output: what counts as a secret, by name and by shape, and its redaction in texts,
trees, environments and command lines (pure; the rule docs/secrets.md states).

Everything repro writes or prints that can hold a user's values goes through here: a record's manifest,
environment, command, the workload's report and log tail; an image lock; dry runs; comparisons;
ansible-runner's artifacts. The lowest layer of repro, beside repro.errors, so that even the input boundary
(repro.inputs) can keep a value it refuses out of its error message.

A secret is replaced by `<redacted:XXXXXX>`, where XXXXXX is a short fingerprint (24 bits of a salted
SHA-256): too short to confirm a guess of the secret, yet lets `repro compare` say that a secret changed between
two stacks ("env.DB_PASSWORD changed (value redacted)") without either value ever being stored.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

# Words that make a name secret whatever its prefix: TF_VAR_db_password, TF_TOKEN_app_terraform_io, MYSQL_PWD.
_STRONG = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|(?:^|[_-])PWD$|(?:^|[_-])PW$|SSHPASS|JWT|"
                     r"CREDENTIAL|PRIVATE[_-]?KEY|"
                     r"API[_-]?KEY|ACCESS[_-]?KEY|AUTH[_-]?KEY|SESSION[_-]?KEY|WEBHOOK|(?:^|[_-])DSN$|"
                     r"CONNECTION[_-]?STRING)", re.IGNORECASE)
# Words that usually do (API_KEY, BASIC_AUTH, ...), except in the tuning variables of the stack's own libraries
# (NCCL_IB_HCA, HOROVOD_..., TF_ENABLE_ONEDNN_OPTS carry no secret and are what a comparison must show).
_WEAK = re.compile(r"(?:^|[_.-])(?:PASS|KEY|AUTH|COOKIE|PRIVATE|SIGNATURE|SIG)(?:$|[_.-])", re.IGNORECASE)
_LIBRARY = re.compile(r"^(HOROVOD_|NCCL_|OMPI_|TF_(?!VAR_|TOKEN)|OMP_|KMP_|UCX_|PMIX_|SLURM_|CUDA_|NVIDIA_)",
                      re.IGNORECASE)
# A name that says where a secret is, not what it is: its value is a path (still redacted by shape).
_LOCATION = re.compile(r"(_FILE|_PATH|_DIR|_FILES|_LOCATION)$", re.IGNORECASE)
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK", "XAUTHORITY", "KEY", "KEYS"})

# Value shapes. Credentials in a URL's userinfo (the password may hold '@': up to the last '@' before the host),
# anywhere in a text, any scheme (git+https, mysql, redis, amqp, ...).
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,30}://)(?P<userinfo>[^/@\s:<>\"'`]+"
                           r"(?::[^\s/<>\"'`]*)?|:[^\s/<>\"'`]+)@(?=[^\s@/]*(?:[\s/?#]|$))")
# Tokens of well-known formats (GitHub, GitLab, AWS, Slack, Hugging Face, PyPI, OpenAI/Anthropic, Google,
# npm, Docker Hub, Stripe, SendGrid, JWTs) and webhook URLs whose path is the secret (Slack, Discord).
_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}|xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"
    r"|hf_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}|sk-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}"
    r"|npm_[A-Za-z0-9]{36}|dckr_pat_[A-Za-z0-9_-]{20,}|(?:sk|rk)_live_[A-Za-z0-9]{20,}"
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})")
_WEBHOOK = re.compile(r"(?P<key>(?:hooks\.slack\.com/(?:services|workflows|triggers)|"
                      r"(?:discord(?:app)?\.com)/api/webhooks)/)(?P<value>[A-Za-z0-9/_-]+)", re.IGNORECASE)
_QUERY = re.compile(r"(?P<key>[?&;](?:access_token|token|api_key|apikey|key|password|passwd|secret|sig|signature|"
                    r"x-amz-signature|x-amz-security-token|code|auth)=)(?P<value>[^&;#\s<>]+)", re.IGNORECASE)
_BEARER = re.compile(r"(?P<key>\b(?:Bearer|Basic|token)\s+)(?P<value>[A-Za-z0-9._~+/=-]{12,})")
# NAME=value (or NAME: value) where NAME says secret, inside free text such as a log line or a shell command
# (also "NAME": "value" in JSON, and export NAME='value' in a shell line)
_ASSIGNMENT = re.compile(r"(?P<key>\b(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,127})[\"']?\s?[=:]\s?)"
                         r"(?:(?P<q>[\"'])(?P<quoted>[^\"'\n]+)(?P=q)|(?P<value>[^\s\"',;&|}]+))")
# Forms people paste: a private-key block (or its truncated start), `mysql -pS`, `sshpass -p S`, `curl -u user:S`,
# `docker login -p S`, `--password S` (any option whose name says secret) and netrc's `password S`.
_KEY_BLOCK = re.compile(r"-----BEGIN (?P<kind>[A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY"
                        r"( BLOCK)?-----|\Z)", re.DOTALL)
_PASTED = re.compile(
    r"(?P<key>\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n]*?\s-p)(?P<value>[^\s\-]\S*)"
    r"|(?P<key2>\bsshpass\b[^\n]*?\s-p\s*)(?P<value2>\S+)"
    r"|(?P<key3>\bdocker\s+login\b[^\n]*?\s-p\s+)(?P<value3>\S+)"
    r"|(?P<key4>(?:^|\s)(?:-u|--user|--proxy-user)[\s=]+[^\s:]+:)(?P<value4>[^\s@]+)(?=\s|$)"
    r"|(?P<key5>\b(?:login\s+\S+\s+|machine\s+\S+\s+)password\s+)(?P<value5>\S+)")
_SECRET_OPTION = re.compile(r"(?P<key>(?:^|\s)--(?P<name>[A-Za-z][A-Za-z0-9_-]{0,63})\s+)(?P<value>[^\s-]\S*)")
MARKER = re.compile(r"<redacted:[0-9a-f]{6}>")
_SALT = b"repro-redacted:"


def fingerprint(value: str) -> str:
    """24 bits of a salted SHA-256: enough to tell two secrets apart, too little to confirm a guess."""
    return hashlib.sha256(_SALT + value.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def marker(value: str) -> str:
    """What replaces a secret."""
    return f"<redacted:{fingerprint(value)}>"


def is_secret_name(name: str) -> bool:
    """Whether a variable or key of this name holds a secret (by name alone)."""
    if name.upper() in _NOT_SECRET or _LOCATION.search(name):
        return False
    if _STRONG.search(name):
        return True
    return bool(_WEAK.search(name)) and not _LIBRARY.search(name)


def is_secret(name: str, value: str) -> bool:
    """Whether a variable holds a secret: by its name, or by its value's shape whatever its name."""
    return is_secret_name(name) or redact_text(value) != value


def redact_text(text: str) -> str:
    """Text with secrets of a known shape replaced: URL credentials, token formats, webhooks, query secrets,
    bearers, and NAME=value where NAME says secret."""
    if not text or MARKER.fullmatch(text):
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{marker(m['userinfo'])}@", text)
    text = _WEBHOOK.sub(lambda m: f"{m['key']}{marker(m['value'])}", text)
    text = _TOKENS.sub(lambda m: marker(m.group(0)), text)
    text = _QUERY.sub(lambda m: f"{m['key']}{marker(m['value'])}", text)
    text = _BEARER.sub(lambda m: f"{m['key']}{marker(m['value'])}", text)
    text = _KEY_BLOCK.sub(lambda m: marker(m.group(0)), text)
    text = _PASTED.sub(_pasted, text)
    text = _SECRET_OPTION.sub(lambda m: f"{m['key']}{marker(m['value'])}" if is_secret_name(m["name"])
                              and not MARKER.fullmatch(m["value"]) else m.group(0), text)
    return _ASSIGNMENT.sub(_assignment, text)


def _pasted(m: re.Match[str]) -> str:
    for key, value in (("key", "value"), ("key2", "value2"), ("key3", "value3"), ("key4", "value4"),
                       ("key5", "value5")):
        if m[value] is not None:
            return m.group(0) if MARKER.fullmatch(m[value]) else f"{m[key]}{marker(m[value])}"
    return m.group(0)


def _assignment(m: re.Match[str]) -> str:
    value = m["quoted"] if m["q"] else m["value"]
    if not is_secret_name(m["name"]) or MARKER.search(value):
        return m.group(0)
    return f"{m['key']}{m['q'] or ''}{marker(value)}{m['q'] or ''}"


# -- applying the rule to values, trees, environments and command lines ------------------------------

def is_redacted(value: Any) -> bool:
    """Whether a value (or part of it) was redacted."""
    return isinstance(value, str) and bool(MARKER.search(value))


def redact_value(name: str, value: Any) -> Any:
    """One named value: wholly replaced when its name says secret, else its secret-shaped parts."""
    if isinstance(value, str):
        return marker(value) if is_secret_name(name) and value and not MARKER.fullmatch(value) else redact_text(value)
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
        if secret_next and not arg.startswith("-") and arg and not MARKER.fullmatch(arg):
            arg = marker(arg)
        elif sep and re.fullmatch(r"-{0,2}[A-Za-z_][A-Za-z0-9_.-]*", name):
            arg = f"{name}={redact_value(name.lstrip('-'), value)}"
        else:
            arg = redact_text(arg)
        secret_next = not sep and arg.startswith("--") and is_secret_name(arg[2:])
        out.append(arg)
    return out
