"""Checks on every value that reaches a rendered Dockerfile or Apptainer definition (pure).

The manifest is validated when it is loaded, but rendering must be safe on its own: a value that
slipped past (a stack built in code, a future field, a command-line option) must never add a line to
a recipe or run a command. Each check accepts only the characters its kind of value can hold, so a
newline, `$(...)`, a backtick, a quote or a leading `--` is refused before anything is rendered.
"""

from __future__ import annotations

import re

from repro.errors import InputError
from repro.secrets import is_secret_name, redact_text

# Debian policy 5.6.1 (package names) and 5.6.12 (versions), with an optional `=version` pin.
_APT = re.compile(r"[a-z0-9][a-z0-9+.-]{0,127}(=[A-Za-z0-9.+~:-]{1,128})?")
# A PEP 508 name with extras and version clauses; no URLs, paths, markers or options.
_PIP_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?"
_PIP_CLAUSE = r"(?:===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]{1,64}"
_PIP = re.compile(rf"{_PIP_NAME}(?:\[{_PIP_NAME}(?:,{_PIP_NAME})*\])?(?:{_PIP_CLAUSE}(?:,{_PIP_CLAUSE})*)?")
# Docker's reference grammar: [host[:port]/]path[:tag][@sha256:digest].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(rf"(?:[A-Za-z0-9.-]+(?::[0-9]{{1,5}})?/)?{_COMPONENT}(?:/{_COMPONENT})*"
                    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~_-]{0,63}")
# http(s) URLs without credentials, whitespace, quotes or shell characters.
_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%/+=-]*)?")
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}")
_PATH = re.compile(r"/[A-Za-z0-9_./+-]{0,200}")
_WORD = re.compile(r"[a-z][a-z0-9-]{0,31}")


def _refuse(field: str, value: object, what: str) -> InputError:
    secret = any(is_secret_name(part) for part in re.split(r"[.\[\]]", field) if part)
    shown = "the value (redacted)" if secret else redact_text(repr(value))  # a refused secret is not echoed
    return InputError(f"{field}: {shown} is not {what}; it cannot go into a Dockerfile",
                      hint="fix the value in the stack manifest or on the command line")


def _check(pattern: re.Pattern[str], value: object, field: str, what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise _refuse(field, value, what)
    return value


def apt_package(value: object, field: str = "packages.apt") -> str:
    """A Debian package name, optionally `=version`."""
    return _check(_APT, value, field, "a Debian package name (lowercase letters, digits, + . -; optional =version)")


def pip_requirement(value: object, field: str = "packages.pip") -> str:
    """A PyPI requirement: name, optional [extras], optional version clauses (no URL, path or option)."""
    return _check(_PIP, value, field, "a PyPI requirement such as six==1.16.0 (no URLs, paths or --options)")


def image_reference(value: object, field: str = "base_image") -> str:
    """A Docker image reference."""
    return _check(_IMAGE, value, field, "a Docker image reference such as ubuntu:18.04")


def version(value: object, field: str) -> str:
    """A version string (digits, letters and . + ~ _ -)."""
    return _check(_VERSION, value, field, "a version")


def url(value: object, field: str) -> str:
    """An http(s) URL without credentials or shell characters."""
    return _check(_URL, value, field, "a plain http(s) URL (no credentials, spaces, quotes or shell characters)")


def file_name(value: object, field: str) -> str:
    """A file name in the build context (no directory, no shell characters)."""
    return _check(_FILE_NAME, value, field, "a plain file name")


def path(value: object, field: str) -> str:
    """An absolute path inside the image."""
    return _check(_PATH, value, field, "an absolute path of letters, digits and _ . / + -")


def word(value: object, field: str) -> str:
    """A lowercase keyword (an Apptainer bootstrap agent, a distribution name)."""
    return _check(_WORD, value, field, "a lowercase word")


def port(value: object, field: str = "container.ssh_port") -> int:
    """A TCP port number."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise _refuse(field, value, "a TCP port (1-65535)")
    return value
