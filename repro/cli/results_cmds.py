"""Commands on stored results: results (list, show, table, rm, prune); import is in repro.cli.import_cmds."""

from __future__ import annotations

import argparse

from repro.cli.compare_cmds import (
    SELECTORS_HELP,
    add_filter_options,
    add_format_option,
    add_window_options,
    filters_from,
    reading_store,
)
from repro.inputs import finite_number, path_argument


def _store_option(p: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    # on a subcommand, no default: a --store given before the subcommand's name stays
    p.add_argument("--store", metavar="DIR", default=argparse.SUPPRESS if subcommand else None, type=path_argument,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")


def _subcommand_format(p: argparse.ArgumentParser, what: str) -> None:
    """--format (and --json) on a results subcommand; a --format given before its name stays."""
    from repro.formats import FORMATS

    out = p.add_mutually_exclusive_group()
    out.add_argument("--format", choices=FORMATS.names(), default=argparse.SUPPRESS,
                     help=f"output format of {what}: {FORMATS.describe()} (default table)")
    out.add_argument("--json", dest="format", action="store_const", const="json", default=argparse.SUPPRESS,
                     help="same as --format json")


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
    _subcommand_format(show, "the run (table: text; json: the record as stored)")
    show.set_defaults(handler=cmd_show)

    sc = rs.add_parser("scaling", aliases=["table"],
                       help="the tables of stored runs: scaling, all-reduce (nccl-tests style), time to accuracy",
                       description="The tables `repro bench` prints at the end of a sweep, from the store, for the "
                       "selected runs (all stored runs without SELECTOR), one per kind of result: the scaling table "
                       "(workers, images/sec, per worker, speedup and efficiency against the 1-worker point of the "
                       "same series, across-node efficiency where points span hosts); the all-reduce table per "
                       "point (time, algbw, busbw and #wrong per message size for Horovod and the raw path, as "
                       "nccl-tests prints them, with the average bus bandwidth); the time-to-accuracy table (a row "
                       "per run and the mean of each point's runs).")
    sc.add_argument("selectors", nargs="*", metavar="SELECTOR", type=path_argument, help=SELECTORS_HELP)
    _store_option(sc, subcommand=True)
    sc.add_argument("--stack", dest="stack", action="append", default=argparse.SUPPRESS, metavar="S",
                    type=path_argument, help="the same as a SELECTOR (as `repro results --stack S`; repeatable)")
    add_filter_options(sc, subcommand=True)
    add_format_option(sc, subcommand=True)
    from repro.compare.kind import KINDS

    sc.add_argument("--kind", choices=KINDS.names(), default=None,
                    help="only this kind of result (default: `table` every kind among the selected runs; `scaling` "
                    "the throughput runs, or every kind where the selection holds none)")
    sc.add_argument("--plot", metavar="FILE", type=path_argument,
                    help="also write a figure (.png or .svg; checked before any work) of one kind: images/sec per "
                    "worker count with error bars and speedup against the ideal line; all-reduce latency and bus "
                    "bandwidth per size for both paths; accuracy against time")
    sc.add_argument("--link-gbps", type=finite_number, default=None, metavar="GBIT/S",
                    help="all-reduce: link speed to compare bus bandwidth with (default: from the hosts' facts)")
    add_window_options(sc)
    sc.set_defaults(handler=cmd_scaling)

    rm = rs.add_parser("rm", help="remove runs by id", description="Remove stored runs: each ID is a record id or "
                       "a unique prefix of one. Nothing is removed unless every ID names exactly one run.")
    rm.add_argument("ids", nargs="+", metavar="ID")
    _store_option(rm, subcommand=True)
    rm.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    _subcommand_format(rm, "the runs removed")
    rm.set_defaults(handler=cmd_rm)

    pr = rs.add_parser("prune", help="remove failed, old, or one stack's runs",
                       description="Remove the runs that match every criterion given (at least one): --failed, "
                       "--older-than, --stack; --unreadable also removes record files that cannot be read "
                       "(never those written by a newer repro). Filters narrow --stack further.")
    _store_option(pr, subcommand=True)
    pr.add_argument("--failed", action="store_true", help="failed runs")
    pr.add_argument("--older-than", metavar="AGE", help="runs created before an age (90m, 12h, 30d, 2w) or a date "
                    "(2024-05-01)")
    pr.add_argument("--stack", metavar="S", default=argparse.SUPPRESS,
                    help="runs of this stack (a stack name, hash or prefix, or manifest file)")
    pr.add_argument("--unreadable", action="store_true", help="record files that cannot be read (not JSON, "
                    "truncated, invalid)")
    add_filter_options(pr, subcommand=True)
    pr.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    _subcommand_format(pr, "the runs removed")
    pr.set_defaults(handler=cmd_prune)


def _ips(record) -> str:
    from repro.results.metrics import throughput

    value = throughput(record)
    return "-" if value is None else f"{value:,.2f}"


def _row(summary) -> dict:
    """One run as `repro results --json` lists it (from the index's summary, no record parsed)."""
    return {"id": summary.id, "created": summary.created, "stack": summary.stack, "stack_hash": summary.stack_hash,
            "origin": summary.origin, "workload": summary.workload, "model": summary.model,
            "batch": summary.batch_per_worker, "workers": summary.workers, "hosts": summary.hosts,
            "status": summary.status, "images_per_sec": summary.images_per_sec, "failure": summary.failure}


def _cells(s, figure: tuple[float | None, str] | None = None) -> tuple[str, ...]:
    """One run's row of the `repro results` table; `figure`: the run's figure and unit when the listing holds
    other kinds of result than images/sec."""
    if figure is None:
        shown = "-" if s.images_per_sec is None else f"{s.images_per_sec:,.2f}"
    else:
        value, unit = figure
        shown = "-" if value is None else f"{value:,.2f} {unit}"
    return (s.id, s.created, s.stack, s.workload, s.model or "-", str(s.workers), str(s.hosts),
            s.status if s.origin == "bench" else f"{s.status} ({s.origin})", shown)


def _figures(store, summaries: list) -> dict[str, tuple[float | None, str]]:
    """The figure of every run that is not a throughput run (all-reduce, time to accuracy), by id: only those
    records are read; {} when every run measures images/sec."""
    from repro.workloads.catalog import kind_of

    other = [s for s in summaries if kind_of(s.workload) != "throughput"]
    if not other:
        return {}
    from repro.compare.kind import headline

    return {r.id: headline(r) for r in store.read_all(other)}


def _list_rows(store, args: argparse.Namespace) -> list:
    from repro.results.select import select

    filters = filters_from(args)
    if args.stack:
        return list(select(args.stack, store, filters).summaries)
    return [s for s in store.summaries() if filters.matches(s)]


def cmd_results(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from repro.results.select import write_selection_file

    store = reading_store(args.store)
    if args.save_selection:
        path = write_selection_file(Path(args.save_selection), store.root, args.stack, filters_from(args))
        print(f"selection written to {path}", file=sys.stderr)
    summaries = _list_rows(store, args)
    if not summaries and args.format == "table":
        print(f"no runs in {store.root}")
        return 0
    figures = _figures(store, summaries)
    rows = [_row(s) for s in summaries]
    if figures:
        for row, s in zip(rows, summaries, strict=True):
            value, unit = figures.get(s.id) or (s.images_per_sec, "images/sec")
            row |= {"figure": value, "unit": unit}
    cells = [_cells(s, (figures.get(s.id) or (s.images_per_sec, "images/sec")) if figures else None)
             for s in summaries]
    sys.stdout.write(_listing(rows, cells, args.format, "figure" if figures else "images/sec"))
    return 0


def _listing(rows: list[dict], cells: list[tuple[str, ...]], fmt: str, figure: str = "images/sec") -> str:
    """The `repro results` listing in a registered format (json and csv: the rows' raw values)."""
    from repro.formats import Column, Document, Table, render

    headers = ("id", "created", "stack", "workload", "model", "workers", "hosts", "status", figure)
    columns = tuple(Column(h, numeric=h in ("workers", "hosts", figure)) for h in headers)
    return render(Document((Table(columns, tuple(cells), tuple(rows), name="runs"),), data=rows), fmt)


def cmd_show(args: argparse.Namespace) -> int:
    import json
    import shlex
    import sys

    import yaml

    from repro.pipeline.software import software_line
    from repro.results.index import summarize
    from repro.results.metrics import with_figure

    record = with_figure(reading_store(args.store).get(args.id))  # the one images/sec, also for older records
    data = record.model_dump(mode="json")
    if args.format == "json":  # the record as stored
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    if args.format != "table":
        from repro.cli.output import tree_text

        sys.stdout.write(tree_text(data, args.format))
        return 0
    summary = _row(summarize("", record))
    for key in ("id", "created", "stack", "stack_hash", "origin", "status", "failure", "workload", "model", "batch",
                "workers", "hosts", "images_per_sec"):
        value = summary.get(key)
        if value is not None:
            print(f"{key + ':':16}{f'{value:,.2f}' if isinstance(value, float) else value}")
    if record.image is not None:
        print(f"{'image:':16}{record.image.tag} ({record.image.image_id})")
    for host, sw in record.host_software.items():
        print(f"{'software:':16}{host}: {software_line(sw)}")
    if record.command:
        print(f"{'command:':16}{shlex.join(record.command)}")
    if record.conditions is not None:
        from repro.results.conditions import describe

        for host, cond in record.conditions.hosts.items():
            print(f"{'conditions:':16}{host}: {describe(cond)}")
        for warning in record.conditions.warnings:
            print(f"{'warning:':16}{warning}")
    if record.fabric is not None and record.fabric.lines:  # measured and imported runs alike
        from repro.pipeline.fabric import summary, warnings  # the CLI reaches results through the pipeline

        print(f"{'fabric:':16}{summary(record.fabric)}")
        for warning in warnings(record.fabric):
            print(f"{'warning:':16}{warning}")
    for r in record.ranks:
        steps = r.step_times
        mean = sum(steps) / len(steps) if steps else None
        print(f"rank {r.rank:<4} {r.host or '-':10} {r.device:32} {len(steps):4} steps"
              + (f", mean {mean:.4f} s, {r.items_per_step} items/step" if mean else ""))
    _print_provenance(record.metrics.get("provenance"))
    data["settings"] = record.settings.shown()  # in the programs' words, as every store has printed them
    rest = {k: data[k] for k in ("settings", "published", "metrics", "software", "hardware") if data.get(k)}
    if isinstance(rest.get("metrics"), dict):
        rest["metrics"] = {k: v for k, v in rest["metrics"].items() if k != "provenance"}
    print(yaml.safe_dump(rest, sort_keys=False, default_flow_style=False, allow_unicode=True), end="")
    if record.status != "ok" and record.log_tail:
        print("log tail (the launcher's last lines):")
        print("  " + record.log_tail.replace("\n", "\n  "))
    return 0


def _print_provenance(prov: object) -> None:
    """An imported record's figures: what the log stated, what repro derived, what --set gave."""
    if not isinstance(prov, dict):
        return
    for key, title in (("stated", "stated by the log"), ("derived", "derived by repro"), ("given", "given with --set")):
        items = prov.get(key) or {}
        if items:
            print(f"{title + ':':20}" + "; ".join(f"{k} ({v})" for k, v in items.items()))


def cmd_scaling(args: argparse.Namespace) -> int:
    import sys

    from repro.formats import render
    from repro.pipeline.table import tabulate

    given = getattr(args, "stack", None)  # `results --stack S table` or `results table --stack S`
    stacks = [given] if isinstance(given, str) else list(given or [])
    table = tabulate(reading_store(args.store), [*args.selectors, *stacks], filters_from(args), kind=args.kind,
                     throughput_first=args.results_command == "scaling", warmup=args.warmup,
                     baseline_workers=args.baseline_workers, link_gbps=args.link_gbps, plot=args.plot)
    sys.stdout.write(render(table.document, args.format))
    if table.plot is not None:
        print(f"plot written to {table.plot}", file=sys.stderr)
    return 0


def _removal(store, runs: list, files: list, dry_run: bool, fmt: str = "table") -> int:
    import sys

    from repro.formats import is_machine

    what = "would remove" if dry_run else "removed"
    if fmt != "table":
        from repro.formats import Column, Document, Table, render

        rows = [{"action": what, "id": s.id, "stack": s.stack, "workload": s.workload, "model": s.model,
                 "workers": s.workers, "status": s.status, "created": s.created, "file": s.path} for s in runs]
        rows += [{"action": what, "id": None, "stack": None, "workload": None, "model": None, "workers": None,
                  "status": f"unreadable ({b.reason})", "created": None, "file": b.path} for b in files]
        headers = ("action", "id", "stack", "workload", "model", "workers", "status", "created", "file")
        cells = tuple(tuple("-" if r[h] is None else str(r[h]) for h in headers) for r in rows)
        sys.stdout.write(render(Document((Table(tuple(Column(h, numeric=h == "workers") for h in headers), cells,
                                                tuple(rows), name="removed"),)), fmt))
    else:
        for s in runs:
            print(f"{what} {s.id}  {s.stack}  {s.workload} {s.model or '-'} workers={s.workers}  {s.status}  "
                  f"{s.created}")
        for b in files:
            print(f"{what} {store.runs / b.path}  ({b.reason})")
    if not dry_run:
        store.remove([s.path for s in runs] + [b.path for b in files])
    counts = [f"{n} {noun}{'s' if n != 1 else ''}" for n, noun in ((len(runs), "run"),
                                                                     (len(files), "unreadable file")) if n]
    print(f"{what} {' and '.join(counts)} from {store.root}" if counts else f"nothing to remove in {store.root}",
          file=sys.stderr if is_machine(fmt) else sys.stdout)
    return 0


def cmd_rm(args: argparse.Namespace) -> int:

    store = reading_store(args.store)
    paths = list(dict.fromkeys(store.find(i) for i in args.ids))  # every id resolved before anything goes
    by_path = {s.path: s for s in store.summaries(stack_hashes=sorted({p.split("/", 1)[0] for p in paths}))}
    broken = {b.path: b for b in store.broken()}
    return _removal(store, [by_path[p] for p in paths if p in by_path], [broken[p] for p in paths if p in broken],
                    args.dry_run, args.format)


def cmd_prune(args: argparse.Namespace) -> int:
    from datetime import datetime, timezone

    from repro.errors import InputError
    from repro.results.prune import Criteria, parse_cutoff, to_prune
    from repro.results.select import select

    store = reading_store(args.store)
    stack_paths = None
    if getattr(args, "stack", None):
        selection = select(args.stack, store, filters_from(args))
        if selection.source is not store:
            raise InputError(f"--stack {args.stack}: give a stack name, hash or manifest file of {store.root}")
        stack_paths = frozenset(s.path for s in selection.summaries)
    elif not filters_from(args).empty:
        raise InputError("the filters (--model, --batch, ...) narrow --stack; give --stack too")
    before = parse_cutoff(args.older_than, datetime.now(timezone.utc)) if args.older_than else None
    criteria = Criteria(failed=args.failed, before=before, stack_paths=stack_paths, unreadable=args.unreadable)
    runs, files = to_prune(store.summaries() if criteria.selects_runs else [], store.broken(), criteria)
    return _removal(store, runs, files, args.dry_run, args.format)
