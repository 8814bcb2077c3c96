"""`repro bench`: run a benchmark sweep on an inventory's hosts and store every run.

Choices and help come from the registries (runtimes, launchers, schedulers, workloads) and from each
workload's spec; every value is checked before anything starts (repro.launch.points.resolve).
List flags accumulate: `--workers 1 --workers 2` is `--workers 1,2`.
"""

from __future__ import annotations

import argparse

from repro.formats import FORMATS
from repro.inputs import count_argument, finite_number, path_argument, positive_seconds
from repro.pipeline import DEFAULT_REPEATS

DEFAULT_MAX_PAIRS = 30
_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """argparse `type=` for a wall time: seconds, or a number with s, m (min) or h."""
    raw = str(text).strip().lower()
    unit = next((u for u in sorted(_UNITS, key=len, reverse=True) if raw.endswith(u) and raw[:-len(u)].strip()), "")
    value = positive_seconds(raw[:-len(unit)].strip() if unit else raw)
    return value * _UNITS.get(unit, 1.0)


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


def _shown(value: object) -> str:
    return {True: "on", False: "off"}.get(value, str(value)) if isinstance(value, bool) else str(value)  # type: ignore


def _default(setting: str, field: str) -> str:
    """' (default: ...)' for a common setting: the stack's benchmark field for throughput workloads (the schema's
    default unless the stack sets one), each other workload's own default."""
    from repro.launch.workloads import WORKLOADS
    from repro.manifest.schema import Benchmark
    from repro.workloads.catalog import spec_of

    derived = {"fp16": "fp32", "data_format": "NCHW on GPU, NHWC on CPU"}  # what the field's default means
    base = derived.get(field, Benchmark.model_fields[field].default)
    others = []
    for name in WORKLOADS.names():
        spec = spec_of(name)  # the spec alone: not the launcher's module
        option = spec.by_setting(setting)
        if spec.kind != "throughput" and option is not None and option.bench:
            others.append(f"{name}: {_shown(option.default) if option.default is not None else 'its own'}")
    return f" (default: the stack's benchmark.{field}, {_shown(base)} unless it sets one" + (
        f"; {'; '.join(others)}" if others else "") + ")"


def _workload_options(p: argparse.ArgumentParser) -> None:
    """One argument group per workload with its own options (declared in its spec)."""
    from repro.launch.workloads import WORKLOADS
    from repro.workloads.catalog import spec_of

    seen: set[str] = set()
    for name in WORKLOADS.names():
        options = [o for o in spec_of(name).extra_options if o.name not in seen]
        if not options:
            continue
        g = p.add_argument_group(f"{name} (--workload {name})")
        for o in options:
            seen.add(o.name)
            default = "" if o.default is None else f" (default {_shown(o.default)})"
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
    from repro.launch.launchers import LAUNCHERS
    from repro.launch.runtimes import RUNTIMES
    from repro.launch.schedulers import SCHEDULERS
    from repro.launch.workloads import WORKLOADS

    p.add_argument("--stack", required=True, action="append", metavar="STACK", type=path_argument,
                   help="stack manifest; give two or more to interleave them (A B A B ... on the same hosts, "
                   "paired for `repro compare`)")
    p.add_argument("--hosts", default="inventories/localhost", metavar="INVENTORY", type=path_argument,
                   help="Ansible inventory (default: inventories/localhost)")
    p.add_argument("--runtime", choices=RUNTIMES.names(), default=None,
                   help=f"{RUNTIMES.describe()} (default: host for a local inventory, else docker)")
    p.add_argument("--launcher", choices=LAUNCHERS.names(), default=None,
                   help=f"{LAUNCHERS.describe()} (default: the one the Horovod controller needs)")
    p.add_argument("--scheduler", choices=SCHEDULERS.names(), default="direct", help=SCHEDULERS.describe())
    p.add_argument("--workload", choices=WORKLOADS.names(), default=None,
                   help=f"{WORKLOADS.describe()} (default: the stack's benchmark.workload)")
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
                   help=f"output format of the end-of-sweep table: {FORMATS.describe()} (default table)")
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
    from repro.launch.schedulers import SCHEDULERS, options_of

    for name in SCHEDULERS.names():
        options = options_of(name)
        if not options:
            continue
        g = p.add_argument_group(f"--scheduler {name} site settings (override the inventory's variables named in "
                                 f"each; see docs/{name}.md)")
        for o in options:
            g.add_argument(o.flag, dest=f"site_{o.variable}", action="append" if o.repeat else "store", default=None,
                           metavar=o.metavar or (None if o.choices else o.flag.lstrip("-").replace("-", "_").upper()),
                           choices=o.choices, help=o.help)


class QuietProgress:
    """-q: only what went wrong (failed points, warnings, clean-up left to do); results print at the end."""

    def status(self, text: str) -> None:
        pass

    def message(self, text: str) -> None:
        import sys

        if "warning" in text or "could not" in text or "removed" in text:
            print(text, file=sys.stderr, flush=True)

    def running(self, n: int, total: int, label: str, where: str) -> None:
        pass

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        import sys

        if summary.startswith(("FAILED", "interrupted")):
            print(f"{label}: {summary}", file=sys.stderr, flush=True)


