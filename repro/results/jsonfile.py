"""The store's files: JSON written atomically with the group's permissions, records read with their path in errors."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from repro.errors import ResultsError
from repro.files import FileProblem, read_file

MAX_RECORD_BYTES = 512 << 20
MAX_RECORD_DEPTH = 64  # records are a few levels deep; ~1,000 would break every recursive reader after this one
MAX_RECORD_ITEMS = 200_000  # per list: 10^6 step times would make a scaling table allocate gigabytes

if TYPE_CHECKING:
    from repro.results.record import RunRecord


def umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux's /proc)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc: the classic set-and-restore (not atomic across threads)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a plain new file gets here: 0666 less the umask (0644 under umask 022, 0664 under 002)."""
    return 0o666 & ~umask()


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to `path` so that readers see either the old file or the whole new one.

    mkstemp creates files readable by their owner only; the file gets the mode any new file would get
    (from the umask) before it is renamed into place, so a team store is readable by the group.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class UnreadableRecord(ResultsError):
    """A record file that cannot be read: the message names the file and the reason."""

    def __init__(self, path: Path, reason: str, *, newer: bool = False) -> None:
        super().__init__(f"{path}: {reason}",
                         hint="upgrade repro to read it" if newer else "")
        self.path = path
        self.reason = reason
        self.newer = newer


def read_record(path: Path) -> RunRecord:
    """One record JSON file, parsed by parse_record; UnreadableRecord names the file and why."""
    from repro.results.record import NewerSchemaError, RecordError, parse_record  # pydantic: only when parsing

    try:  # bounded: a named pipe or a device among the records is skipped, never read for ever
        raw = read_file(path, MAX_RECORD_BYTES)
    except FileProblem as exc:
        if not os.path.lexists(path):
            raise FileNotFoundError(path) from None
        raise UnreadableRecord(path, f"unreadable record ({exc})") from None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        what = "empty file" if not raw.strip() else \
            f"nested too deep (more than {MAX_RECORD_DEPTH} levels)" if isinstance(exc, RecursionError) else \
            f"not JSON ({exc})"
        raise UnreadableRecord(path, f"unreadable record: {what}") from None
    why = shape_problem(data, raw)
    if why:
        raise UnreadableRecord(path, f"unusable record: {why}")
    try:
        return parse_record(data)
    except RecordError as exc:
        raise UnreadableRecord(path, exc.message, newer=isinstance(exc, NewerSchemaError)) from None


# where a record's text can hold a lone surrogate: a \uD800-\uDFFF escape; in bytes, one encoded as UTF-8 would
# encode it (json.loads decodes bytes with surrogatepass), or a NUL (UTF-16 or UTF-32 text: the escapes hide)
_SURROGATE_TEXT = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\xed[\xa0-\xbf]|\x00")


def shape_problem(data: Any, raw: str | bytes | None = None) -> str | None:
    """Why a record's JSON cannot be used whatever its schema says (too deep, a list too long, text that is not
    UTF-8 such as a lone surrogate), or None; iterative, so no depth breaks it. With the `raw` text it was parsed
    from, strings are only walked when that text can hold a surrogate at all, and lists of numbers (step times)
    are not walked item by item: most of a compare of 10,000 records went into this walk."""
    pattern = _SURROGATE_BYTES if isinstance(raw, bytes) else _SURROGATE_TEXT
    strings = raw is None or pattern.search(raw) is not None  # type: ignore[arg-type]
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_RECORD_DEPTH:
            return f"nested more than {MAX_RECORD_DEPTH} levels deep"
        kind = type(node)
        if kind is dict:
            if strings:
                stack.extend((v, depth + 1) for v in node.values())
                stack.extend((k, depth) for k in node)
            else:
                stack.extend([(v, depth + 1) for v in node.values() if type(v) is dict or type(v) is list])
        elif kind is list:
            if len(node) > MAX_RECORD_ITEMS:
                return f"a list of {len(node)} items (at most {MAX_RECORD_ITEMS})"
            if strings:
                stack.extend((v, depth + 1) for v in node)
            else:
                stack.extend([(v, depth + 1) for v in node if type(v) is dict or type(v) is list])
        elif kind is str:
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return "text that is not UTF-8 (a lone surrogate such as \\ud800)"
    return None
