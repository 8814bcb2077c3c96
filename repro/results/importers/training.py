"""What the transformer-training readers share (pure): a run's logged steps summed up as a throughput record.

Megatron-LM, torchtitan and the Hugging Face Trainer log different lines, but the records they give have one shape
(the ``lm`` comparison kind, by workload name: repro.workloads.catalog.IMPORTED_KINDS):

    settings.workload             megatron | torchtitan | hf_trainer
    reported_images_per_sec       the run's figure: tokens/sec of the whole job where known, else samples/sec
    metrics["items"]              "tokens" or "samples": what the figure counts
    metrics["tokens_per_sec"]     the job's tokens/sec           } each ONLY where the log states it, or states
    metrics["samples_per_sec"]    the job's samples/sec          } the figures it is derived from (the record's
    metrics["tflops_per_gpu"]     model TFLOP/s per GPU          } provenance says which: "stated" or "derived",
    metrics["mfu"]                model FLOPs utilisation, 0..1  } and how)
    metrics["steps"]              every logged step's own figures, with its line

The run's figure is the mean over the logged steps after the first (the first logged interval holds the warm-up:
compilation, allocator growth, data loader start), or the one logged step a run has.

The readers share their loop too: a log is cut into runs where the step count goes back (`run_indexes`), and a
run's lines are read into its steps, with the settings its lines show (`read_steps`); a reader gives only how it
reads one line.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of
from repro.results.record import RankResult

FIGURES = ("tokens_per_sec", "samples_per_sec", "tflops_per_gpu", "mfu")
PER_GPU_TOKENS = "tokens_per_sec_per_gpu"


@dataclass(frozen=True)
class Step:
    """One logged step (or interval of steps): its line, its number, and the figures the line states."""

    line: int
    number: int | None
    figures: Mapping[str, float] = field(default_factory=dict)
    shows: Mapping[str, Any] = field(default_factory=dict)  # settings the line shows (Megatron: the global batch)


def shown_for(workload: str) -> Shown:
    """The settings every run of a training reader shows: its workload, which is also its program."""
    shown = Shown()
    shown.put("workload", workload, None)
    shown.put("extra.program", workload, None)
    return shown


def run_indexes(lines: Sequence[Line], step: Callable[[Line], Step | None],
                launches: Collection[int] = ()) -> list[int | None]:
    """A run's index for each step line (None for any other line): a new run where the step count goes back, or at
    the first step line after a launch command (its line number in `launches`)."""
    out: list[int | None] = []
    index, last, launched = -1, None, False
    for line in lines:
        launched = launched or line.number in launches
        found = step(line)
        if found is None or found.number is None:
            out.append(None)
            continue
        number = found.number
        if last is None or number <= last or launched:
            index += 1
        last, launched = number, False
        out.append(index)
    return out


def read_steps(lines: Sequence[Line], file: str, shown: Shown, step: Callable[[Line], Step | None], missing: str,
               example: str, settings: Callable[[Line], Mapping[str, Any]] | None = None) -> list[Step]:
    """Every step a run's lines log, in order, and into `shown` the settings they show (a step line's own, any
    other line's from `settings`; the first of each kept); InputError naming `missing` when there is no step."""
    steps = []
    for line in lines:
        found = step(line)
        if found is None:
            for name, value in (settings(line) if settings else {}).items():
                shown.put(name, value, line.number)
            continue
        for name, value in found.shows.items():
            shown.put(name, value, line.number)
        steps.append(found)
    if not steps:
        raise error(file, lines[0].number, missing, example)
    return steps


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def measured(steps: Sequence[Step]) -> list[Step]:
    """The steps a run's figure is the mean of: all but the first logged one (its warm-up), when there are more."""
    return list(steps[1:]) if len(steps) > 1 else list(steps)


