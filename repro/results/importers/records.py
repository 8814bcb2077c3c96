"""From a log's text to RunRecords (pure), and the stack imported records belong to.

    read_log(text, file)                    -> [ParsedRun]   every run of every format the text holds
    to_record(run, stack, overrides, ...)   -> RunRecord     origin "import", unknown settings None

A record's figure is the program's own summary (``reported_images_per_sec``); repro.results.metrics uses
it as the run's images/sec and the step samples for its spread. Where the log came from is kept in
``metrics["source"]`` (file name, lines, SHA-256 of the file's bytes, the run's index in the file), so
that importing the same content again is recognised.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from repro.errors import InputError
from repro.results.importers import horovod, mllog, tf_cnn
from repro.results.importers.lines import error, split_lines
from repro.results.importers.runs import ParsedRun
from repro.results.importers.settings import Override, to_settings
from repro.results.record import Hardware, RunRecord, StackRef, new_id, now_iso
from repro.results.redact import redact_argv, redact_env, redact_tree

READERS = {tf_cnn.TF_CNN: tf_cnn, horovod.HOROVOD: horovod, mllog.MLLOG: mllog}  # format -> its reader
FORMATS = tuple(READERS)
_STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def read_log(text: str, file: str = "<log>", fmt: str = "auto", given: Mapping[str, Any] | None = None
             ) -> list[ParsedRun]:
    """Every run the text holds (in order of their first line); InputError when it holds none. `given`:
    settings stated outside the log, used where it does not show them (the batch a paste leaves out)."""
    lines = split_lines(text)
    if fmt != "auto" and fmt not in READERS:
        raise InputError(f"unknown log format '{fmt}': expected auto, {', '.join(FORMATS)}")
    readers = READERS.values() if fmt == "auto" else [READERS[fmt]]
    runs = [run for reader in readers for run in reader.read(lines, file, given)]
    if not runs:
        first = next((line for line in lines if line.bare), None)
        # what the file holds is not echoed: it is not a log, and could be anything (a key, a password file)
        raise error(file, first.number if first else None, "not a log repro can import",
                    "tf_cnn_benchmarks output ('10\\timages/sec: ...', 'total images/sec: ...'), Horovod's "
                    "synthetic benchmark ('Iter #0: ... img/sec per GPU') or MLPerf ':::MLLOG' lines",
                    "no line of any of these formats" if first else "an empty file")
    return sorted(runs, key=lambda r: r.first_line)


def to_record(run: ParsedRun, stack: StackRef, overrides: Mapping[str, Override] | None = None, *,
              sha256: str = "", index: int = 0) -> RunRecord:
    """A RunRecord (origin import) of one run; InputError when its settings are not enough for a point."""
    settings = to_settings(run, overrides or {})
    metrics: dict[str, Any] = {k: v for k, v in run.metrics.items() if v not in (None, [], {})}
    metrics["source"] = {"file": Path(run.file).name, "lines": run.lines, "sha256": sha256, "run": index}
    if run.figure_line:
        metrics["source"]["figure_line"] = run.figure_line
    if run.warnings:
        metrics["warnings"] = [redact_tree(w) for w in run.warnings]
    hardware = Hardware(gpu=" + ".join(dict.fromkeys(run.devices))) if run.devices else None
    figure = run.figure if run.failure is None and run.format != mllog.MLLOG else None
    return RunRecord(
        id=new_id(), created=now_iso(), status="failed" if run.failure else "ok", failure=redact_tree(run.failure),
        origin="import", stack=stack, settings=settings, runtime="imported", ranks=list(run.ranks),
        hardware=hardware, command=redact_argv(list(run.command)), env=redact_env(dict(run.env)),
        software=dict(run.software), metrics=metrics, reported_images_per_sec=figure,
        log_tail=redact_tree(run.tail))  # a log's NAME=value lines and secret-shaped text are not stored


def import_stack(stack: str) -> StackRef:
    """The StackRef imported records carry: a manifest file's, or a name's (hash from the name)."""
    path = Path(stack)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        from repro.manifest import load_stack

        loaded = load_stack(path)
        return StackRef(name=loaded.stack.name, hash=loaded.hash, image_hash=loaded.image_hash, file=str(path),
                        manifest=redact_tree(loaded.stack.model_dump(mode="json")))
    if not _STACK_NAME.match(stack):
        raise InputError(f"--stack {stack!r}: expected a stack name (letters, digits, . _ -) or a manifest file")
    digest = hashlib.sha256(f"repro-import:{stack}".encode()).hexdigest()[:12]
    return StackRef(name=stack, hash=digest)
