"""Commands on stored results: results (list, show, scaling) and import (logs, published tables)."""

from __future__ import annotations

import argparse

from repro.cli.compare_cmds import SELECTORS_HELP, add_filter_options, filters_from


def _store_option(p: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    # on a subcommand, no default: a --store given before the subcommand's name stays
    p.add_argument("--store", metavar="DIR", default=argparse.SUPPRESS if subcommand else None,
                   help="results store (default: $REPRO_STORE or ./results)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="list stored runs; show one; print scaling tables",
                       description="List the runs in the results store (id, created, stack, workload, model, "
                       "workers, hosts, status, images/sec). Subcommands: show ID, scaling [SELECTOR...].")
    _store_option(p)
    p.add_argument("--stack", metavar="S", help=f"only this stack: {SELECTORS_HELP}")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON records summary")
    out.add_argument("--csv", action="store_true", help="CSV")
    add_filter_options(p)
    p.add_argument("--save-selection", metavar="FILE",
                   help="write this selection (store, --stack, filters) to FILE (*.selection.json), which "
                   "`repro compare` accepts as OLD or NEW")
    p.set_defaults(handler=cmd_results)
    rs = p.add_subparsers(dest="results_command", metavar="SUBCOMMAND")

    show = rs.add_parser("show", help="one run in full", description="Print one stored run (id or unique prefix).")
    show.add_argument("id", metavar="ID")
    _store_option(show, subcommand=True)
    show.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="the record as stored (JSON)")
    show.set_defaults(handler=cmd_show)

    sc = rs.add_parser("scaling", help="scaling table: speedup and efficiency per worker count",
                       description="The scaling table of the selected runs (all stored runs without SELECTOR): "
                       "workers, images/sec, per worker, speedup and efficiency against the 1-worker point of the "
                       "same series, and across-node efficiency where points span hosts.")
    sc.add_argument("selectors", nargs="*", metavar="SELECTOR", help=SELECTORS_HELP)
    _store_option(sc, subcommand=True)
    add_filter_options(sc, subcommand=True)
    sc.add_argument("--format", choices=("table", "markdown", "csv", "json"), default="table")
    sc.set_defaults(handler=cmd_scaling)

    imp = sub.add_parser(
        "import", help="import tf_cnn_benchmarks / Horovod benchmark logs or a published table",
        description="Import existing results into the store: logs of tf_cnn_benchmarks or of Horovod's synthetic "
        "benchmark (one run per file), or with --table a CSV of published figures (columns system, gpus, "
        "images_per_sec; optionally top1, top5, model, batch, precision, note, source; see docs/baselines).",
        epilog="exit status: 0 imported; 2 a file cannot be read or parsed (the message names file and line).")
    imp.add_argument("files", nargs="*", metavar="FILE", help="log files")
    imp.add_argument("--table", metavar="CSV", help="a CSV of published figures instead of logs")
    imp.add_argument("--stack", required=True, metavar="NAME",
                     help="the stack the runs belong to: a name, or a manifest file (its hash then keys them)")
    _store_option(imp)
    imp.add_argument("--format", dest="log_format", choices=("auto", "tf_cnn_benchmarks", "horovod_synthetic"),
                     default="auto", help="log format (default: detected)")
    imp.add_argument("--hosts", type=int, metavar="N", help="hosts the runs spanned (logs do not say; default 1)")
    imp.add_argument("--precision", choices=("fp32", "fp16"), help="precision, when the log does not show it")
    imp.add_argument("--xla", action="store_true", default=None, help="the runs used XLA (when the log does not "
                     "show the command line)")
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
    import csv
    import json
    import sys
    from pathlib import Path

    from tabulate import tabulate

    from repro.results.select import select, write_selection_file
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
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if args.csv:
        fields = list(rows[0]) if rows else ["id"]
        writer = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
        return 0
    if not rows:
        print(f"no runs in {store.root}")
        return 0
    table = [[r["id"], r["created"], r["stack"], r["workload"], r["model"] or "-", r["workers"], r["hosts"],
              r["status"] if r["origin"] == "bench" else f"{r['status']} ({r['origin']})",
              _ips(rec)] for r, rec in zip(rows, records, strict=True)]
    print(tabulate(table, headers=["id", "created", "stack", "workload", "model", "workers", "hosts", "status",
                                   "images/sec"], disable_numparse=True))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    import json

    import yaml

    from repro.results.store import Store

    record = Store(args.store).get(args.id)
    data = record.model_dump(mode="json")
    if args.json:
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

    from repro.results.select import records_of, select
    from repro.errors import ResultsError
    from repro.results import metrics
    from repro.results.report import scaling_table
    from repro.results.store import Store

    store = Store(args.store)
    filters = filters_from(args)
    if args.selectors:
        records = records_of([select(s, store, filters) for s in args.selectors])
    else:
        records = [r for r in store.records() if filters.matches(r.settings)]
    records = [r for r in records if r.settings.workload not in ("allreduce", "tta")]
    if not records:
        raise ResultsError(f"no throughput runs to tabulate in {store.root}")
    rows = metrics.scaling(metrics.points(records))
    sys.stdout.write(scaling_table(rows, args.format))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from repro.errors import InputError
    from repro.results.importers import import_log, import_stack
    from repro.results.store import Store

    if bool(args.table) == bool(args.files):
        raise InputError("give log FILEs or --table CSV (one of the two)")
    if args.hosts is not None and args.hosts < 1:
        raise InputError(f"--hosts: expected a positive number, found {args.hosts}")
    stack = import_stack(args.stack)
    store = Store(args.store)
    if args.table:
        from repro.results.published import import_table

        records = import_table(args.table, stack)
    else:  # parse every file before storing any, so a bad file leaves the store unchanged
        records = [import_log(f, stack, fmt=args.log_format, hosts=args.hosts, precision=args.precision,
                              xla=args.xla) for f in args.files]
    for record in records:
        store.put(record)
    failed = sum(1 for r in records if r.status != "ok")
    print(f"imported {len(records)} run{'s' if len(records) != 1 else ''} into {store.root} as stack "
          f"{stack.name} (hash {stack.hash})" + (f"; {failed} without a figure (stored as failed)" if failed else ""))
    for record in records:
        s = record.settings
        print(f"  {record.id}  {s.workload} {s.model or '-'} workers={s.workers} {record.status} "
              f"images/sec={_ips(record)}")
    return 0
