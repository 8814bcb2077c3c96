"""`repro bench`: run a benchmark sweep on an inventory's hosts and store every run.

Choices and help come from the registries (runtimes, launchers, schedulers, workloads) and from each
workload's spec; every value is checked before anything starts (repro.launch.points.resolve).
List flags accumulate: `--workers 1 --workers 2` is `--workers 1,2`.
"""

from __future__ import annotations

import argparse

from repro.formats import FORMATS
from repro.inputs import count_argument, duration, finite_number, path_argument, positive_seconds
from repro.pipeline import DEFAULT_MAX_PAIRS, DEFAULT_REPEATS

__all__ = ["cmd_bench", "duration", "options", "register", "sweep_spec", "verdict_lines"]


def _split(values: list[str] | None) -> list[str]:
    return [x.strip() for raw in values or () for x in str(raw).split(",") if x.strip()]


def _ints(flag: str, values: list[str] | None, *, minimum: int = 1) -> tuple[int, ...]:
    from repro.errors import InputError
    from repro.inputs import InputValueError, integer

    out = []
    for v in _split(values):
        try:
            out.append(integer(v, minimum=minimum, maximum=1_000_000))  # ASCII digits only
        except InputValueError as exc:
            raise InputError(f"{flag}: {exc}") from None
    return tuple(out)


def _names(flag: str, values: list[str] | None) -> tuple[str, ...]:
    """Names from comma lists, each a plain word (the workload's own choices are checked later)."""
    from repro.errors import InputError
    from repro.inputs import WORD

    names = tuple(_split(values))
    for name in names:
        why = WORD.problem(name)
        if why:
            raise InputError(f"{flag}: {why}")
    return names


def _onoff(values: list[str] | None) -> tuple[bool, ...]:
    from repro.errors import InputError

    table = {"on": (True,), "off": (False,), "both": (False, True), "true": (True,), "false": (False,)}
    out: list[bool] = []
    for v in _split(values):
        if v.lower() not in table:
            raise InputError(f"--xla: expected on, off or both, found '{v}'")
        out += [x for x in table[v.lower()] if x not in out]
    return tuple(out)


def _once(values: list[str] | None, flag: str) -> str | None:
    from repro.errors import InputError

    if not values:
        return None
    if len(set(values)) > 1:
        raise InputError(f"{flag} given {len(values)} times with different values ({', '.join(values)}); "
                         "it takes one value")
    return values[-1]


def _workload_options(p: argparse.ArgumentParser) -> None:
    """One argument group per workload with its own options (declared in its spec)."""
    from repro.pipeline.choices import shown, workload_flags

    for name, options in workload_flags().items():
        g = p.add_argument_group(f"{name} (--workload {name})")
        for o in options:
            default = "" if o.default is None else f" (default {shown(o.default)})"
            g.add_argument(o.flag, dest=f"x_{o.name}", action="append", metavar="V", help=f"{o.help}{default}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="run a benchmark sweep on an inventory's hosts",
        description="Launch the stack's benchmark on the hosts of an inventory (1 -> N workers, weak or strong "
        "scaling, warm-up excluded), store every run with its provenance, and print the scaling table. "
        "Exit status: 0 all points ok, 1 some point failed, 2 bad input, 130 interrupted.")
    p.defer(_bench_arguments)  # choices and flags come from the registries: built only for `repro bench`
    p.set_defaults(handler=cmd_bench)


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    from repro.pipeline.choices import bench_axes
    from repro.pipeline.choices import setting_default as _default

    axes = bench_axes()
    p.add_argument("--stack", required=True, action="append", metavar="STACK", type=path_argument,
                   help="stack manifest; give two or more to interleave them (A B A B ... on the same hosts, "
                   "paired for `repro compare`)")
    p.add_argument("--hosts", default="inventories/localhost", metavar="INVENTORY", type=path_argument,
                   help="Ansible inventory (default: inventories/localhost)")
    p.add_argument("--runtime", choices=axes["runtime"][0], default=None,
                   help=f"{axes['runtime'][1]} (default: host for a local inventory, else docker)")
    p.add_argument("--launcher", choices=axes["launcher"][0], default=None,
                   help=f"{axes['launcher'][1]} (default: the one the Horovod controller needs)")
    p.add_argument("--scheduler", choices=axes["scheduler"][0], default="direct", help=axes["scheduler"][1])
    p.add_argument("--workload", choices=axes["workload"][0], default=None,
                   help=f"{axes['workload'][1]} (default: the stack's benchmark.workload)")
    g = p.add_argument_group("sweep (list flags take comma lists and accumulate when repeated)")
    g.add_argument("--workers", action="append", metavar="N,...", help="worker counts, e.g. 1,2,4,8 (default 1)")
    g.add_argument("--model", action="append", metavar="M,...", help="models" + _default("model", "model"))
    g.add_argument("--batch-size", action="append", metavar="B,...",
                   help="per-worker batch (weak) or global batch (strong)" + _default("batch_per_worker",
                                                                                      "batch_size"))
    g.add_argument("--scaling", choices=("weak", "strong"), default="weak", help="(default weak)")
    g.add_argument("--precision", action="append", metavar="P,...",
                   help="fp32, fp16 or fp32,fp16" + _default("precision", "fp16"))
    g.add_argument("--xla", action="append", metavar="on|off|both", help="XLA" + _default("xla", "xla"))
    g.add_argument("--data-format", action="append", metavar="F", help="NHWC or NCHW" + _default("data_format",
                                                                                                "data_format"))
    g.add_argument("--data", action="append", metavar="D",
                   help="synthetic, real (the inventory's repro_dataset_dir) or a directory on the hosts")
    g.add_argument("--threads", action="append", metavar="T,...", help="intra-op threads per worker to sweep (CPU)")
    g.add_argument("--warmup-steps", action="append", metavar="N",
                   help="steps before the measured ones" + _default("warmup_steps", "warmup_steps"))
    g.add_argument("--steps", action="append", metavar="N", help="measured steps" + _default("steps", "steps"))
    g.add_argument("--repeats", action="append", metavar="N",
                   help=f"runs of every point (default {DEFAULT_REPEATS}: a verdict needs at least 2 runs per side; "
                   "see docs/statistics.md)")
    g.add_argument("--backends", action="append", metavar="C,...", help="Horovod controllers: mpi, gloo or mpi,gloo")
    _workload_options(p)
    _running_options(p)


