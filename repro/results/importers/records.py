"""From a log's text to RunRecords (pure), and the stack imported records belong to.

    read_log(text, file)                    -> [ParsedRun]   every run of every format the text holds
    to_record(run, stack, overrides, ...)   -> RunRecord     origin "import", unknown settings None

A record's figure is the program's own summary (``reported_images_per_sec``); repro.results.metrics uses
it as the run's images/sec and the step samples for its spread. Where the log came from is kept in
``metrics["source"]`` (file name, lines, SHA-256 of the file's bytes, the run's index in the file), so
that importing the same content again is recognised.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from repro.errors import InputError
from repro.results import steady
from repro.results.fabric import Fabric
from repro.results.importers import (
    bluefog,
    deepspeed,
    dllogger,
    hf_trainer,
    horovod,
    imagenet_example,
    megatron,
    mllog,
    mlperf_legacy,
    nccl_tests,
    tf_cnn,
    torch_allreduce_bench,
    torch_ddp,
    torchtitan,
)
from repro.results.importers.lines import error, split_lines
from repro.results.importers.runs import ParsedRun
from repro.results.importers.settings import Override, to_settings
from repro.results.nccl import parse as parse_nccl
from repro.results.record import Hardware, RunRecord, StackRef, new_id, now_iso
from repro.secrets import redact_argv, redact_env, redact_tree

# format -> its reader
READERS = {tf_cnn.TF_CNN: tf_cnn, horovod.HOROVOD: horovod, mllog.MLLOG: mllog, torch_ddp.TORCH_DDP: torch_ddp,
           nccl_tests.NCCL_TESTS: nccl_tests, megatron.MEGATRON: megatron, torchtitan.TORCHTITAN: torchtitan,
           hf_trainer.HF_TRAINER: hf_trainer, deepspeed.DEEPSPEED: deepspeed, bluefog.BLUEFOG: bluefog,
           mlperf_legacy.MLPERF_LEGACY: mlperf_legacy, torch_allreduce_bench.TORCH_ALLREDUCE: torch_allreduce_bench,
           imagenet_example.PYTORCH_IMAGENET: imagenet_example, dllogger.DLLOGGER: dllogger}
FORMATS = tuple(READERS)
_STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


Given = Mapping[str, Any] | Callable[[int, int, int], Mapping[str, Any]]


def _span(reader: Any, group: list) -> tuple[int, int]:
    """The first and last line of a run's own lines (a reader may give a run lines shared with others)."""
    return reader.span(group) if hasattr(reader, "span") else (group[0].number, group[-1].number)


def _groups(lines: list, fmt: str) -> list[tuple[Any, list]]:
    """Every (reader, lines of one run) the lines hold, in order of the runs' first line."""
    readers = READERS.values() if fmt == "auto" else [READERS[fmt]]
    found = [(reader, group) for reader in readers for group in reader.groups(lines)]
    return sorted(found, key=lambda item: _span(*item)[0])


def read_runs(text: str, file: str = "<log>", fmt: str = "auto", given: Given | None = None
              ) -> tuple[list[tuple[int, ParsedRun]], list[InputError]]:
    """Every complete run the text holds, with its number in the file (from 1), and an error for each part
    that is not one (a fragment: a run
    cut before it measured anything, prose that looks like a header), in order of their first line.

    `given`: settings stated outside the log, used where it does not show them; a mapping for every run,
    or a function of (run index from 1, first line, last line) for settings meant for one run."""
    lines = split_lines(text)
    if fmt != "auto" and fmt not in READERS:
        raise InputError(f"unknown log format '{fmt}': expected auto, {', '.join(FORMATS)}")
    runs: list[tuple[int, ParsedRun]] = []
    fragments: list[InputError] = []
    for index, (reader, group) in enumerate(_groups(lines, fmt), start=1):
        first, last = _span(reader, group)
        mine = given(index, first, last) if callable(given) else (given or {})
        try:
            run = reader.read_run(group, file, mine)
            runs.append((index, dataclasses.replace(run, fabric=nccl_fabric(group))))
        except InputError as exc:
            exc.span = (first, last)  # type: ignore[attr-defined]  # where the fragment starts, for warnings
            fragments.append(exc)
    if not runs and not fragments:
        first = next((line for line in lines if line.bare), None)
        # what the file holds is not echoed: it is not a log, and could be anything (a key, a password file)
        raise error(file, first.number if first else None, "not a log repro can import",
                    "one of the formats repro knows: " + "; ".join(f"{name}: {reader.EXAMPLE}"
                                                                    for name, reader in READERS.items())
                    + " (repro import --format NAME reads a file as that format only)",
                    "no line of any of these formats" if first else "an empty file")
    return runs, fragments


