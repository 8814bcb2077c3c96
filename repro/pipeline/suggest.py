"""The interleaved `repro bench` that `repro compare` suggests when OLD and NEW did not run interleaved, built from a
checked plan: never a command that would be refused, or that would measure other points than the ones compared.

    records of both sides -> BenchCommand (stacks, inventory, runtime, SweepSpec) -> bench(dry_run=True), the code
    path of `repro bench --dry-run` -> every stack's planned points cover its side's measured points -> argv

A setting both sides ran with the same values is given as a flag; one they differ in (what is being compared,
e.g. XLA off against on) is left to each stack's own benchmark defaults, and the plan shows whether those give
the points that were measured.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from repro.compare.kind import KINDS
from repro.errors import ReproError
from repro.launch.points import SweepSpec
from repro.results import DEFAULT_REPEATS
from repro.results.record import RunRecord, Settings
from repro.results.store import Store
from repro.workloads.catalog import family_of, kind_of, spec_of

DEFAULT_HOSTS = "inventories/localhost"  # repro bench's --hosts default
# the common settings a suggestion repeats as flags: (Settings field, flag)
FLAGS = (("model", "--model"), ("batch_per_worker", "--batch-size"), ("workers", "--workers"),
         ("precision", "--precision"), ("xla", "--xla"), ("data_format", "--data-format"), ("data", "--data"),
         ("threads", "--threads"), ("warmup_steps", "--warmup-steps"), ("steps", "--steps"))
# what a planned point and a measured one must agree on besides the workload's family (warm-up and steps aside, as
# compare's alignment does)
COVERED = ("model", "batch_per_worker", "global_batch", "precision", "compile", "data_format", "data",
           "workers", "scaling", "threads")


@dataclass(frozen=True)
class BenchCommand:
    """An interleaved `repro bench` of two stacks: what the suggestion runs, as values."""

    stacks: tuple[str, str]
    spec: SweepSpec
    hosts: str | None = None  # None: bench's default inventory
    runtime: str | None = None
    until_verdict: bool = True  # one point: pairs until the sequential rule decides; else --repeats
    repeats: int = DEFAULT_REPEATS
    store: str | None = None
    values: dict[str, str] = field(default_factory=dict)  # flag -> text, in FLAGS' order (what spec holds)

    def argv(self) -> list[str]:
        """The command line, as `repro bench` parses it into the same SweepSpec."""
        argv = ["repro", "bench", "--stack", self.stacks[0], "--stack", self.stacks[1]]
        argv += ["--hosts", self.hosts] if self.hosts else []
        argv += ["--runtime", self.runtime] if self.runtime else []
        argv += ["--workload", str(self.spec.workload)]
        for flag, text in self.values.items():
            argv += [flag, text]
        if self.spec.scaling == "strong":
            argv += ["--scaling", "strong"]
        if self.spec.backends_given:
            argv += ["--backends", ",".join(self.spec.backends)]
        for name, value in self.spec.extra.items():
            argv += ["--" + name.replace("_", "-"), str(value)]
        argv += ["--until-verdict"] if self.until_verdict else ["--repeats", str(self.repeats)]
        return [*argv, *(["--store", self.store] if self.store else [])]


def suggest(old: Sequence[RunRecord], new: Sequence[RunRecord], *, store: Store,
            store_flag: str | None = None) -> tuple[str | None, str]:
    """(the checked command, '') or (None, why the command these runs call for is not suggested); (None, '') where
    the runs call for none (imported figures, no manifest file, one manifest on both sides)."""
    made = command_for(old, new, store_flag=store_flag)
    if isinstance(made, str):
        return None, ""
    problem = check(made, old, new, store)
    return (None, problem) if problem else (shlex.join(made.argv()), "")


def suggester(store: Store, store_flag: str | None) -> Callable[[Sequence[RunRecord], Sequence[RunRecord]],
                                                                tuple[str | None, str]]:
    """`suggest` for compare(): the sides' records in, (command, why not) out."""
    return lambda old, new: suggest(old, new, store=store, store_flag=store_flag)


def command_for(old: Sequence[RunRecord], new: Sequence[RunRecord], *,
                store_flag: str | None = None) -> BenchCommand | str:
    """The interleaved command of the sides' measured points, or why there is none (a sentence)."""
    sides = [[r for r in side if r.origin == "bench"] for side in (old, new)]
    if not all(sides):
        return "a side has no runs measured by repro bench (imported or published figures cannot be re-run)"
    files = [next((r.stack.file for r in side if r.stack.file), None) for side in sides]
    if None in files:
        return "a side's runs name no manifest file to run again"
    if files[0] == files[1]:
        return "both sides ran the same manifest file"
    families = {family_of(r.settings.workload) for side in sides for r in side}
    if len(families) > 1:
        return f"the sides ran different workloads ({', '.join(sorted(families))})"
    measured = [r for side in sides for r in side]
    inventories = {r.sweep.inventory for r in measured if r.sweep is not None and r.sweep.inventory}
    if len(inventories) > 1 or (not inventories and not all(h.name == "localhost" for r in measured for h in r.hosts)):
        return "the runs do not name one inventory to run on"
    runtimes = {r.runtime for r in measured}
    points = [[r.settings for r in side] for side in sides]
    values = {flag: text for name, flag in FLAGS if (text := _shared(points, lambda p, n=name: _value(p, n)))
              and not (flag == "--data" and text == "synthetic")}  # bench's default data
    controllers = list(dict.fromkeys(p.backend for side in points for p in side if p.backend is not None))
    first = points[0][0]
    spec = SweepSpec(workload=first.workload, scaling="strong" if first.scaling == "strong" else "weak",
                     backends=tuple(controllers) or ("mpi",), backends_given=controllers not in ([], ["mpi"]),
                     extra=_extra(points), **_parsed(values))
    one = all(len({p.key(without=("hosts",)) for p in side}) == 1 for side in points)
    sequential = KINDS.get(kind_of(first.workload)).sequential  # --until-verdict takes what it can decide on
    repeats = max((r.sweep.repeat + 1 for r in measured if r.sweep is not None), default=DEFAULT_REPEATS)
    return BenchCommand(stacks=(str(files[0]), str(files[1])), spec=spec,
                        hosts=inventories.pop() if inventories else None,
                        runtime=runtimes.pop() if len(runtimes) == 1 else None,
                        until_verdict=one and sequential, repeats=max(DEFAULT_REPEATS, repeats), store=store_flag,
                        values=values)