def summarise(steps: Sequence[Step], shown: Shown) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """The run's figures (mean over the measured steps), which the log states (name -> where) and which are derived
    (name -> how), from the steps' stated figures and the settings shown (workers, global batch)."""
    window = measured(steps)
    lines = f"lines {window[0].line}-{window[-1].line}" if len(window) > 1 else f"line {window[0].line}"
    over = (f"mean over the logged steps after the first ({lines})" if len(steps) > 1
            else f"the one logged step ({lines})")
    out: dict[str, Any] = {}
    stated: dict[str, str] = {}
    derived: dict[str, str] = {}
    names = {name for step in window for name in step.figures}
    for name in sorted(names):
        values = [s.figures[name] for s in window if name in s.figures]
        if len(values) == len(window):  # a figure some steps lack is not a run's figure
            out[name] = round(_mean(values), 4)  # the log prints these figures with at most 4 decimals
            stated[name] = over
    workers = shown.get("workers")
    if "tokens_per_sec" not in out and PER_GPU_TOKENS in out and isinstance(workers, int):
        out["tokens_per_sec"] = round(out[PER_GPU_TOKENS] * workers, 4)
        derived["tokens_per_sec"] = f"the stated tokens/sec per GPU x {workers} workers"
    batch = shown.get("global_batch")
    times = [s.figures.get("step_time_s") for s in window]
    if "samples_per_sec" not in out and isinstance(batch, int) and all(times):
        out["samples_per_sec"] = round(batch * len(times) / sum(t for t in times if t), 4)
        derived["samples_per_sec"] = (f"the stated global batch size {batch} over the stated time per iteration "
                                      f"({over})")
    return out, stated, derived


def training_run(fmt: str, program: str, lines: Sequence[Line], file: str, shown: Shown, steps: Sequence[Step],
                 given: Mapping[str, Any] | None = None, *, command: tuple[str, ...] = (),
                 env: Mapping[str, str] | None = None, software: Mapping[str, str] | None = None) -> ParsedRun:
    """A transformer-training run as a ParsedRun of the throughput kind (see the module's docstring)."""
    for name, value in (given or {}).items():
        shown.put(name, value, None)
    figures, stated, derived = summarise(steps, shown)
    figure_name = "tokens_per_sec" if "tokens_per_sec" in figures else \
        "samples_per_sec" if "samples_per_sec" in figures else None
    metrics: dict[str, Any] = {"format": fmt, "program": program, **{k: v for k, v in figures.items()}}
    metrics["items"] = figure_name.split("_")[0] if figure_name else None
    metrics["steps"] = [{"line": s.line, "step": s.number, **s.figures} for s in steps]
    metrics["stated"] = stated
    ranks: tuple[RankResult, ...] = ()
    times = [s.figures["step_time_s"] for s in steps if s.figures.get("step_time_s")]
    batch = shown.get("global_batch")
    if len(times) == len(steps) and times and isinstance(batch, int):
        # each logged interval's time per iteration is a sample of the job's step time (the first: its warm-up)
        derived["step times"] = "each logged interval's stated time per iteration (the first one: warm-up)"
        # device "": these logs name no device (RankResult's default "CPU" would read as CPU hardware in compare)
        ranks = (RankResult(rank=0, device="", warmup_times=times[:1] if len(times) > 1 else [],
                            step_times=times[1:] if len(times) > 1 else times, items_per_step=batch),)
    metrics["derived"] = {**derived, **({"figure": f"the run's {figure_name}"} if figure_name else {})}
    warnings = () if figure_name else (
        "the log states neither tokens/sec nor samples/sec (nor the batch and step time they follow from): "
        "the run has no figure",)
    return ParsedRun(format=fmt, file=file, first_line=lines[0].number, last_line=lines[-1].number,
                     settings=shown.values, where=shown.where, ranks=ranks,
                     figure=figures.get(figure_name) if figure_name else None,
                     metrics=metrics,
                     software=dict(software or {}), command=command, env=dict(env or {}), warnings=warnings,
                     tail=tail_of([line.text for line in lines]))
