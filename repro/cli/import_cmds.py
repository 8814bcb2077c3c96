"""The import command: logs of benchmarks and training programs, or a published table, into the store."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from repro.cli.results_cmds import _store_option
from repro.formats import FORMATS
from repro.inputs import path_argument

if TYPE_CHECKING:  # the pipeline's types, for annotations only
    from repro.formats import Document
    from repro.pipeline.importing import Imported, ImportedFile, ImportRequest


class _FormatOrLogFormat(argparse.Action):
    """--format: a registered output format (table, markdown, csv, json); any other name is the log format, as
    --format meant before --log-format existed (the deprecated spelling, kept working)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, "format" if values in FORMATS.names() else "log_format", values)


def register(sub: argparse._SubParsersAction) -> None:
    """The import subcommand."""
    imp = sub.add_parser(
        "import", help="import tf_cnn_benchmarks / Horovod / MLPerf logs or a published table",
        description="Import existing results into the store as baselines: logs of tf_cnn_benchmarks (TF 1.x/2.x, "
        "one GPU, replicated, parameter server, Horovod, forward-only), of Horovod's, BytePS's and Bluefog's synthetic "
        "benchmarks (TensorFlow, PyTorch), of PyTorch's DDP benchmark, nccl-tests tables and torch.distributed "
        "all-reduce benchmark lines (all-reduce), "
        "Megatron-LM, torchtitan, DeepSpeed and Hugging Face Trainer training logs (tokens/sec or samples/sec as "
        "stated; NCCL INFO lines in a log are kept as the run's NCCL facts), pytorch/examples' ImageNet training "
        "lines (images/sec derived from its batch and iteration time), MLPerf results (:::MLLOG, and the "
        "v0.5/v0.6 line formats; time to accuracy), or with --table a CSV of published figures "
        "(see docs/baselines). A file may hold several "
        "runs; each run becomes a record whose figure is "
        "the log's own summary (total images/sec). Settings a log does not show stay unknown unless --set "
        "states them. The same content is imported once per stack.",
        epilog="--set [PATTERN][#RUN]:NAME=VALUE[,NAME=VALUE...]: PATTERN is a glob on the file's path or name "
        "(none: every file); #RUN picks one run of a file by its number as the import lists it (#2) or by "
        "lines it overlaps (#40-75). NAME: model, batch, global_batch, workers, hosts, precision, xla, data, "
        "data_format, steps, warmup_steps, mode, variable_update, all_reduce, parameter_device, data_name, "
        "framework; any other name is a workload-specific setting. Example: --set 'logs/fp16-*.log:precision=fp16'"
        " --set 'logs/*:hosts=2'. exit status: 0 every file imported or skipped as already imported; 2 a file "
        "cannot be read or parsed (each is named with file:line; the good files are imported).")
    imp.add_argument("files", nargs="*", metavar="FILE", type=path_argument, help="log files, or directories of them")
    imp.add_argument("--table", metavar="CSV", type=path_argument, help="a CSV of published figures instead of logs")
    imp.add_argument("--stack", required=True, metavar="NAME", type=path_argument,
                     help="the stack the runs belong to: a name, or a manifest file (its hash then keys them)")
    _store_option(imp)
    # the readers' names are checked when the logs are read (an unknown one gets the list): importing the readers
    # here would load the record model on every command's start
    imp.add_argument("--log-format", dest="log_format", default="auto", metavar="LOG_FORMAT",
                     help="log format: auto (default: detected, per run) or a reader's name (tf_cnn_benchmarks, "
                     "horovod_synthetic, mlperf, torch_ddp_benchmark, nccl_tests, megatron, torchtitan, ...; an "
                     "unknown name lists them)")
    imp.add_argument("--format", action=_FormatOrLogFormat, default="table", metavar="FORMAT",
                     help=f"output format: {', '.join(FORMATS.names())} (default table; json: docs/baselines); "
                     "any other name is a log format, as --log-format (the old spelling, deprecated)")
    imp.add_argument("--set", dest="overrides", action="append", default=[], metavar="[PATTERN][#RUN]:NAME=VALUE",
                     help="a setting the logs do not show, for the files matching PATTERN (repeatable)")
    imp.add_argument("--hosts", type=int, metavar="N", help="same as --set hosts=N (every file)")
    imp.add_argument("--precision", choices=("fp32", "fp16"), help="same as --set precision=P (every file)")
    imp.add_argument("--xla", action="store_true", default=None, help="same as --set xla=true (every file)")
    imp.set_defaults(handler=cmd_import)


