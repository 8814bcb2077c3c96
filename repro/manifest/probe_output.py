"""What a software probe printed, as Software (pure): bounded, depth-limited and checked field by field.

The host probe (repro.launch.runtimes.host.HOST_PROBE) prints one JSON object as its last line. The program that
prints it is whatever interpreter a user names (`repro capture --python PATH`, an inventory's `repro_python`), so
its output is untrusted input: `null`, bytes that are not text, JSON nested a thousand deep, a line without end,
a lone surrogate, a version with a newline and YAML after it. `software_from_output` gives a Software whose every
text is one printable line, or a ProbeOutputError that says in one line what was wrong and in which field.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from pydantic import ValidationError

from repro.files import shape_problem
from repro.inputs import shown
from repro.manifest.software import Software, from_host_probe

MAX_PROBE_BYTES = 1 << 20  # the real probe prints about 1 KB
MAX_PROBE_DEPTH = 8  # the real probe's object is 3 levels deep
MAX_PROBE_ITEMS = 10_000
MAX_PROBE_TEXT = 4096
# characters that end a line in YAML or move a terminal's cursor: never part of a version, a path or a name
_BREAKING = ("Cc", "Cf", "Zl", "Zp")


class ProbeOutputError(ValueError):
    """A probe's output that is not a probe result; the message says what is wrong (and in which field)."""


def software_from_output(raw: bytes) -> Software:
    """The Software a probe's stdout reports (its last line, a JSON object); ProbeOutputError otherwise."""
    if len(raw) > MAX_PROBE_BYTES:
        raise ProbeOutputError(f"printed more than {MAX_PROBE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProbeOutputError(f"printed bytes that are not UTF-8 text (byte {exc.start}: "
                               f"{raw[exc.start:exc.start + 1]!r})") from None
    last = text.rstrip().rpartition("\n")[2].strip()
    if not last:
        raise ProbeOutputError("printed no probe result")
    try:
        data = json.loads(last)
    except RecursionError:
        raise ProbeOutputError(f"printed JSON nested more than {MAX_PROBE_DEPTH} levels deep") from None
    except ValueError as exc:
        raise ProbeOutputError(f"printed no probe result: its last line {shown(last)} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        kind = "null" if data is None else type(data).__name__
        raise ProbeOutputError(f"printed JSON {kind} ({shown(last)}), not the probe's object")
    why = shape_problem(data, max_depth=MAX_PROBE_DEPTH, max_items=MAX_PROBE_ITEMS)
    if why:
        raise ProbeOutputError(f"printed a probe result that is {why}" if why.startswith("nested") else
                               f"printed a probe result holding {why}")
    try:
        return from_host_probe(_checked(data, ""))
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "?"
        raise ProbeOutputError(f"printed a probe result whose field {field} is wrong: {first['msg']} "
                               f"(found {shown(str(first.get('input')))})") from None


def _checked(node: Any, path: str) -> Any:
    """`node` with every text checked: one printable line of bounded length, or, in an error message (a field
    named *error), control characters made spaces. Depth is bounded by shape_problem before this recursion."""
    if isinstance(node, dict):
        for key in node:
            _text(key, _join(path, key if _printable(key) else shown(key)), free=False)
        return {k: _checked(v, _join(path, k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_checked(v, f"{path}[{i}]") for i, v in enumerate(node)]
    if isinstance(node, str):
        return _text(node, path, free=path.rpartition(".")[2].endswith("error"))
    return node


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _printable(text: str) -> bool:
    return not any(unicodedata.category(c) in _BREAKING for c in text)


def _text(value: str, path: str, *, free: bool) -> str:
    if len(value) > MAX_PROBE_TEXT:
        raise ProbeOutputError(f"printed a probe result whose field {path} is {len(value)} characters long "
                               f"(at most {MAX_PROBE_TEXT})")
    if _printable(value):
        return value
    if free:  # an exception's message may span lines: it is shown, never written into a manifest
        return "".join(" " if unicodedata.category(c) in _BREAKING else c for c in value)
    raise ProbeOutputError(f"printed a probe result whose field {path} holds a line break or control character: "
                           f"{shown(value)}")
