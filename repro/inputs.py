"""The input boundary: one strict pattern per kind of value repro accepts, and bounded reads of input files.

Every value from a manifest, an inventory or a command-line flag is checked here where it enters; code
past the boundary never re-checks it and can rely on it: no value that reaches a shell, a Dockerfile, an
ssh option or a file path holds a newline, a quote, `$`, a backtick or a leading `-` unless its kind
says so. Patterns are ASCII only and matched whole (`fullmatch`): `\\d` and `\\w` are never used, since
in Python they also match Arabic-Indic or full-width digits ("٢.١٥", "１０.０"), and `$` would accept a
trailing newline. Each pattern is also valid ECMA-262, so the JSON Schema for editors carries the same one.

Imports nothing from repro but repro.errors, repro.files and repro.secrets: manifest, hosts, launch and cli all use it.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from repro import files
from repro.errors import InputError
from repro.secrets import redact_text

# Characters no single-line value may hold: C0 controls (newline, NUL, ESC, ...), DEL, C1 controls and
# the Unicode line and paragraph separators.
_CONTROL = "\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029"
_NAME = "[A-Za-z0-9](?:[A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"  # PEP 508 project name
_EXTRAS = f"(?:\\[{_NAME}(?:,{_NAME})*\\])?"
_PEP440 = "[A-Za-z0-9][A-Za-z0-9._*+!-]{0,63}"
_SPEC = f"(?:~=|===|==|!=|<=|>=|<|>) ?{_PEP440}"
_URL_CHARS = "[A-Za-z0-9._~:/?#@+=%,&-]"
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"  # RFC 1123
_INV_LABEL = "[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"  # RFC 1123 plus `_`, as Ansible allows
# OCI / Docker distribution reference grammar (distribution/reference regexp.go)
_PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = "(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*" \
          "|\\[[a-fA-F0-9:]+\\])(?::[0-9]{1,5})?"
_IMAGE_NAME = f"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = "[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_IPV6 = "[0-9A-Fa-f.]{0,40}:[0-9A-Fa-f:.]{1,44}"  # shape only; ipaddress decides
_DIGEST = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,128}"


class InputValueError(ValueError):
    """A value that does not fit its kind; the message says what was expected."""


@dataclass(frozen=True)
class Kind:
    """One kind of input value: its pattern (whole match), bound and what a good value looks like."""

    name: str
    expected: str  # e.g. "digits and dots, e.g. 2.15.1"
    pattern: str  # Python and ECMA-262 regex, matched against the whole value
    max_length: int
    extra: Callable[[str], str | None] | None = None  # a further check; returns what is wrong, or None

    def problem(self, value: object) -> str | None:
        """What is wrong with `value` for this kind, or None when it is good."""
        if not isinstance(value, str):
            return f"expected text ({self.expected}), found {type(value).__name__}"
        if len(value) > self.max_length:
            return f"longer than {self.max_length} characters"
        if not value.isascii() and not encodable(value):
            return "holds an unpaired surrogate (a \\ud800-style escape), which is not text"
        if not _compiled(self.pattern).fullmatch(value):
            return f"malformed {self.name} {_show(value)}: expected {self.expected}"
        return self.extra(value) if self.extra else None

    def check(self, value: object) -> str:
        """The value itself when it is good; InputValueError saying why not otherwise."""
        why = self.problem(value)
        if why:
            raise InputValueError(why)
        return value  # type: ignore[return-value]

    def json_schema(self) -> dict:
        """The JSON Schema of this kind (type, pattern, bound), for editors."""
        return {"type": "string", "pattern": f"^(?:{self.pattern})$", "maxLength": self.max_length}


_CACHE: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern not in _CACHE:
        _CACHE[pattern] = re.compile(pattern, re.ASCII)
    return _CACHE[pattern]


def encodable(value: str) -> bool:
    """Whether text can be written as UTF-8 (a lone surrogate from a YAML escape such as "\\ud800" cannot)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _show(value: str) -> str:
    """A value as it can be printed safely in a message: short, quoted, escapes visible, secrets redacted."""
    value = redact_text(value) if encodable(value) else value
    text = ascii(value) if not value.isprintable() or not value.isascii() else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def shown(value: str) -> str:
    """A value as error messages of this module show it (to find it in such a message)."""
    return _show(value)


