"""`repro compare OLD NEW`: did the new stack make training faster, and by how much?"""

from __future__ import annotations

import argparse

from repro.formats import FORMATS
from repro.inputs import count_argument, finite_number, fraction_argument, path_argument

EXIT_REGRESSION = 4

SELECTORS_HELP = ("a stack name, a stack hash or unique prefix, a stack manifest file, a results directory "
                  "(store root or directory of record JSON files) or a *.selection.json file")


def add_filter_options(p: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    """--model --batch --precision --workers --hosts: repeatable, comma lists allowed.

    On a subcommand the defaults are suppressed, so values given before the subcommand's name stay.
    """
    g = p.add_argument_group("filters (repeatable; comma-separated lists allowed)")
    default = argparse.SUPPRESS if subcommand else []
    g.add_argument("--model", action="append", default=default, metavar="M", help="keep these models")
    g.add_argument("--batch", action="append", default=default, metavar="B", help="keep these per-worker batch sizes")
    g.add_argument("--precision", action="append", default=default, metavar="P", help="keep fp32 and/or fp16")
    g.add_argument("--workers", action="append", default=default, metavar="N", help="keep these worker counts")
    g.add_argument("--hosts", action="append", default=default, metavar="H", help="keep these host counts")


def filters_from(args: argparse.Namespace):
    """The filters the flags ask for (kept for the results commands; compare passes the values on)."""
    from repro.pipeline.compare import parse_filters

    return parse_filters(models=args.model, batches=args.batch, precisions=args.precision, workers=args.workers,
                         hosts=args.hosts)


def reading_store(path: str | None):
    """The store a command reads from; a --store that is not a directory is an error (exit 2), not an empty store."""
    from repro.pipeline.compare import reading_store as store

    return store(path)


def add_window_options(p: argparse.ArgumentParser) -> None:
    """--warmup fixed|auto and --baseline-workers N: which steps a figure uses, which point efficiency is against."""
    p.add_argument("--warmup", choices=("fixed", "auto"), default=None,
                   help="steps the figures use: after the workload's fixed warm-up count, or from the steady state "
                   "detected in each rank's step times (docs/statistics.md); default: the window the runs' figures "
                   "were stored with (fixed unless they were measured with --warmup auto)")
    p.add_argument("--baseline-workers", type=count_argument, default=None, metavar="N",
                   help="the point speedup and efficiency are relative to (default: the 1-worker point; a series "
                   "without one shows none)")


def add_format_option(p: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    """--format NAME, one of the registered output formats (repro.formats.FORMATS)."""
    p.add_argument("--format", choices=FORMATS.names(), default=argparse.SUPPRESS if subcommand else "table",
                   help=f"output format: {FORMATS.describe()} (default table)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="compare two stacks' results: ratios, significance, scaling, what changed",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare the runs of OLD with those of NEW point by point (aligned on model, batch, "
        "precision, XLA, data format, workers, hosts, ...): images/sec, the ratio NEW/OLD with its interval over "
        "runs (Welch's t on log figures; a paired t for interleaved runs) and a verdict (faster / slower / no "
        "significant difference / not enough runs), the change in "
        "scaling efficiency, and what changed between the stacks (manifest, lock, settings).\n\n"
        f"OLD and NEW are each {SELECTORS_HELP}.",
        epilog="exit status: 0 compared; 1 the runs are on different hardware or the store is unreadable; 2 bad "
        "input (an option value, a selection or manifest file, a selection that matches no runs, OLD = NEW, a "
        "--store that is not a directory); "
        f"{EXIT_REGRESSION} with --fail-on-regression, when any point is significantly slower beyond the threshold.")
    p.add_argument("old", metavar="OLD", type=path_argument, help="the baseline (with --reference: the candidate)")
    p.add_argument("new", metavar="NEW", type=path_argument, nargs="?", default=None,
                   help="the candidate (not given with --reference)")
    p.add_argument("--reference", metavar="REF", type=path_argument, default=None,
                   help="judge the one selection given against REF (an imported published table or log, or a stack "
                   "in the store; a selector as OLD is): within --within of it, below, or undecided, one-sided, for "
                   "every figure (images/sec, bus bandwidth, time to accuracy)")
    p.add_argument("--within", type=fraction_argument, default=None, metavar="X",
                   help="with --reference: the margin, 0.05 or 5%% (default 5%%)")
    add_filter_options(p)
    p.add_argument("--store", metavar="DIR", type=path_argument,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    add_format_option(p)
    p.add_argument("--plot", metavar="FILE", type=path_argument,
                   help="also write a figure (.png or .svg; checked before any work): images/sec per worker count, "
                   "the stacks side by side with error bars and NEW/OLD under each pair, speedup against the ideal "
                   "line; all-reduce latency and bus bandwidth per size")
    p.add_argument("--threshold", type=finite_number, default=None, metavar="X",
                   help="relative change below which a difference is not significant (default 0.02 = 2%%)")
    p.add_argument("--confidence", type=finite_number, default=None, metavar="C",
                   help="confidence level of the intervals (default 0.95)")
    add_window_options(p)
    p.add_argument("--allow-different-hardware", action="store_true",
                   help="compare runs on different GPUs, interconnects or host counts (the difference is shown)")
    p.add_argument("--fail-on-regression", action="store_true",
                   help=f"exit with status {EXIT_REGRESSION} when any point is significantly slower beyond the "
                   "threshold (for CI)")
    p.set_defaults(handler=cmd_compare)


def request(args: argparse.Namespace):
    """The CompareRequest the flags ask for (every value is checked by the pipeline, before any work)."""
    from repro.pipeline.compare import CompareRequest

    return CompareRequest(
        old=args.old, new=args.new, reference=args.reference, within=args.within, store=args.store,
        models=args.model, batches=args.batch, precisions=args.precision, workers=args.workers, hosts=args.hosts,
        threshold=args.threshold, confidence=args.confidence, allow_different_hardware=args.allow_different_hardware,
        warmup=args.warmup, baseline_workers=args.baseline_workers, plot=args.plot,
        quiet=bool(getattr(args, "quiet", False)), fail_on_regression=args.fail_on_regression)


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare, print the report in the format asked for, say where the figure went and what regressed."""
    import sys

    from repro.formats import render
    from repro.pipeline.compare import compare_report

    report = compare_report(request(args))
    sys.stdout.write(render(report.document, args.format))  # -q: the tables and the verdicts only
    if report.plot_error is not None:
        raise report.plot_error
    if report.plot is not None and not getattr(args, "quiet", False):
        print(f"plot written to {report.plot}", file=sys.stderr)
    if report.regression:
        print(f"{report.regression}: exit status {EXIT_REGRESSION}", file=sys.stderr)
        return EXIT_REGRESSION
    return 0
