"""`repro bench`: run a benchmark sweep on an inventory's hosts and store every run."""

from __future__ import annotations

import argparse

from repro import inputs
from repro.inputs import (
    argument,
    counts_argument,
    finite_number,
    path_argument,
    positive_seconds,
    words_argument,
)

_ints = counts_argument  # comma-separated whole numbers >= 1, ASCII digits only
_words = words_argument(inputs.WORD)


def _onoff(text: str) -> tuple[bool, ...]:
    table = {"on": (True,), "off": (False,), "both": (False, True), "true": (True,), "false": (False,)}
    if text.lower() not in table:
        raise argparse.ArgumentTypeError("expected on, off or both")
    return table[text.lower()]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="run a benchmark sweep on an inventory's hosts",
        description="Launch the stack's benchmark on the hosts of an inventory (1 -> N workers, weak or strong "
        "scaling, warm-up excluded), store every run with its provenance, and print the scaling table. "
        "Exit status: 0 all points ok, 1 some point failed, 2 bad input, 130 interrupted.")
    p.add_argument("--stack", required=True, metavar="STACK", type=path_argument, help="stack manifest")
    p.add_argument("--hosts", default="inventories/localhost", metavar="INVENTORY", type=path_argument,
                   help="Ansible inventory (default: inventories/localhost)")
    p.add_argument("--runtime", choices=("docker", "host"), default=None,
                   help="docker: worker containers from the stack's image; host: the hosts' own software "
                   "(default: host for a local inventory, else docker)")
    p.add_argument("--workload", choices=("cnn", "tf_cnn_benchmarks", "allreduce", "tta"), default=None,
                   help="default: the stack's benchmark.workload")
    g = p.add_argument_group("sweep")
    g.add_argument("--workers", type=_ints, default=(1,), help="worker counts, e.g. 1,2,4,8 (default 1)")
    g.add_argument("--model", type=_words, default=(), help="models, comma-separated (default: the stack's)")
    g.add_argument("--batch-size", type=_ints, default=(), help="per-worker batch (weak) or global batch (strong)")
    g.add_argument("--scaling", choices=("weak", "strong"), default="weak")
    g.add_argument("--precision", type=_words, default=(), help="fp32, fp16 or fp32,fp16")
    g.add_argument("--xla", type=_onoff, default=(), help="on, off or both (default: the stack's)")
    g.add_argument("--data-format", choices=("NCHW", "NHWC"), default=None)
    g.add_argument("--data", default="synthetic", type=path_argument,
                   help="synthetic, real (the inventory's repro_dataset_dir) or a directory on the hosts")
    g.add_argument("--threads", type=_ints, default=(None,), help="intra-op threads per worker to sweep (CPU)")
    g.add_argument("--warmup-steps", type=int, default=None)
    g.add_argument("--steps", type=int, default=None)
    g.add_argument("--repeats", type=int, default=1)
    g.add_argument("--backends", type=_words, default=("mpi",), help="Horovod controllers: mpi, gloo or mpi,gloo")
    a = p.add_argument_group("all-reduce (--workload allreduce)")
    a.add_argument("--min-exp", type=finite_number, default=None)
    a.add_argument("--max-exp", type=finite_number, default=None)
    a.add_argument("--num", type=int, default=None)
    a.add_argument("--sizes", default=None, type=argument(inputs.WORDS),
                   help="explicit element counts, comma-separated")
    a.add_argument("--iterations", type=int, default=None)
    a.add_argument("--warmup", type=int, default=None)
    a.add_argument("--dtypes", default=None, type=argument(inputs.WORDS), help="fp32,fp16")
    a.add_argument("--link-gbps", type=finite_number, default=None,
                   help="link speed to compare bus bandwidth with (default: from the hosts' facts)")
    t = p.add_argument_group("time to accuracy (--workload tta)")
    t.add_argument("--dataset", default=None, type=path_argument, help="digits, cifar10:DIR or imagenet:DIR")
    t.add_argument("--target-accuracy", type=finite_number, default=None)
    t.add_argument("--max-epochs", type=int, default=None)
    t.add_argument("--max-seconds", type=positive_seconds, default=None)
    r = p.add_argument_group("running")
    r.add_argument("--timeout", type=positive_seconds, default=1800.0,
                   help="time limit per point, seconds (default 1800)")
    r.add_argument("--resume", action="store_true", help="run only what is missing or failed in this sweep")
    r.add_argument("--dry-run", action="store_true", help="print every command on every host; run nothing")
    r.add_argument("--store", default=None, type=path_argument,
                   help="results directory (default: $REPRO_STORE or ./results)")
    r.add_argument("--plot", default=None, metavar="FILE", type=path_argument,
                   help="all-reduce: latency/bandwidth plot (png or svg)")
    p.set_defaults(handler=cmd_bench)


