"""Bounded reads of input files: a regular file of at most a given size, never a pipe or a device.

The lowest layer of repro, beside repro.errors: every module that reads a file a user names (manifests,
inventories, logs to import, tables, records, the site configuration) reads it through `read_file`, so
that a named pipe, /dev/zero or /dev/urandom is refused at once with a one-line reason, never read for ever.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

MAX_FILE_BYTES = 1 << 20
_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class FileProblem(Exception):
    """An input file that cannot be read as one: missing, special, a symlink loop, too large."""


def read_file(path: str | os.PathLike[str], max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most max_bytes; FileProblem for anything else.

    Never blocks on a named pipe or a device (opened non-blocking, refused by type before reading),
    never follows a symlink loop, never reads more than max_bytes + 1 bytes.
    """
    name = os.fspath(path)
    if "\x00" in name:
        raise FileProblem("the file name holds a NUL character")
    try:
        os.fsencode(name)
    except UnicodeEncodeError:
        raise FileProblem(f"the file name {ascii(name)[:60]} is not valid text (an unpaired surrogate)") from None
    if len(name) > 4096:
        raise FileProblem("the file name is longer than 4096 characters")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileProblem("no such file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileProblem("a symbolic link loop") from None
        raise FileProblem(_special(name) or exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        for test, what in _FILE_TYPES:
            if test(info.st_mode):
                raise FileProblem(f"{what}, not a regular file")
        if info.st_size > max_bytes:
            raise FileProblem(f"too large: {info.st_size} bytes; at most {max_bytes} bytes are read")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 16, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise FileProblem(f"too large: more than {max_bytes} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise FileProblem(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _special(name: str) -> str | None:
    """'a socket, not a regular file' and the like, for a file that could not even be opened."""
    try:
        mode = os.stat(name).st_mode
    except OSError:
        return None
    return next((f"{what}, not a regular file" for test, what in _FILE_TYPES if test(mode)), None)


def regular_file(path: str | os.PathLike[str], max_bytes: int | None = None) -> int:
    """The size of `path` when it is a regular file (of at most max_bytes); FileProblem for anything else (a FIFO,
    a device, a socket, a directory, a symlink loop), found without opening it, so nothing blocks."""
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except FileNotFoundError:
        raise FileProblem("no such file") from None
    except OSError as exc:
        raise FileProblem("a symbolic link loop" if exc.errno == errno.ELOOP else exc.strerror or str(exc)) from None
    if not stat.S_ISREG(info.st_mode):
        raise FileProblem(_special(name) or "not a regular file")
    if max_bytes is not None and info.st_size > max_bytes:
        raise FileProblem(f"too large: {info.st_size} bytes; at most {max_bytes} bytes are read")
    return info.st_size


def shape_problem(data: Any, *, max_depth: int, max_items: int) -> str | None:
    """Why parsed JSON (or YAML) is unusable whatever its schema says: nested more than max_depth levels, a list of
    more than max_items, text that is not UTF-8 (a lone surrogate such as \\ud800); None when it is usable.
    Iterative, so no depth breaks it."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep"
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
            stack.extend((k, depth) for k in node)
        elif isinstance(node, list):
            if len(node) > max_items:
                return f"a list of {len(node)} items (at most {max_items})"
            stack.extend((v, depth + 1) for v in node)
        elif isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return "text that is not UTF-8 (a lone surrogate such as \\ud800)"
    return None
