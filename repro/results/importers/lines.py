"""A log's text as numbered lines, with what surrounds the programs' own output taken off (pure).

Logs reach repro as people kept them: raw files, pastes from issues and tutorials, launcher logs. Each
line keeps its 1-based number in the file, the rank of an MPI output tag, and the text the program
printed, without:

* rank tags: Open MPI's ``mpirun --tag-output`` (``[1,3]<stdout>:``), horovodrun's ``[3]<stdout>:`` and
  the timestamped form some launchers write (``Tue Sep  8 09:24:20 2020[0]<stdout>:``);
* launcher prefixes: Kubeflow's ``INFO|2017-12-19T01:12:17|/opt/launcher.py|27| `` and Python logging's
  ``INFO:root:``;
* a carriage return (Windows line ends, progress bars).

Indentation is kept (the text is also given stripped): a pasted log is often indented as a block.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from repro.errors import Diagnostic, InputError, Location

MAX_BYTES = 256 * 1024 * 1024  # a log bigger than this is not a benchmark's output

_TAG = re.compile(r"\[(?:\d+,)?(\d+)\]<std(?:out|err)>:\s?")
_TRAILING_TAG = re.compile(r"(?:\[(?:\d+,)?\d+\]<std(?:out|err)>:)+\s*$")
_PREFIXES = (
    re.compile(r"^(?:INFO|WARNING|WARN|ERROR|DEBUG)\|[^|]*\|[^|]*\|\d+\|\s?"),  # Kubeflow's launcher.py
    re.compile(r"^(?:INFO|WARNING|ERROR|DEBUG):root:"),
)
_ELISION = re.compile(r"^\s*(?:\.{2,}|…|:|\[\.\.\.\]|\(\.\.\.\)|<snip>|\.\.\. ?\(?(?:truncated|snip)\)?)\s*$", re.I)


@dataclass(frozen=True)
class Line:
    """One log line: its 1-based number, the rank of its MPI tag (None untagged) and the program's text."""

    number: int
    rank: int | None
    text: str

    @property
    def bare(self) -> str:
        """The text without surrounding blanks (or the backticks of a paste's inline code)."""
        return self.text.strip().strip("`").strip()

    @property
    def elision(self) -> bool:
        """A line that stands for left-out lines ('....', '   :', '...')."""
        return bool(_ELISION.match(self.text))


def split_lines(text: str) -> list[Line]:
    """Every line of a log, numbered, with rank tags and launcher prefixes taken off."""
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r\n").rstrip()
        if "\r" in line:  # progress bars rewrite the line: keep what was shown last
            line = line.rsplit("\r", 1)[1]
        rank = None
        tag = _TAG.search(line)
        if tag and tag.start() < 48:  # a tag, possibly after a timestamp; not one quoted mid-sentence
            rank = int(tag.group(1))
            line = line[tag.end():]
            # mpirun tags each chunk it reads: a line printed without its newline ends with the next tag
            line = _TRAILING_TAG.sub("", line)
        for prefix in _PREFIXES:
            line = prefix.sub("", line, count=1)
        out.append(Line(number, rank, line))
    return out


def error(file: str, line: int | None, message: str, expected: str = "", found: str = "") -> InputError:
    """An InputError about one place of a log."""
    return InputError(f"{file}: cannot import this log",
                      [Diagnostic(message, Location(file, line), expected=expected, found=found[:120])])


def decode(data: bytes, file: str) -> str:
    """A log file's bytes as text; binary and oversized files are refused at line 1."""
    if len(data) > MAX_BYTES:
        raise error(file, None, f"the file is {len(data) / 2**20:.0f} MiB, not a benchmark log",
                    f"a text log under {MAX_BYTES // 2**20} MiB")
    head = data[:65536]
    if b"\x00" in head:
        raise error(file, 1, "a binary file, not a text log", "the text a benchmark printed")
    text = data.decode("utf-8", errors="replace")
    sample = text[:65536]
    if sample and sample.count("\ufffd") > max(8, len(sample) // 100):
        raise error(file, 1, "not text in UTF-8 (or a binary file)", "the text a benchmark printed")
    return text


def content_hash(data: bytes) -> str:
    """The SHA-256 of a log's bytes: re-importing the same content is recognised by it."""
    return hashlib.sha256(data).hexdigest()