def _request(args: argparse.Namespace) -> ImportRequest:
    from repro.pipeline.importing import ImportRequest

    return ImportRequest(stack=args.stack, files=tuple(args.files), table=args.table, store=args.store,
                         overrides=tuple(args.overrides), hosts=args.hosts, precision=args.precision,
                         xla=bool(args.xla), log_format=args.log_format)


def cmd_import(args: argparse.Namespace) -> int:
    from repro.cli.output import write
    from repro.formats import render
    from repro.pipeline.importing import import_runs

    result = import_runs(_request(args))
    write(render(_document(result, args.format), args.format))
    if result.problem is not None:  # the good files' runs are stored; the bad ones are named, exit 2
        raise result.problem
    return 0


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _headline(result: Imported) -> str:
    """The first line: how many runs from how many files went into which store and stack."""
    where = f"into {result.root} as stack {result.stack.name} (hash {result.stack.hash})"
    runs = result.runs
    if result.table:
        failed = sum(1 for r in runs if r.status != "ok")
        return (f"imported {_plural(len(runs), 'row')} {where}"
                + (f"; {failed} without a figure (stored as failed)" if failed else ""))
    skipped, bad = result.count("skipped"), result.count("failed")
    return (f"imported {_plural(len(runs), 'run')} from {_plural(result.count('imported'), 'file')} {where}"
            + (f"; {skipped} skipped" if skipped else "") + (f"; {bad} failed" if bad else ""))


def _file_lines(f: ImportedFile) -> list[str]:
    """One file's lines: its runs, warnings and runs not imported; or why it was skipped or failed."""
    if f.status == "skipped":
        return [f"  {f.file}: skipped: {f.message}"]
    if f.status != "imported":
        return [f"  {f.file}: FAILED (see below)"]
    return [f"  {f.file}: {_plural(len(f.runs), 'run')}",
            *(f"    #{r.number or '?'} {r.id}  lines {r.lines or '?'}  {r.workload} {r.model or '-'} "
              f"workers={r.workers} {r.status} {r.unit}={'-' if r.figure is None else f'{r.figure:,.2f}'}"
              for r in f.runs),
            *(f"    warning: {w}" for w in f.warnings), *(f"    NOT IMPORTED: {u}" for u in f.unsettled)]


def _text(result: Imported) -> tuple[str, ...]:
    """What a terminal shows: the headline and each file's lines (a table already imported: one line)."""
    if result.table:
        table = result.files[0]
        return (f"{table.file}: skipped: {table.message}",) if table.status == "skipped" else (_headline(result),)
    return (_headline(result), *(line for f in result.files for line in _file_lines(f)))


RUN_FIELDS = ("file", "run", "id", "lines", "workload", "model", "workers", "status", "figure", "unit")


def _document(result: Imported, fmt: str) -> Document:
    """The import's result: its text on a terminal; a table of the runs stored, and the files' fates in json."""
    from dataclasses import asdict

    from repro.formats import Column, Document, Table, Text

    if fmt == "table":
        return Document((Text(_text(result)),))
    rows = tuple({"file": f.file, "run": r.number, **{k: v for k, v in asdict(r).items() if k != "number"}}
                 for f in result.files for r in f.runs)
    cells = tuple(tuple("-" if row[k] is None else str(row[k]) for k in RUN_FIELDS) for row in rows)
    table = Table(tuple(Column(k, numeric=k in ("run", "workers", "figure")) for k in RUN_FIELDS), cells, rows,
                  name="runs")
    return Document((Text((_headline(result),)), table), data=_data(result, rows))


def _data(result: Imported, rows: tuple[dict, ...]) -> dict:
    """`repro import --format json`: the store, the stack, the runs stored and what became of each file."""
    return {"store": str(result.root), "stack": result.stack.name, "stack_hash": result.stack.hash,
            "source": "table" if result.table else "logs", "runs": list(rows),
            "files": [{"file": f.file, "status": f.status, "message": f.message, "warnings": list(f.warnings),
                       "not_imported": list(f.unsettled)} for f in result.files]}