class LiveProgress:
    """A live bar on a terminal: the sweep's position, the running point, time elapsed; results above it."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.task = None

    def __enter__(self) -> LiveProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.stop()

    def message(self, text: str) -> None:
        self.bar.console.print(text, markup=False, highlight=False)

    def running(self, n: int, total: int, label: str, where: str) -> None:
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, description=f"{label} on {where}", completed=n - 1)

    def finished(self, n: int, total: int, label: str, summary: str) -> None:
        self.message(f"{label}: {summary}")
        if self.task is None:
            self.task = self.bar.add_task("", total=total)
        self.bar.update(self.task, completed=n)


def _extra(args: argparse.Namespace) -> dict:
    keys = {"allreduce": ("min_exp", "max_exp", "num", "sizes", "iterations", "warmup", "dtypes"),
            "tta": ("dataset", "target_accuracy", "max_epochs", "max_seconds")}
    out = {}
    for group in keys.values():
        for k in group:
            if getattr(args, k) is not None:
                out[k] = getattr(args, k)
    return out


def cmd_bench(args: argparse.Namespace) -> int:
    from repro.errors import InputError
    from repro.hosts.inventory import load_inventory
    from repro.launch.bench import BenchOptions, bench
    from repro.launch.points import SweepSpec
    from repro.manifest import load_stack
    from repro.results.store import Store

    if args.repeats < 1:
        raise InputError("--repeats must be >= 1")
    loaded = load_stack(args.stack)
    inventory = load_inventory(args.hosts)
    spec = SweepSpec(
        workload=args.workload, workers=args.workers, models=args.model, batch_sizes=args.batch_size,
        precisions=args.precision, xla=args.xla, data_format=args.data_format, data=args.data,
        scaling=args.scaling, threads=args.threads, warmup_steps=args.warmup_steps, steps=args.steps,
        backends=args.backends, extra=_extra(args),
    )
    options = BenchOptions(runtime=args.runtime, repeats=args.repeats, timeout=args.timeout, resume=args.resume,
                           dry_run=args.dry_run)
    import contextlib
    import sys

    store = Store(args.store)
    live = LiveProgress() if sys.stderr.isatty() and not args.dry_run else None
    with live or contextlib.nullcontext():
        result = bench(loaded, inventory, spec, options, store, live)
    if args.dry_run:
        for plan in result.plans:
            print("\n".join(plan.describe()))
        return 0
    _report(result.records, store, args)
    if result.failed:
        print(f"{len(result.failed)} of {len(result.records)} runs failed; `repro bench ... --resume` re-runs them")
        return 1
    return 0


def _report(records, store, args) -> None:
    from repro.results import summary as report

    if not records:
        print("nothing to run: every point of this sweep is already stored (--resume)")
        return
    print(f"\nstored {len(records)} run(s) in {store.root}")
    workload = records[0].settings.workload
    if workload in ("cnn", "tf_cnn_benchmarks"):
        print(report.scaling_report(records))
    elif workload == "allreduce":
        print(report.allreduce_report(records, link_gbps=args.link_gbps))
        if args.plot:
            from repro.results.allreduce_plot import plot_allreduce

            plot_allreduce(records, args.plot, link_gbps=args.link_gbps)
            print(f"plot: {args.plot}")
    elif workload == "tta":
        print(report.tta_report(records))