def _no_leading_dash(value: str) -> str | None:
    return "must not start with '-' (it would be read as an option)" if value.startswith("-") else None


def _ip_or_none(value: str) -> str | None:
    if ":" in value:  # only an IPv6 literal holds a colon
        try:
            ipaddress.IPv6Address(value)
        except ValueError:
            return f"malformed address {_show(value)}: not an IPv6 address"
    return None


def _absolute(value: str) -> str | None:
    return None if value.startswith("/") else "must be an absolute path"


# ---------------------------------------------------------------- kinds

VERSION = Kind("version", "digits and dots, e.g. 10.0 or 2.15.1", "[0-9]{1,9}(?:\\.[0-9]{1,9}){0,3}", 40)
OFED_VERSION = Kind("version", "an MLNX_OFED release, e.g. 4.7-3 or 4.7-3.2.9.0",
                    "[0-9]{1,4}\\.[0-9]{1,4}-[0-9]{1,6}(?:\\.[0-9]{1,6}){0,4}", 48)
NCCL_VERSION = Kind("version", "an NCCL release, e.g. 2.5.6 or 2.5.6-1",
                    "[0-9]{1,4}\\.[0-9]{1,4}\\.[0-9]{1,6}(?:-[0-9]{1,4})?", 24)
MODULE_VERSION = Kind("version", "a module release, e.g. 1.0-8 or 1.1",
                      "[0-9]{1,4}(?:\\.[0-9]{1,6}){0,3}(?:-[0-9]{1,6})?", 32)
STACK_NAME = Kind("stack name", "letters, digits, '.', '_' and '-', starting with a letter or digit",
                  "[A-Za-z0-9][A-Za-z0-9._-]{0,79}", 80)
ENV_NAME = Kind("variable name", "an environment variable name such as NCCL_DEBUG", "[A-Za-z_][A-Za-z0-9_]{0,127}", 128)
TEXT = Kind("text", "one line of text without control characters", f"[^{_CONTROL}]*", 4096)
DESCRIPTION = Kind("description", "one line of text without control characters", f"[^{_CONTROL}]*", 500)
PIP_REQUIREMENT = Kind(
    "pip requirement",
    "a PEP 508 requirement without markers: name[extras] with optional version specifiers "
    "(six==1.16.0, tf-keras>=2.15,<2.16) or name @ https://... (a stack targets one Python, so no '; markers')",
    f"{_NAME}{_EXTRAS}(?: ?{_SPEC}(?: ?, ?{_SPEC})*| ?@ ?(?:https?|git\\+https)://{_URL_CHARS}+)?", 300)
PIP_PROJECT = Kind("pip package", "a PEP 508 project name with optional extras, e.g. tensorflow-gpu",
                   f"{_NAME}{_EXTRAS}", 120)
APT_PACKAGE = Kind(
    "apt package", "a Debian package name (lowercase letters, digits, '+', '-', '.'; at least 2 characters), "
    "optionally :arch and =version, e.g. libnuma1 or curl=7.88.1-10",
    "[a-z0-9][a-z0-9+.-]{1,99}(?::[a-z0-9][a-z0-9-]{0,31})?(?:=(?:[0-9]{1,9}:)?[A-Za-z0-9][A-Za-z0-9.+~-]{0,99})?",
    240)
IMAGE_REFERENCE = Kind(
    "image reference", "an OCI image reference [registry[:port]/]path[:tag][@digest], e.g. nvidia/cuda:10.0-"
    "cudnn7-devel-ubuntu18.04 (lowercase path)", f"{_IMAGE_NAME}(?::{_TAG})?(?:@{_DIGEST})?", 512)
REGISTRY = Kind("registry", "a registry host[:port][/path], e.g. registry.example.com:5000/team",
                f"{_DOMAIN}(?:/{_PATH_COMPONENT})*", 255)
HOST_NAME = Kind("host name", "an RFC 1123 host name or an IP address",
                 f"{_LABEL}(?:\\.{_LABEL})*|{_IPV6}", 253, _ip_or_none)
INVENTORY_NAME = Kind(
    "inventory host name", "an RFC 1123 host name (Ansible also allows '_') or an IP address; no '/', no '..'",
    f"{_INV_LABEL}(?:\\.{_INV_LABEL})*|{_IPV6}", 253, _ip_or_none)