def _running_options(p: argparse.ArgumentParser) -> None:
    """How the sweep runs and what it prints: time limit, resume, dry run, store, format, plot, figures."""
    r = p.add_argument_group("running")
    r.add_argument("--timeout", type=positive_seconds, default=1800.0,
                   help="time limit per point, seconds (default 1800)")
    r.add_argument("--resume", action="store_true", help="run only what is missing or failed in this sweep")
    r.add_argument("--dry-run", action="store_true", help="print every command on every host (with which stack "
                   "and point each is, and the order they run in); run nothing")
    r.add_argument("--emit", default=None, metavar="DIR",
                   help="with --dry-run: also write each point's files there (--scheduler kubernetes: its manifests, "
                   "for kubectl apply -f)")
    r.add_argument("--store", default=None, type=path_argument,
                   help="results directory (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    r.add_argument("--format", choices=FORMATS.names(), default="table",
                   help=f"output format of the end-of-sweep table, or of the verdict with --until-verdict: "
                   f"{FORMATS.describe()} (default table)")
    r.add_argument("--plot", default=None, metavar="FILE", type=path_argument,
                   help="also write a figure (.png or .svg; checked before the sweep starts): cnn images/sec per "
                   "worker count with speedup against the ideal line, all-reduce latency and bus bandwidth per size "
                   "for both paths, tta accuracy against time")
    r.add_argument("--warmup", choices=("fixed", "auto"), default="fixed",
                   help="steps the figures use: after the fixed warm-up count, or from the steady state each rank's "
                   "step times reached (auto; detected and stored either way, see docs/statistics.md)")
    r.add_argument("--baseline-workers", type=count_argument, default=None, metavar="N",
                   help="the point speedup and efficiency are relative to (default: the 1-worker point; without "
                   "one they are not shown)")
    r.add_argument("--link-gbps", type=finite_number, default=None, metavar="GBIT/S",
                   help="all-reduce: link speed to compare bus bandwidth with (default: from the hosts' facts)")
    v = p.add_argument_group("until a verdict (two stacks, one point; docs/statistics.md)")
    v.add_argument("--until-verdict", action="store_true",
                   help="run A/B pairs (alternating A B, B A, ...) and stop as soon as a sequential test with a "
                   "controlled error rate says faster, slower or equivalent within the threshold, or the budget is "
                   "spent (undecided)")
    v.add_argument("--max-pairs", type=count_argument, default=None, metavar="N",
                   help=f"at most N pairs (default {DEFAULT_MAX_PAIRS}); the test's error rate is planned for N")
    v.add_argument("--max-time", type=duration, default=None, metavar="T",
                   help="no new pair after T of wall time (seconds, or with a unit: 90s, 20m, 1.5h)")
    v.add_argument("--threshold", type=finite_number, default=None, metavar="X",
                   help="changes below this are 'equivalent' (default 0.02 = 2%%)")
    v.add_argument("--confidence", type=finite_number, default=None, metavar="C",
                   help="confidence of the sequential test (default 0.95)")
    _scheduler_options(p)


