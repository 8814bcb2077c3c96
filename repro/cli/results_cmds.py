"""Commands on stored results: results (list, show, scaling) and import (logs, published tables)."""

from __future__ import annotations

import argparse

from repro.cli.compare_cmds import (
    SELECTORS_HELP,
    add_filter_options,
    add_format_option,
    add_window_options,
    filters_from,
)
from repro.inputs import path_argument


def _store_option(p: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    # on a subcommand, no default: a --store given before the subcommand's name stays
    p.add_argument("--store", metavar="DIR", default=argparse.SUPPRESS if subcommand else None, type=path_argument,
                   help="results store (default: $REPRO_STORE or ./results)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="list stored runs; show one; print scaling tables",
                       description="List the runs in the results store (id, created, stack, workload, model, "
                       "workers, hosts, status, images/sec). Subcommands: show ID, scaling [SELECTOR...].")
    _store_option(p)
    p.add_argument("--stack", metavar="S", type=path_argument, help=f"only this stack: {SELECTORS_HELP}")
    out = p.add_mutually_exclusive_group()
    add_format_option(out)
    out.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")
    out.add_argument("--csv", dest="format", action="store_const", const="csv", help="same as --format csv")
    add_filter_options(p)
    p.add_argument("--save-selection", metavar="FILE", type=path_argument,
                   help="write this selection (store, --stack, filters) to FILE (*.selection.json), which "
                   "`repro compare` accepts as OLD or NEW")
    p.set_defaults(handler=cmd_results)
    rs = p.add_subparsers(dest="results_command", metavar="SUBCOMMAND")

    show = rs.add_parser("show", help="one run in full", description="Print one stored run (id or unique prefix).")
    show.add_argument("id", metavar="ID", type=path_argument)
    _store_option(show, subcommand=True)
    show.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="the record as stored (JSON)")
    show.set_defaults(handler=cmd_show)

    sc = rs.add_parser("scaling", help="scaling table: speedup and efficiency per worker count",
                       description="The scaling table of the selected runs (all stored runs without SELECTOR): "
                       "workers, images/sec, per worker, speedup and efficiency against the 1-worker point of the "
                       "same series, and across-node efficiency where points span hosts.")
    sc.add_argument("selectors", nargs="*", metavar="SELECTOR", type=path_argument, help=SELECTORS_HELP)
    _store_option(sc, subcommand=True)
    add_filter_options(sc, subcommand=True)
    add_format_option(sc, subcommand=True)
    sc.add_argument("--plot", metavar="FILE", type=path_argument,
                    help="also write a figure (.png or .svg; checked before any work): images/sec per worker count, "
                    "stacks side by side with error bars and value labels, and speedup against the ideal line")
    add_window_options(sc)
    sc.set_defaults(handler=cmd_scaling)

    imp = sub.add_parser(
        "import", help="import tf_cnn_benchmarks / Horovod / MLPerf logs or a published table",
        description="Import existing results into the store as baselines: logs of tf_cnn_benchmarks (TF 1.x/2.x, "
        "one GPU, replicated, parameter server, Horovod, forward-only), of Horovod's synthetic benchmarks "
        "(TensorFlow, PyTorch), MLPerf :::MLLOG results (time to accuracy), or with --table a CSV of published "
        "figures (see docs/baselines). A file may hold several runs; each run becomes a record whose figure is "
        "the log's own summary (total images/sec). Settings a log does not show stay unknown unless --set "
        "states them. The same content is imported once per stack.",
        epilog="--set [PATTERN:]NAME=VALUE[,NAME=VALUE...]: PATTERN is a glob on the file's path or name "
        "(none: every file). NAME: model, batch, global_batch, workers, hosts, precision, xla, data, "
        "data_format, steps, warmup_steps, mode, variable_update, all_reduce, parameter_device, data_name, "
        "framework; any other name is a workload-specific setting. Example: --set 'logs/fp16-*.log:precision=fp16'"
        " --set 'logs/*:hosts=2'. exit status: 0 every file imported or skipped as already imported; 2 a file "
        "cannot be read or parsed (each is named with file:line; the good files are imported).")
    imp.add_argument("files", nargs="*", metavar="FILE", type=path_argument, help="log files")
    imp.add_argument("--table", metavar="CSV", type=path_argument, help="a CSV of published figures instead of logs")
    imp.add_argument("--stack", required=True, metavar="NAME", type=path_argument,
                     help="the stack the runs belong to: a name, or a manifest file (its hash then keys them)")
    _store_option(imp)
    imp.add_argument("--format", dest="log_format", choices=("auto", "tf_cnn_benchmarks", "horovod_synthetic",
                                                              "mlperf"),
                     default="auto", help="log format (default: detected, per run)")
    imp.add_argument("--set", dest="overrides", action="append", default=[], metavar="[PATTERN:]NAME=VALUE",
                     help="a setting the logs do not show, for the files matching PATTERN (repeatable)")
    imp.add_argument("--hosts", type=int, metavar="N", help="same as --set hosts=N (every file)")
    imp.add_argument("--precision", choices=("fp32", "fp16"), help="same as --set precision=P (every file)")
    imp.add_argument("--xla", action="store_true", default=None, help="same as --set xla=true (every file)")
    imp.set_defaults(handler=cmd_import)