USER_NAME = Kind("user name", "a POSIX user name such as root or dell", "[A-Za-z_][A-Za-z0-9_.-]{0,31}", 32)
CONNECTION = Kind("connection", "an Ansible connection plugin name such as ssh or local",
                  "[a-z][a-z0-9_]*(?:\\.[a-z][a-z0-9_]*)*", 100)
INTERFACE = Kind("interface name", "a Linux network interface name such as eth0 or ib0 (at most 15 characters)",
                 "[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}", 15)
PATH = Kind("path", "a file path without control characters", f"[^{_CONTROL}]+", 4096, _no_leading_dash)
DATA_DIR = Kind("directory", "an absolute path without spaces, quotes, ':' or ','",
                f"[^{_CONTROL}\\s\"'`$\\\\:,]+", 4096, _absolute)
# Paths that reach ssh inside one option (Open MPI splits plm_rsh_args on spaces and ignores quotes;
# UserKnownHostsFile= takes a space-separated list): no whitespace, quotes, backslash or `$`.
SSH_PATH = Kind("path", "a file path without spaces, quotes, '\\' or '$'", f"[^{_CONTROL}\\s\"'`$\\\\]+", 4096,
                _no_leading_dash)
COMMAND = Kind("command", "a program name or path without spaces or quotes", f"[^{_CONTROL}\\s\"'`$\\\\;&|<>]+",
               1024, _no_leading_dash)
DOCKER_ENDPOINT = Kind(
    "Docker endpoint", "unix:///path/docker.sock, tcp://host:port or ssh://[user@]host[:port]",
    f"unix:///[^{_CONTROL}\\s\"'`$\\\\;&|<>()*?!]*|tcp://{_DOMAIN}"
    f"|ssh://(?:[A-Za-z_][A-Za-z0-9_.-]{{0,31}}@)?{_DOMAIN}", 1024)
URL = Kind("URL", "an http(s) URL without spaces or quotes", f"https?://{_URL_CHARS}+", 2048)
WORD = Kind("name", "letters, digits, '.', '_' and '-'", "[A-Za-z0-9][A-Za-z0-9._-]{0,99}", 100)
WORDS = Kind("list", "comma-separated names (letters, digits, '.', '_', '-')", "[A-Za-z0-9._,-]+", 1000)
HOST_PATTERN = Kind("host pattern", "an Ansible host pattern such as workers, h1:h2 or !h3 (no spaces or quotes)",
                    "[A-Za-z0-9_.:*?!&,~^\\[\\]-]+", 1000, _no_leading_dash)


# ---------------------------------------------------------------- numbers