def _scheduler_options(p: argparse.ArgumentParser) -> None:
    """One argument group per scheduler with its site settings (declared by the scheduler: SiteOption)."""
    from repro.pipeline.choices import scheduler_flags

    for name, options in scheduler_flags().items():
        g = p.add_argument_group(f"--scheduler {name} site settings (override the inventory's variables named in "
                                 f"each; see docs/{name}.md)")
        for o in options:
            g.add_argument(o.flag, dest=f"site_{o.variable}", action="append" if o.repeat else "store", default=None,
                           metavar=o.metavar or (None if o.choices else o.flag.lstrip("-").replace("-", "_").upper()),
                           choices=o.choices, help=o.help)


def sweep_spec(args: argparse.Namespace):
    """The SweepSpec the flags ask for (values checked against the workload later, in points.resolve)."""
    from repro.pipeline.bench_request import SweepSpec

    def one_int(flag: str, values: list[str] | None, minimum: int) -> int | None:
        v = _once(values, flag)
        if v is None:
            return None
        found = _ints(flag, [v], minimum=minimum)
        if len(found) != 1:
            from repro.errors import InputError

            raise InputError(f"{flag}: expected one whole number, found {v!r}")
        return found[0]

    extra = {k[2:]: _once(v, "--" + k[2:].replace("_", "-")) for k, v in vars(args).items()
             if k.startswith("x_") and v}
    return SweepSpec(
        workload=args.workload, workers=_ints("--workers", args.workers) or (1,), models=_names("--model", args.model),
        batch_sizes=_ints("--batch-size", args.batch_size), precisions=tuple(_split(args.precision)),
        xla=_onoff(args.xla), data_format=_once(args.data_format, "--data-format"), data=_once(args.data, "--data"),
        scaling=args.scaling, threads=_ints("--threads", args.threads, minimum=0) or (None,),
        warmup_steps=one_int("--warmup-steps", args.warmup_steps, 0), steps=one_int("--steps", args.steps, 1),
        backends=tuple(_split(args.backends)) or ("mpi",), backends_given=bool(args.backends), extra=extra)


def options(args: argparse.Namespace):
    """BenchOptions from the flags, checked."""
    import math

    from repro.errors import InputError
    from repro.pipeline.bench_request import BenchOptions

    repeats = _ints("--repeats", [_once(args.repeats, "--repeats") or str(DEFAULT_REPEATS)])[0]
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise InputError(f"--timeout: expected a positive number of seconds, found {args.timeout:g}")
    if args.link_gbps is not None and (not math.isfinite(args.link_gbps) or args.link_gbps <= 0):
        raise InputError(f"--link-gbps: expected a positive number, found {args.link_gbps:g}")
    site = {k.removeprefix("site_"): tuple(v) if isinstance(v, list) else v for k, v in vars(args).items()
            if k.startswith("site_") and v not in (None, [])}  # the schedulers' site settings, by variable
    if args.emit and not args.dry_run:
        raise InputError("--emit: writes the planned files; give it with --dry-run")
    return BenchOptions(runtime=args.runtime, launcher=args.launcher, scheduler=args.scheduler, repeats=repeats,
                        timeout=args.timeout, resume=args.resume, dry_run=args.dry_run, warmup=args.warmup,
                        site=site, verbose=bool(getattr(args, "verbose", False)))


def request(args: argparse.Namespace):
    """The BenchRequest the flags ask for: every flag checked before anything is read or started."""
    from repro.pipeline.bench_request import BenchRequest

    return BenchRequest(stacks=tuple(dict.fromkeys(args.stack)), hosts=args.hosts, spec=sweep_spec(args),
                        options=options(args), store=args.store, emit=args.emit, plot=args.plot,
                        baseline_workers=args.baseline_workers, link_gbps=args.link_gbps,
                        until_verdict=args.until_verdict, max_pairs=args.max_pairs, max_time=args.max_time,
                        threshold=args.threshold, confidence=args.confidence)