def sweep_spec(args: argparse.Namespace):
    """The SweepSpec the flags ask for (values checked against the workload later, in points.resolve)."""
    from repro.launch.points import SweepSpec

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
    from repro.pipeline.bench import BenchOptions

    repeats = _ints("--repeats", [_once(args.repeats, "--repeats") or str(DEFAULT_REPEATS)])[0]
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise InputError(f"--timeout: expected a positive number of seconds, found {args.timeout:g}")
    if args.link_gbps is not None and (not math.isfinite(args.link_gbps) or args.link_gbps <= 0):
        raise InputError(f"--link-gbps: expected a positive number, found {args.link_gbps:g}")
    if args.plot:
        from repro.results.plots import check_target

        check_target(args.plot)  # a plot that cannot be written is refused before the sweep, not after it
    site = {k.removeprefix("site_"): tuple(v) if isinstance(v, list) else v for k, v in vars(args).items()
            if k.startswith("site_") and v not in (None, [])}  # the schedulers' site settings, by variable
    if args.emit and not args.dry_run:
        raise InputError("--emit: writes the planned files; give it with --dry-run")
    return BenchOptions(runtime=args.runtime, launcher=args.launcher, scheduler=args.scheduler, repeats=repeats,
                        timeout=args.timeout, resume=args.resume, dry_run=args.dry_run, warmup=args.warmup,
                        site=site, verbose=bool(getattr(args, "verbose", False)))


def cmd_bench(args: argparse.Namespace) -> int:
    import contextlib
    import sys

    from repro.cli.progress import LiveProgress
    from repro.hosts.inventory import load_inventory
    from repro.manifest import load_stack
    from repro.pipeline.bench import bench
    from repro.results.store import Store

    spec, opts = sweep_spec(args), options(args)  # every flag checked before anything is read or started
    stacks = list(dict.fromkeys(args.stack))
    live = LiveProgress() if sys.stderr.isatty() and not (args.dry_run or args.quiet) else None
    progress = live or (QuietProgress() if args.quiet else None)
    if args.until_verdict or args.max_pairs or args.max_time:
        loaded, inventory, store = [load_stack(s) for s in stacks], load_inventory(args.hosts), Store(args.store)
        return _until_verdict(args, loaded, inventory, spec, opts, store, live, progress)
    with live or contextlib.nullcontext():
        if live is not None:  # from the first second: say what is happening
            live.status(f"reading stack {', '.join(stacks)} and inventory {args.hosts}")
        loaded = [load_stack(s) for s in stacks]
        inventory = load_inventory(args.hosts)
        store = Store(args.store)
        result = bench(loaded if len(loaded) > 1 else loaded[0], inventory, spec, opts, store, progress)
    if args.dry_run:
        for i, plan in enumerate(result.plans):
            print("\n".join([*result.labels[i:i + 1], *plan.describe()]))
        if args.emit:
            _emit(result.plans, args.emit)
        return 0
    _report(result.records, store, args, result.sweep_records)
    if len(loaded) > 1 and result.records:
        print(f"\ninterleaved runs are paired: repro compare {stacks[0]} {stacks[1]}"
              + (f" --store {args.store}" if args.store else ""), file=_messages(args))
    if result.failed:
        print(f"{len(result.failed)} of {len(result.records)} runs failed; `repro bench ... --resume` re-runs them",
              file=_messages(args))
        return 1
    return 0


def _emit(plans, folder: str) -> None:
    """Write every plan's files (--emit DIR), naming each on stderr."""
    import sys
    from pathlib import Path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for index, plan in enumerate(plans, 1):
        for name, text in plan.files().items():
            name = f"{index:02d}-{name}" if len(plans) > 1 else name  # a dry run's points share a run id
            (out / name).write_text(text, encoding="utf-8")
            print(f"wrote {out / name}", file=sys.stderr)


def verdict_options(args: argparse.Namespace):
    """The sequential rule and budget of --until-verdict, checked."""
    from repro.cli.compare_cmds import verdict_levels
    from repro.errors import InputError
    from repro.pipeline.verdict import VerdictOptions
    from repro.results import sequential

    threshold, confidence = verdict_levels(args)
    pairs = args.max_pairs or DEFAULT_MAX_PAIRS
    if pairs < sequential.FIRST_LOOK:
        raise InputError(f"--max-pairs: at least {sequential.FIRST_LOOK} (the first look of the test), found {pairs}")
    if pairs > 500:
        raise InputError(f"--max-pairs: at most 500, found {pairs}")
    rule = sequential.Rule(max_pairs=pairs, confidence=confidence, threshold=threshold)
    return VerdictOptions(rule=rule, max_time=args.max_time, warmup=args.warmup)