def check(command: BenchCommand, old: Sequence[RunRecord], new: Sequence[RunRecord], store: Store) -> str | None:
    """Plan the command as `repro bench --dry-run` does; why it would be refused or measure other points (None: it
    plans the measured points)."""
    from repro.hosts.inventory import load_inventory
    from repro.manifest import load_stack
    from repro.pipeline.bench import bench
    from repro.pipeline.sweep_plan import BenchOptions

    try:
        loaded = [load_stack(file) for file in command.stacks]
        inventory = load_inventory(command.hosts or DEFAULT_HOSTS)
        options = BenchOptions(runtime=command.runtime, dry_run=True, repeats=command.repeats)
        plans = bench(loaded, inventory, command.spec, options, store).plans
    except ReproError as exc:
        return f"`repro bench` would refuse it ({exc})"
    planned = [[plan.point for plan in plans[k::2]] for k in (0, 1)]
    if command.until_verdict and len(planned[0]) != 1:
        return f"--until-verdict decides one point, and these settings make {len(planned[0])}"
    for label, side, points in (("OLD", old, planned[0]), ("NEW", new, planned[1])):
        missing = [r.settings for r in side if r.origin == "bench"
                   and not any(_covers(p, r.settings) for p in points)]
        if missing:
            return (f"run interleaved, {label}'s stack would not measure the points it was measured at (e.g. "
                    f"{_said(missing[0])}): the sides differ in a setting that is no stack default")
    return None


def _value(point: Settings, name: str) -> Any:
    if name == "batch_per_worker" and point.scaling == "strong":
        return point.global_batch
    return getattr(point, name)


def _text(value: Any) -> str:
    return {True: "on", False: "off"}.get(value, str(value)) if isinstance(value, bool) else str(value)


def _shared(points: Sequence[Sequence[Settings]], get: Callable[[Settings], Any]) -> str:
    """The values both sides ran with, comma-joined, when they are the same on both sides ('' otherwise)."""
    seen = [list(dict.fromkeys(get(p) for p in side if get(p) is not None)) for side in points]
    if not seen[0] or set(map(_text, seen[0])) != set(map(_text, seen[1])):
        return ""
    return ",".join(_text(v) for v in seen[0])


def _parsed(values: dict[str, str]) -> dict[str, Any]:
    """SweepSpec's fields for the flags' texts (what `repro bench` makes of them)."""
    def split(flag: str) -> tuple[str, ...]:
        return tuple(values[flag].split(",")) if flag in values else ()

    out: dict[str, Any] = {
        "models": split("--model"), "batch_sizes": tuple(map(int, split("--batch-size"))),
        "workers": tuple(map(int, split("--workers"))) or (1,), "precisions": split("--precision"),
        "xla": tuple(v == "on" for v in split("--xla")), "threads": tuple(map(int, split("--threads"))) or (None,)}
    for flag, name in (("--data-format", "data_format"), ("--data", "data")):
        if flag in values and "," not in values[flag]:
            out[name] = values[flag]
    for flag, name in (("--warmup-steps", "warmup_steps"), ("--steps", "steps")):
        if flag in values and "," not in values[flag]:
            out[name] = int(values[flag])
    return out


def _extra(points: Sequence[Sequence[Settings]]) -> dict[str, Any]:
    """Workload-specific settings: one value per key where the sides that set it agree (across frameworks, a
    setting only one side's program takes goes to that side: repro.pipeline.counterparts)."""
    try:
        offered = {o.name for o in spec_of(points[0][0].workload).extra_options}
    except KeyError:  # a plug-in workload not registered in this process: its settings cannot be checked
        return {}
    out: dict[str, Any] = {}
    for name in sorted({k for side in points for p in side for k in p.extra} & offered):
        found = {_text(p.extra[name]) for side in points for p in side if name in p.extra}
        if len(found) == 1:
            out[name] = found.pop()
    return out


def _covers(planned: Settings, measured: Settings) -> bool:
    """Whether a planned point measures what a run measured (None on either side is no contradiction: a setting
    left to the program covers its default as the run reported it; an unknown one cannot be judged)."""
    same = family_of(planned.workload) == family_of(measured.workload) and all(
        None in (getattr(planned, f), getattr(measured, f)) or getattr(planned, f) == getattr(measured, f)
        for f in COVERED)
    comm = planned.comm is None or measured.comm is None or planned.comm == measured.comm
    return same and comm and all(str(measured.extra.get(k)) == str(v) for k, v in planned.extra.items())


def _said(point: Settings) -> str:
    return " ".join(f"{k}={_text(v)}" for k, v in point.shown().items() if v is not None and k != "extra")