def integer(value: object, *, minimum: int, maximum: int) -> int:
    """A whole number in [minimum, maximum] from an int or ASCII digits; InputValueError otherwise."""
    if isinstance(value, bool):
        raise InputValueError(f"expected a whole number, found {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch("-?[0-9]{1,19}", text, re.ASCII):
            raise InputValueError(f"expected a whole number from {minimum} to {maximum}, found {_show(value)}")
        value = int(text)
    if not isinstance(value, int):
        raise InputValueError(f"expected a whole number, found {type(value).__name__}")
    if not minimum <= value <= maximum:
        shown = str(value) if abs(value) < 10**30 else f"a number of {len(str(abs(value)))} digits"
        raise InputValueError(f"expected a whole number from {minimum} to {maximum}, found {shown}")
    return value


def number(value: object, *, minimum: float, maximum: float) -> float:
    """A finite number in [minimum, maximum] from an int, a float or ASCII decimal text."""
    if isinstance(value, bool):
        raise InputValueError(f"expected a number, found {value!r}")
    if isinstance(value, str):
        if not re.fullmatch("-?[0-9]{1,15}(?:\\.[0-9]{1,15})?", value.strip(), re.ASCII):
            raise InputValueError(f"expected a number from {minimum:g} to {maximum:g}, found {_show(value)}")
        value = float(value)
    if isinstance(value, int):
        if abs(value) > 10**15:
            raise InputValueError(f"expected a number from {minimum:g} to {maximum:g}")
        value = float(value)
    if not isinstance(value, float) or not math.isfinite(value) or not minimum <= value <= maximum:
        raise InputValueError(f"expected a number from {minimum:g} to {maximum:g}, found {value!r}")
    return value


def boolean(value: object) -> bool:
    """true/false from a YAML boolean or the words an INI inventory leaves as text (true, no, 1, ...)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    words = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}
    if isinstance(value, str) and value.strip().lower() in words:
        return words[value.strip().lower()]
    shown = _show(value) if isinstance(value, str) else type(value).__name__
    raise InputValueError(f"expected true or false, found {shown}")


# ---------------------------------------------------------------- files

MAX_FILE_BYTES = files.MAX_FILE_BYTES
FileProblem = files.FileProblem
read_file = files.read_file


def file_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(device, inode) of a file, to detect cycles without resolving symlinks; None when it cannot be read."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


# ---------------------------------------------------------------- command-line values


def argument(kind: Kind) -> Callable[[str], str]:
    """An argparse `type=` that accepts one value of `kind` (argparse then exits 2 with the reason)."""

    def parse(text: str) -> str:
        why = kind.problem(text)
        if why:
            raise argparse.ArgumentTypeError(why)
        return text

    parse.__name__ = kind.name
    return parse


def path_argument(text: str) -> str:
    """argparse `type=` for a file or directory path."""
    return argument(PATH)(text)


def count_argument(text: str) -> int:
    """argparse `type=` for one whole number >= 1 (ASCII digits)."""
    try:
        return integer(text, minimum=1, maximum=1_000_000)
    except InputValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_seconds(text: str) -> float:
    """argparse `type=` for a finite time limit in seconds (> 0)."""
    try:
        value = number(text, minimum=0.0, maximum=30 * 86400.0)
    except InputValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError("expected a time in seconds > 0")
    return value


_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """argparse `type=` for a wall time: seconds, or a number with s, m (min) or h."""
    raw = str(text).strip().lower()
    unit = next((u for u in sorted(_UNITS, key=len, reverse=True) if raw.endswith(u) and raw[:-len(u)].strip()), "")
    value = positive_seconds(raw[:-len(unit)].strip() if unit else raw)
    return value * _UNITS.get(unit, 1.0)


def finite_number(text: str) -> float:
    """argparse `type=` for a finite decimal number (no nan, no inf)."""
    try:
        return number(text, minimum=-1e15, maximum=1e15)
    except InputValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def fraction_argument(text: str) -> float:
    """argparse `type=` for a fraction in (0, 1), written 0.05 or 5%."""
    percent = text.strip().endswith("%")
    try:
        value = number(text.strip().removesuffix("%"), minimum=-1e15, maximum=1e15) / (100.0 if percent else 1.0)
    except InputValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1) such as 0.05 or 5%, found {text!r}")
    return value


def key_value_argument(text: str) -> tuple[str, str]:
    """argparse `type=` for KEY=VALUE: KEY a variable name, VALUE one line of text (not a YAML tag)."""
    key, sep, value = text.partition("=")
    why = "expected KEY=VALUE" if not sep else ENV_NAME.problem(key) or TEXT.problem(value)
    if not why and value.lstrip().startswith("!"):
        why = "a value may not start with '!' (a YAML tag)"
    if why:
        raise argparse.ArgumentTypeError(f"{why} (in {_show(text)})")
    return key, value


def extra_var_argument(text: str) -> str:
    """argparse `type=` for an Ansible -e KEY=VALUE, kept as written once checked."""
    key_value_argument(text)
    return text


def checked(kind: Kind, value: object, what: str) -> str:
    """The value when it fits `kind`; otherwise InputError naming `what` (for values without a file)."""
    why = kind.problem(value)
    if why:
        raise InputError(f"{what}: {why}")
    return value  # type: ignore[return-value]


def expand_directories(paths: list[str], suffixes: tuple[str, ...] | None = None) -> list[str]:
    """Command-line paths with every directory replaced by the files in it (sorted; only `suffixes` if given)."""
    out: list[str] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            out += sorted(str(p) for p in path.iterdir()
                          if p.is_file() and not p.name.startswith(".") and (suffixes is None or p.suffix in suffixes))
        else:
            out.append(text)
    return out