def _ips(record) -> str:
    from repro.results.metrics import throughput

    value = throughput(record)
    return "-" if value is None else f"{value:,.2f}"


def _summary(record) -> dict:
    from repro.results.metrics import throughput

    s = record.settings
    return {"id": record.id, "created": record.created, "stack": record.stack.name, "stack_hash": record.stack.hash,
            "origin": record.origin, "workload": s.workload, "model": s.model, "batch": s.batch_per_worker,
            "workers": s.workers, "hosts": s.hosts, "status": record.status, "images_per_sec": throughput(record),
            "failure": record.failure}


def cmd_results(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from repro.compare.select import select, write_selection_file
    from repro.results.store import Store

    store = Store(args.store)
    filters = filters_from(args)
    if args.save_selection:
        path = write_selection_file(Path(args.save_selection), store.root, args.stack, filters)
        print(f"selection written to {path}", file=sys.stderr)
    if args.stack:
        records = list(select(args.stack, store, filters).records)
    else:
        records = [r for r in store.records() if filters.matches(r.settings)]
    rows = [_summary(r) for r in records]
    if not rows and args.format == "table":
        print(f"no runs in {store.root}")
        return 0
    cells = [(r["id"], r["created"], r["stack"], r["workload"], r["model"] or "-", str(r["workers"]), str(r["hosts"]),
              r["status"] if r["origin"] == "bench" else f"{r['status']} ({r['origin']})", _ips(rec))
             for r, rec in zip(rows, records, strict=True)]
    sys.stdout.write(_listing(rows, cells, args.format))
    return 0


def _listing(rows: list[dict], cells: list[tuple[str, ...]], fmt: str) -> str:
    """The `repro results` listing in a registered format (json and csv: the rows' raw values)."""
    from repro.formats import Column, Document, Table, render

    headers = ("id", "created", "stack", "workload", "model", "workers", "hosts", "status", "images/sec")
    columns = tuple(Column(h, numeric=h in ("workers", "hosts", "images/sec")) for h in headers)
    return render(Document((Table(columns, tuple(cells), tuple(rows), name="runs"),), data=rows), fmt)


def cmd_show(args: argparse.Namespace) -> int:
    import json

    import yaml

    from repro.results.store import Store

    record = Store(args.store).get(args.id)
    data = record.model_dump(mode="json")
    if getattr(args, "json", False):  # `results --json` is `--format json` now; show keeps its own --json
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    summary = _summary(record)
    for key in ("id", "created", "stack", "stack_hash", "origin", "status", "failure", "workload", "model", "batch",
                "workers", "hosts", "images_per_sec"):
        value = summary.get(key)
        if value is not None:
            print(f"{key + ':':16}{f'{value:,.2f}' if isinstance(value, float) else value}")
    for r in record.ranks:
        steps = r.step_times
        mean = sum(steps) / len(steps) if steps else None
        print(f"rank {r.rank:<4} {r.device:32} {len(steps):4} steps"
              + (f", mean {mean:.4f} s, {r.items_per_step} items/step" if mean else ""))
    rest = {k: data[k] for k in ("settings", "published", "metrics", "software", "command", "lock")
            if data.get(k)}
    print(yaml.safe_dump(rest, sort_keys=False, default_flow_style=False, allow_unicode=True), end="")
    return 0


def cmd_scaling(args: argparse.Namespace) -> int:
    import sys

    from repro.compare.select import records_of, select
    from repro.errors import ResultsError
    from repro.results import metrics
    from repro.results.report import scaling_table
    from repro.results.store import Store
    from repro.workloads.catalog import kind_of

    if args.plot:
        from repro.results.plots import check_target

        check_target(args.plot)  # before any work
    store = Store(args.store)
    filters = filters_from(args)
    if args.selectors:
        records = records_of([select(s, store, filters) for s in args.selectors])
    else:
        records = [r for r in store.records() if filters.matches(r.settings)]
    records = [r for r in records if kind_of(r.settings.workload) == "throughput"]
    if not records:
        raise ResultsError(f"no throughput runs to tabulate in {store.root}")
    rows = metrics.scaling(metrics.points(records, warmup=args.warmup), baseline_workers=args.baseline_workers)
    sys.stdout.write(scaling_table(rows, args.format))
    if args.plot:
        from repro.results.figures import plot_scaling

        print(f"plot written to {plot_scaling(rows, args.plot)}", file=sys.stderr)
    return 0


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
            print(f"    {record.id}  lines {source.get('lines', '?')}  {s.workload} {s.model or '-'} "
                  f"workers={s.workers} {record.status} images/sec={_ips(record)}")
        for warning in result.warnings:
            print(f"    warning: {warning}")
    elif result.status == "skipped":
        print(f"  {result.file}: skipped: {result.message}")
    else:
        print(f"  {result.file}: FAILED (see below)")


def cmd_import(args: argparse.Namespace) -> int:
    from repro.errors import InputError
    from repro.results.importers import import_files, import_stack, known_sources, source_key, unmatched
    from repro.results.store import Store

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
    return 0