def nccl_fabric(lines: list) -> Fabric | None:
    """What the NCCL INFO/WARN lines among a run's lines say (the parser of measured runs), None without any."""
    texts = [line.text for line in lines]
    # only prefixed NCCL lines count: the parser's stripped-prefix fallback would read any `Using network` prose
    if not any("NCCL INFO" in text or "NCCL WARN" in text for text in texts):
        return None
    fabric = parse_nccl("\n".join(texts))
    return fabric if fabric.lines else None


def read_log(text: str, file: str = "<log>", fmt: str = "auto", given: Given | None = None) -> list[ParsedRun]:
    """Every run the text holds (in order of their first line); InputError when a part of it is not a
    complete run (see read_runs, which keeps the complete ones)."""
    runs, fragments = read_runs(text, file, fmt, given)
    if fragments:
        raise fragments[0]
    return [run for _, run in runs]


def to_record(run: ParsedRun, stack: StackRef, overrides: Mapping[str, Override] | None = None, *,
              sha256: str = "", index: int = 0) -> RunRecord:
    """A RunRecord (origin import) of one run; InputError when its settings are not enough for a point."""
    settings = to_settings(run, overrides or {})
    metrics: dict[str, Any] = {k: v for k, v in run.metrics.items() if v not in (None, [], {})
                               and k not in ("stated", "derived")}
    metrics["provenance"] = provenance(run, settings, overrides or {})
    metrics["source"] = {"file": Path(run.file).name, "lines": run.lines, "sha256": sha256, "run": index}
    if run.figure_line:
        metrics["source"]["figure_line"] = run.figure_line
    if run.warnings:
        metrics["warnings"] = [redact_tree(w) for w in run.warnings]
    hardware = Hardware(gpu=" + ".join(dict.fromkeys(run.devices))) if run.devices else None
    figure = run.figure if run.failure is None and run.format != mllog.MLLOG else None
    return RunRecord(
        id=new_id(), created=now_iso(), status="failed" if run.failure else "ok", failure=redact_tree(run.failure),
        origin="import", stack=stack, settings=settings, runtime="imported", ranks=steady.annotate(run.ranks),
        hardware=hardware, command=redact_argv(list(run.command)), env=redact_env(dict(run.env)),
        software=dict(run.software), metrics=metrics, reported_images_per_sec=figure,
        log_tail=redact_tree(run.tail),  # a log's NAME=value lines and secret-shaped text are not stored
        fabric=run.fabric)


def provenance(run: ParsedRun, settings: Any, overrides: Mapping[str, Override]) -> dict[str, Any]:
    """Which figures and settings the log stated (with their lines), which repro derived (and how), and which
    --set gave: `repro results show` prints it for every imported record."""
    stated: dict[str, str] = {name: f"line {line}" for name, line in sorted(run.where.items(), key=lambda i: i[1])
                              if name not in overrides}
    if run.figure is not None and run.figure_line:
        stated["figure"] = f"line {run.figure_line}"
    said = run.metrics.get("stated") or []
    for name in said:  # a list of names, or (transformer-training readers) name -> where the log states it
        stated.setdefault(str(name), str(said[name]) if isinstance(said, Mapping) else "the log")
    derived = {str(k): str(v) for k, v in (run.metrics.get("derived") or {}).items()}
    if settings.global_batch is not None and "global_batch" not in run.settings and "global_batch" not in overrides:
        derived["global_batch"] = "batch per worker x workers"
    if any(r.step_times for r in run.ranks):
        derived.setdefault("step times", "the batch over each step's stated images/sec")
    return {"stated": stated, "derived": derived, "given": {k: o.given for k, o in overrides.items()}}


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