def cmd_bench(args: argparse.Namespace) -> int:
    """Run (or plan) the sweep, or A/B pairs until a verdict, with live progress on a terminal; print the result."""
    import contextlib
    import sys

    from repro.cli.progress import LiveProgress, QuietProgress
    from repro.pipeline.bench_request import run_bench

    wanted = request(args)
    live = LiveProgress() if sys.stderr.isatty() and not (args.dry_run or args.quiet) else None
    with live or contextlib.nullcontext():
        if live is not None:  # from the first second: say what is happening
            live.status(f"reading stack {', '.join(wanted.stacks)} and inventory {args.hosts}")
        report = run_bench(wanted, live or (QuietProgress() if args.quiet else None))
    if args.dry_run:
        return _planned(report)
    if report.verdict is not None:
        return _verdict(report, args)
    return _swept(report, args)


def _planned(report) -> int:
    """--dry-run: every plan's lines on stdout, each file --emit wrote on stderr."""
    import sys

    sys.stdout.write("".join(line + "\n" for line in report.planned))
    for path in report.emitted:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _verdict(report, args: argparse.Namespace) -> int:
    """--until-verdict: the verdict, its evidence and the time it took; where the paired runs are."""
    import sys

    from repro.formats import is_machine, render

    sys.stdout.write(render(_verdict_document(report.verdict, machine=is_machine(args.format)), args.format))
    print(f"\nall {len(report.verdict.records)} runs are stored (paired): repro compare {args.stack[0]} "
          f"{args.stack[1]}" + (f" --store {args.store}" if args.store else ""), file=_messages(args))
    return 0 if report.verdict.failed_pairs == 0 else 1


def _verdict_document(verdict, *, machine: bool):
    """The verdict's lines for people; for programs one row per pair (csv) and the whole verdict (json)."""
    from repro.formats import Column, Document, Table, Text

    if not machine:
        return Document((Text(tuple(verdict.describe())),), data=verdict.to_dict())
    rows = tuple({"pair": p.index, "first": p.first, "a_id": p.old.id, "a_status": p.old.status, "b_id": p.new.id,
                  "b_status": p.new.status, "ratio": p.ratio} for p in verdict.pairs)
    columns = tuple(Column(k, numeric=k in ("pair", "ratio")) for k in (rows[0] if rows else ("pair",)))
    cells = tuple(tuple("-" if v is None else str(v) for v in row.values()) for row in rows)
    return Document((Table(columns, cells, rows, name="pairs"),), data=verdict.to_dict())


def _swept(report, args: argparse.Namespace) -> int:
    """The end-of-sweep messages and table, the figure written, what failed."""
    import sys

    from repro.formats import render

    out, result = _messages(args), report.result
    for line in _stored_lines(len(result.records), len(result.sweep_records), report.store_root):
        print(line, file=out)
    if report.document is not None:
        sys.stdout.write(render(report.document, args.format))
    if report.plot_error is not None:
        raise report.plot_error
    if report.plot is not None:
        print(f"plot written to {report.plot}", file=sys.stderr)
    if len(report.stacks) > 1 and result.records:
        print(f"\ninterleaved runs are paired: repro compare {args.stack[0]} {args.stack[1]}"
              + (f" --store {args.store}" if args.store else ""), file=out)
    if result.failed:
        print(f"{len(result.failed)} of {len(result.records)} runs failed; `repro bench ... --resume` re-runs them",
              file=out)
        return 1
    return 0


def _stored_lines(made: int, whole: int, root) -> list[str]:
    """What the sweep stored; after --resume, what the table covers."""
    covers = [f"the table covers all {whole} run(s) of the sweep, {whole - made} of them stored earlier"] if whole \
        else []
    if not made:
        tail = "; its table:" if whole else ""
        return [f"nothing to run: every point of this sweep is already stored (--resume){tail}", *covers]
    return [f"\nstored {made} run(s) in {root}", *covers]


def _messages(args: argparse.Namespace):
    """Where lines other than the table go: stdout, or stderr when the table is data (csv, json)."""
    import sys

    from repro.formats import is_machine

    return sys.stderr if is_machine(args.format) else sys.stdout


def verdict_lines(result) -> list[str]:
    """The verdict of --until-verdict, how long it took, and every pair it rests on (repro.pipeline.verdict's)."""
    return result.describe()
