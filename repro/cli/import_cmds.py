"""The import command: logs of benchmarks and training programs, or a published table, into the store."""

from __future__ import annotations

import argparse

from repro.cli.results_cmds import _ips, _store_option
from repro.inputs import path_argument


def _unit(record) -> str:
    """What a run's figure counts: images, or the tokens or samples an imported training log states."""
    items = record.metrics.get("items")
    return f"{items}/sec" if items in ("tokens", "samples") else "images/sec"


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
    imp.add_argument("--log-format", "--format", dest="log_format", default="auto", metavar="LOG_FORMAT",
                     help="log format: auto (default: detected, per run) or a reader's name (tf_cnn_benchmarks, "
                     "horovod_synthetic, mlperf, torch_ddp_benchmark, nccl_tests, megatron, torchtitan, ...; an "
                     "unknown name lists them); --format is its old spelling, deprecated: every other command's "
                     "--format is the output's")
    imp.add_argument("--set", dest="overrides", action="append", default=[], metavar="[PATTERN][#RUN]:NAME=VALUE",
                     help="a setting the logs do not show, for the files matching PATTERN (repeatable)")
    imp.add_argument("--hosts", type=int, metavar="N", help="same as --set hosts=N (every file)")
    imp.add_argument("--precision", choices=("fp32", "fp16"), help="same as --set precision=P (every file)")
    imp.add_argument("--xla", action="store_true", default=None, help="same as --set xla=true (every file)")
    imp.set_defaults(handler=cmd_import)


def _import_overrides(args: argparse.Namespace) -> tuple:
    from repro.errors import InputError
    from repro.results.importers import parse_overrides

    if args.hosts is not None and args.hosts < 1:
        raise InputError(f"--hosts: expected a positive number, found {args.hosts}")
    given = list(args.overrides)
    given += [f"hosts={args.hosts}"] if args.hosts is not None else []
    given += [f"precision={args.precision}"] if args.precision else []
    given += ["xla=true"] if args.xla else []
    return parse_overrides(given)


def _print_result(result) -> None:
    if result.status == "imported":
        print(f"  {result.file}: {len(result.records)} run{'s' if len(result.records) != 1 else ''}")
        for record in result.records:
            s = record.settings
            source = record.metrics.get("source", {})
            number = source.get("run", 0) + 1 if isinstance(source.get("run"), int) else "?"
            print(f"    #{number} {record.id}  lines {source.get('lines', '?')}  {s.workload} {s.model or '-'} "
                  f"workers={s.workers} {record.status} {_unit(record)}={_ips(record)}")
        for warning in result.warnings:
            print(f"    warning: {warning}")
        for run in result.unsettled:
            print(f"    NOT IMPORTED: {run}")
    elif result.status == "skipped":
        print(f"  {result.file}: skipped: {result.message}")
    else:
        print(f"  {result.file}: FAILED (see below)")


def cmd_import(args: argparse.Namespace) -> int:
    from repro.errors import InputError
    from repro.inputs import expand_directories
    from repro.results.importers import import_files, import_stack, known_sources, source_key, unmatched
    from repro.results.store import Store

    args.files = expand_directories(args.files)
    if bool(args.table) == bool(args.files):
        raise InputError("give log FILEs or --table CSV (one of the two)")
    overrides = _import_overrides(args)
    if args.table and overrides:
        raise InputError("--set, --hosts, --precision and --xla are for logs; a table states settings in its columns")
    stray = unmatched(overrides, args.files)
    if stray:
        raise InputError(f"--set {stray[0].given!r}: the pattern matches none of the files given")
    stack = import_stack(args.stack)
    store = Store(args.store)
    if args.table:
        from repro.results.published import import_table

        records = import_table(args.table, stack)
        known = known_sources(store.records())
        again = next((known[key] for r in records[:1] if (key := source_key(r)) and key in known), None)
        if again:
            print(f"{args.table}: skipped: already imported into stack {stack.name} (same content as records "
                  f"{', '.join(again[:3])}{'...' if len(again) > 3 else ''})")
            return 0
        for record in records:
            store.put(record)
        failed = sum(1 for r in records if r.status != "ok")
        print(f"imported {len(records)} row{'s' if len(records) != 1 else ''} into {store.root} as stack "
              f"{stack.name} (hash {stack.hash})"
              + (f"; {failed} without a figure (stored as failed)" if failed else ""))
        return 0
    results = import_files(args.files, stack, overrides, known_sources(store.records()), args.log_format)
    imported = [r for res in results for r in res.records]
    for record in imported:  # every good file's runs, whatever the bad ones
        store.put(record)
    bad = [res for res in results if res.status == "failed"]
    skipped = sum(1 for res in results if res.status == "skipped")
    print(f"imported {len(imported)} run{'s' if len(imported) != 1 else ''} from "
          f"{len(results) - len(bad) - skipped} file{'s' if len(results) - len(bad) - skipped != 1 else ''} into "
          f"{store.root} as stack {stack.name} (hash {stack.hash})"
          + (f"; {skipped} skipped" if skipped else "") + (f"; {len(bad)} failed" if bad else ""))
    for res in results:
        _print_result(res)
    if bad:
        diagnostics = [d for res in bad for d in (res.error.diagnostics if res.error else [])]
        plain = [res.error.message for res in bad if res.error and not res.error.diagnostics]
        raise InputError(f"{len(bad)} of {len(results)} file{'s' if len(results) != 1 else ''} could not be "
                         f"imported: {', '.join(res.file for res in bad)}" + ("; " + "; ".join(plain) if plain else ""),
                         diagnostics)
    unsettled = [res for res in results if res.unsettled]
    if unsettled:  # the good runs are stored; the ones that lack a setting are not, and the command says so
        raise InputError(f"{sum(len(res.unsettled) for res in unsettled)} run(s) not imported until --set gives "
                         f"what the log does not show: " + "; ".join(u for res in unsettled for u in res.unsettled),
                         hint="e.g. --set 'FILE#N:workers=8' for run N of FILE; the runs imported stay stored")
    return 0
