"""Commands on stored results: results (list, show, table, rm, prune); import is in repro.cli.import_cmds."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from repro.cli.compare_cmds import SELECTORS_HELP, add_filter_options, add_format_option, add_window_options
from repro.inputs import finite_number, path_argument

if TYPE_CHECKING:  # the pipeline's result types, for annotations only
    from repro.pipeline.runs import Filters, Listing, Removal


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
    from repro.pipeline.choices import result_kinds

    sc.add_argument("--kind", choices=result_kinds(), default=None,
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


def _filters(args: argparse.Namespace) -> Filters:
    """--model --batch --precision --workers --hosts as the selection's filters."""
    from repro.pipeline.runs import parse_filters

    return parse_filters(models=getattr(args, "model", []), batches=getattr(args, "batch", []),
                         precisions=getattr(args, "precision", []), workers=getattr(args, "workers", []),
                         hosts=getattr(args, "hosts", []))


def _row(s, listing: Listing) -> dict:
    """One run as `repro results --json` lists it (from the index's summary, no record parsed)."""
    row = {"id": s.id, "created": s.created, "stack": s.stack, "stack_hash": s.stack_hash, "origin": s.origin,
           "workload": s.workload, "model": s.model, "batch": s.batch_per_worker, "workers": s.workers,
           "hosts": s.hosts, "status": s.status, "images_per_sec": s.images_per_sec, "failure": s.failure}
    if listing.figures:  # other kinds of result than images/sec: each run's own figure and unit
        value, unit = listing.figure(s)
        row |= {"figure": value, "unit": unit}
    return row


def _cells(s, listing: Listing) -> tuple[str, ...]:
    """One run's row of the `repro results` table."""
    value, unit = listing.figure(s)
    shown = "-" if value is None else f"{value:,.2f}" + (f" {unit}" if listing.figures else "")
    return (s.id, s.created, s.stack, s.workload, s.model or "-", str(s.workers), str(s.hosts),
            s.status if s.origin == "bench" else f"{s.status} ({s.origin})", shown)


def cmd_results(args: argparse.Namespace) -> int:
    import sys

    from repro.cli.output import write
    from repro.pipeline.runs import list_runs

    listing = list_runs(args.store, args.stack, _filters(args), args.save_selection)
    if listing.selection_file is not None:
        print(f"selection written to {listing.selection_file}", file=sys.stderr)
    write(_listing(listing, args.format))
    return 0


def _listing(listing: Listing, fmt: str) -> str:
    """The `repro results` listing in a registered format (json and csv: the rows' raw values)."""
    from repro.formats import Column, Document, Table, Text, render

    if not listing.runs and fmt == "table":
        return render(Document((Text((f"no runs in {listing.root}",)),)), fmt)
    figure = "figure" if listing.figures else "images/sec"
    headers = ("id", "created", "stack", "workload", "model", "workers", "hosts", "status", figure)
    columns = tuple(Column(h, numeric=h in ("workers", "hosts", figure)) for h in headers)
    rows = tuple(_row(s, listing) for s in listing.runs)
    cells = tuple(_cells(s, listing) for s in listing.runs)
    return render(Document((Table(columns, cells, rows, name="runs"),), data=list(rows)), fmt)


def cmd_show(args: argparse.Namespace) -> int:
    from repro.cli.output import tree_text, write
    from repro.pipeline.record_view import show_run

    shown = show_run(args.store, args.id)
    write(tree_text(shown.data, args.format, terminal=shown.text))  # json: the record as stored
    return 0


def cmd_scaling(args: argparse.Namespace) -> int:
    import sys

    from repro.cli.output import write
    from repro.formats import render
    from repro.pipeline.table import runs_table

    given = getattr(args, "stack", None)  # `results --stack S table` or `results table --stack S`
    stacks = [given] if isinstance(given, str) else list(given or [])
    table = runs_table(args.store, [*args.selectors, *stacks], _filters(args), kind=args.kind,
                       throughput_first=args.results_command == "scaling", warmup=args.warmup,
                       baseline_workers=args.baseline_workers, link_gbps=args.link_gbps, plot=args.plot)
    write(render(table.document, args.format))
    if table.plot is not None:
        print(f"plot written to {table.plot}", file=sys.stderr)
    return 0


REMOVED = ("action", "id", "stack", "workload", "model", "workers", "status", "created", "file")


def _removed_rows(removal: Removal) -> tuple[dict, ...]:
    """`repro results rm|prune --format json`: one row per run or unreadable file removed (or that would be)."""
    what = "would remove" if removal.dry_run else "removed"
    runs = [{"action": what, "id": s.id, "stack": s.stack, "workload": s.workload, "model": s.model,
             "workers": s.workers, "status": s.status, "created": s.created, "file": s.path} for s in removal.runs]
    return (*runs, *({"action": what, "id": None, "stack": None, "workload": None, "model": None, "workers": None,
                      "status": f"unreadable ({b.reason})", "created": None, "file": b.path} for b in removal.files))


def _removal_lines(removal: Removal) -> tuple[str, ...]:
    """What a terminal shows of the runs and files removed."""
    what = "would remove" if removal.dry_run else "removed"
    return (*(f"{what} {s.id}  {s.stack}  {s.workload} {s.model or '-'} workers={s.workers}  {s.status}  "
              f"{s.created}" for s in removal.runs),
            *(f"{what} {removal.runs_dir / b.path}  ({b.reason})" for b in removal.files))


def _removal_total(removal: Removal) -> str:
    what = "would remove" if removal.dry_run else "removed"
    counts = [f"{n} {noun}{'s' if n != 1 else ''}" for n, noun in ((len(removal.runs), "run"),
                                                                     (len(removal.files), "unreadable file")) if n]
    return f"{what} {' and '.join(counts)} from {removal.root}" if counts else f"nothing to remove in {removal.root}"


def _render_removal(removal: Removal, fmt: str) -> int:
    """The runs removed: lines and the total on a terminal; a table of them (the total on stderr) otherwise."""
    import sys

    from repro.cli.output import write
    from repro.formats import Column, Document, Table, Text, is_machine, render

    if fmt == "table":
        write(render(Document((Text((*_removal_lines(removal), _removal_total(removal))),)), fmt))
        return 0
    rows = _removed_rows(removal)
    cells = tuple(tuple("-" if r[h] is None else str(r[h]) for h in REMOVED) for r in rows)
    table = Table(tuple(Column(h, numeric=h == "workers") for h in REMOVED), cells, rows, name="removed")
    write(render(Document((table,)), fmt))
    print(_removal_total(removal), file=sys.stderr if is_machine(fmt) else sys.stdout)
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    from repro.pipeline.runs import remove_runs

    return _render_removal(remove_runs(args.store, args.ids, dry_run=args.dry_run), args.format)


def cmd_prune(args: argparse.Namespace) -> int:
    from repro.pipeline.runs import prune_runs

    removal = prune_runs(args.store, failed=args.failed, older_than=args.older_than,
                         stack=getattr(args, "stack", None), filters=_filters(args), unreadable=args.unreadable,
                         dry_run=args.dry_run)
    return _render_removal(removal, args.format)