def _until_verdict(args, loaded, inventory, spec, opts, store, live, progress) -> int:
    """--until-verdict: pairs until the sequential rule decides; the verdict, its evidence and the time it took."""
    import contextlib

    from repro.errors import InputError
    from repro.pipeline.verdict import dry_run_lines, until_verdict

    if not args.until_verdict:
        raise InputError("--max-pairs and --max-time are budgets of --until-verdict", hint="add --until-verdict")
    if len(loaded) != 2:
        raise InputError(f"--until-verdict compares two stacks; {len(loaded)} given",
                         hint="give --stack OLD --stack NEW")
    verdict = verdict_options(args)
    if args.dry_run:
        from repro.pipeline.bench import bench

        result = bench(loaded, inventory, spec, opts, store, progress)
        if len(result.plans) != 2:
            raise InputError(f"--until-verdict decides one point at a time; these flags make {len(result.plans) // 2}",
                             hint="give one value each of --workers, --model, --batch-size, ...")
        print("\n".join(dry_run_lines(loaded, verdict.rule)))
        for i, plan in enumerate(result.plans):
            print("\n".join([f"# {'AB'[i]}: {loaded[i].stack.name}", *plan.describe()]))
        return 0
    with live or contextlib.nullcontext():
        result = until_verdict(loaded, inventory, spec, opts, store, verdict, progress)
    out = _messages(args)
    for line in verdict_lines(result):
        print(line, file=out)
    print(f"\nall {len(result.records)} runs are stored (paired): repro compare {args.stack[0]} {args.stack[1]}"
          + (f" --store {args.store}" if args.store else ""), file=out)
    return 0 if result.failed_pairs == 0 else 1


def verdict_lines(result) -> list[str]:
    """The verdict of --until-verdict, how long it took, and every pair it rests on."""
    from repro.results import sequential

    d = result.decision
    a, b = result.stacks
    if d.verdict in (sequential.FASTER, sequential.SLOWER) and d.ratio:
        factor = d.ratio if d.ratio >= 1 else 1 / d.ratio
        said = f"{b} is {factor:.2f}x {d.verdict} than {a}"
    elif d.verdict == sequential.EQUIVALENT:
        said = f"{b} and {a} are equivalent within {d.threshold:.0%}"
    else:
        said = f"undecided ({result.stopped.replace('max', 'budget spent: max')})" if result.stopped != "decided" \
            else "undecided"
    interval = f"; B/A {d.ratio:.3f}, {d.confidence:.0%} sequential interval [{d.low:.3f}, {d.high:.3f}]" \
        if d.ratio is not None and d.low is not None and d.high is not None else ""
    lines = [f"\nverdict: {said}{interval}",
             f"time to verdict: {len(result.pairs)} pair(s) ({result.failed_pairs} incomplete), wall time "
             f"{result.wall_s / 60:.1f} min, benchmark time {result.bench_s / 60:.1f} min",
             *_steps_line(result.steps),
             "evidence (every pair, in the order run):"]
    for p in result.pairs:
        ratio = f"B/A {p.ratio:.3f}" if p.ratio is not None else "incomplete: " + "; ".join(
            f"{r.stack.name} {r.status}: {r.failure}" for r in (p.old, p.new) if r.status != "ok")
        first, second = (p.old, p.new) if p.first == "A" else (p.new, p.old)
        lines.append(f"  pair {p.index}: {first.stack.name} {first.id} then {second.stack.name} {second.id}: {ratio}")
    return lines


def _steps_line(advice) -> list[str]:
    """Kalibera and Jones' steps per run, from the runs just made (none without an estimate)."""
    if advice is None:
        return []
    cost = f"a run's start costs {advice.start_s:.1f} s, a step {advice.step_s:.3f} s"
    if advice.steps is None:
        return [f"steps per run: runs differ no more than their steps suggest ({cost}): longer runs and fewer "
                "pairs would do (Kalibera and Jones 2013)"]
    return [f"steps per run worth measuring (Kalibera and Jones 2013): about {advice.steps} ({cost})"]


def _messages(args: argparse.Namespace):
    """Where lines other than the table go: stdout, or stderr when the table is data (csv, json)."""
    import sys

    from repro.formats import is_machine

    return sys.stderr if is_machine(args.format) else sys.stdout


def _report(records, store, args, whole=()) -> None:
    """The end-of-sweep table of every stack's records (one table: stacks side by side) and the figure; after
    --resume, of every run of the sweep (`whole`), those stored earlier included."""
    import sys

    from repro.compare.kind import sweep_document
    from repro.formats import render

    out = _messages(args)
    if not records:
        print("nothing to run: every point of this sweep is already stored (--resume)"
              + ("; its table:" if whole else ""), file=out)
        if not whole:
            return
    else:
        print(f"\nstored {len(records)} run(s) in {store.root}", file=out)
    if whole:
        print(f"the table covers all {len(whole)} run(s) of the sweep, {len(whole) - len(records)} of them stored "
              "earlier", file=out)
        records = list(whole)
    ok = [r for r in records if r.status == "ok"] or records
    sys.stdout.write(render(sweep_document(records, warmup=args.warmup, baseline_workers=args.baseline_workers,
                                           link=args.link_gbps), args.format))
    if args.plot and any(r.status == "ok" for r in records):
        from repro.compare.kind import plot_records

        written = plot_records(ok, args.plot, warmup=args.warmup, baseline_workers=args.baseline_workers,
                               link=args.link_gbps)
        print(f"plot written to {written}", file=sys.stderr)
