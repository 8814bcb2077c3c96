"""The settings reader: what a log shows, plus what the user states with ``--set``, as a run's Settings.

``repro import LOG... --set [PATTERN][#RUN]:NAME=VALUE[,NAME=VALUE...]`` (repeatable) states settings the
logs do not show. PATTERN is a glob matched against each file as given and against its name
(``--set 'logs/fp16-*.log:precision=fp16'``); without it the setting is for every file of the call. RUN
picks one run of a file holding several: its number as the import lists it (``--set 'paste.log#2:workers=1'``)
or a line range that its lines overlap (``--set 'paste.log#40-75:workers=1'``).

    model, batch (per worker), global_batch, workers (alias gpus), hosts, precision (fp32|fp16), xla,
    data (synthetic or a data set's name), data_format, scaling (weak|strong), steps, warmup_steps,
    mode (training|inference|evaluation), variable_update, all_reduce, parameter_device, horovod_device,
    data_name, framework, fp16_allreduce, nccl; any other NAME is a workload-specific setting (extra.NAME).

A setting neither the log nor ``--set`` gives stays unknown (None): never a default. A ``--set`` that
contradicts what the log shows is refused, naming the log's line; two ``--set`` values for one file and
setting are refused; a PATTERN that matches no file is refused (a typo would otherwise pass silently).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from repro.errors import Diagnostic, InputError, Location
from repro.results.importers.command import truthy
from repro.results.importers.runs import ParsedRun
from repro.results.record import Settings
from repro.workloads.tf_cnn_benchmarks import canonical_model

ALIASES = {"batch": "batch_per_worker", "batch_size": "batch_per_worker", "gpus": "workers", "nodes": "hosts"}
SETTINGS_NAMES = ("model", "batch_per_worker", "global_batch", "workers", "hosts", "precision", "xla", "data",
                  "data_format", "scaling", "steps", "warmup_steps", "threads", "backend", "workload")
EXTRA_CHOICES: dict[str, tuple[str, ...] | None] = {
    "mode": ("training", "inference", "evaluation"), "variable_update": None, "all_reduce": None,
    "parameter_device": None, "horovod_device": None, "data_name": None, "framework": ("tensorflow", "pytorch"),
    "benchmark": None, "system": None,
}
EXTRA_BOOLS = frozenset({"fp16_allreduce", "nccl"})
WORKLOADS = {"tf_cnn_benchmarks": "tf_cnn_benchmarks", "horovod_synthetic": "horovod_synthetic", "mlperf": "tta"}


@dataclass(frozen=True)
class Override:
    """One setting stated with --set: for the files matching `pattern` (None: every file)."""

    pattern: str | None
    name: str  # a Settings field, or extra.NAME
    value: Any
    given: str  # as typed, for messages
    run: str | None = None  # one run of the file: "N" (its number from 1) or "A-B" (lines it overlaps)

    def matches(self, file: str) -> bool:
        return self.pattern is None or fnmatch.fnmatch(file, self.pattern) or \
            fnmatch.fnmatch(Path(file).name, self.pattern)

    def picks(self, index: int, first: int, last: int) -> bool:
        """Whether the override is for the run numbered `index` (from 1) on lines first..last."""
        if self.run is None:
            return True
        if "-" in self.run:
            low, high = (int(x) for x in self.run.split("-"))
            return first <= high and last >= low
        return index == int(self.run)


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise ValueError("not positive")
    return n


def _choice(choices: tuple[str, ...]) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text not in choices:
            raise ValueError(f"one of {', '.join(choices)}")
        return text
    return check


def _bool(text: str) -> bool:
    value = truthy(text)
    if value is None:
        raise ValueError("true or false")
    return value


_CONVERT: dict[str, Callable[[str], Any]] = {
    "model": canonical_model, "batch_per_worker": _positive, "global_batch": _positive, "workers": _positive,
    "hosts": _positive, "steps": _positive, "warmup_steps": int, "threads": _positive,
    "precision": _choice(("fp32", "fp16")), "xla": _bool, "scaling": _choice(("weak", "strong")),
}


def _value(name: str, text: str) -> Any:
    if name in _CONVERT:
        return _CONVERT[name](text)
    short = name.removeprefix("extra.")
    if short in EXTRA_BOOLS:
        return _bool(text)
    if EXTRA_CHOICES.get(short):
        return _choice(EXTRA_CHOICES[short])(text)  # type: ignore[arg-type]
    if not text:
        raise ValueError("a value")
    return text


def _name(raw: str) -> str:
    name = raw.strip().lower().replace("-", "_").removeprefix("extra.")
    name = ALIASES.get(name, name)
    return name if name in SETTINGS_NAMES else f"extra.{name}"


def parse_overrides(values: Sequence[str]) -> tuple[Override, ...]:
    """--set arguments as Overrides; InputError naming the argument when one is malformed."""
    out = []
    for given in values:
        head, eq, _ = given.partition("=")
        if not eq:
            raise InputError(f"--set {given!r}: expected [PATTERN:]NAME=VALUE[,NAME=VALUE...]",
                             hint="e.g. --set 'logs/fp16-*.log:precision=fp16' or --set hosts=2")
        pattern, colon, first = head.rpartition(":")
        rest = given[len(head) + 1:]
        run = None
        if "#" in pattern:
            pattern, _, run = pattern.rpartition("#")
            if not re.fullmatch(r"[1-9]\d*|\d+-\d+", run):
                raise InputError(f"--set {given!r}: #{run}: expected a run's number (#2) or a line range (#40-75)")
        pairs = [f"{first}={rest.split(',')[0]}", *rest.split(",")[1:]] if colon else given.split(",")
        for pair in pairs:
            raw_name, eq, text = pair.partition("=")
            if not eq or not raw_name.strip():
                raise InputError(f"--set {given!r}: {pair!r} is not NAME=VALUE")
            name = _name(raw_name)
            try:
                value = _value(name, text.strip())
            except ValueError as exc:
                raise InputError(f"--set {given!r}: {raw_name.strip()}={text.strip()!r}: expected {exc}") from None
            out.append(Override(pattern or None, name, value, given, run))
    return tuple(out)


def unmatched(overrides: Sequence[Override], files: Sequence[str]) -> list[Override]:
    """Overrides whose pattern matches none of the files."""
    return [o for o in overrides if o.pattern is not None and not any(o.matches(f) for f in files)]


def for_file(overrides: Sequence[Override], file: str) -> list[Override]:
    """The overrides that apply to one file."""
    return [o for o in overrides if o.matches(file)]


def for_run(overrides: Sequence[Override], file: str, index: int, first: int, last: int) -> dict[str, Override]:
    """The overrides that apply to one run of a file, by setting; InputError when two disagree."""
    out: dict[str, Override] = {}
    for o in overrides:
        if not o.picks(index, first, last):
            continue
        if o.name in out and out[o.name].value != o.value:
            raise InputError(f"{file}: --set gives {o.name} twice: {out[o.name].given!r} and {o.given!r}")
        out[o.name] = o
    return out


def _diag(run: ParsedRun, line: int | None, name: str, message: str, expected: str, found: str = "") -> Diagnostic:
    return Diagnostic(message, Location(run.file, line), path=name, expected=expected, found=found)


def merged(run: ParsedRun, overrides: Mapping[str, Override]) -> dict[str, Any]:
    """The run's settings: the log's, completed by --set; InputError where they contradict."""
    values = dict(run.settings)
    problems = []
    for name, o in overrides.items():
        shown = values.get(name)
        if shown is None:
            values[name] = o.value
        elif shown != o.value:
            problems.append(_diag(run, run.where.get(name), name, f"the log shows {shown!r}, --set says {o.value!r}",
                                  "no --set for what the log shows (or a pattern that leaves this file out)",
                                  o.given))
    if problems:
        raise InputError(f"{run.file}: --set contradicts the log", problems)
    if values.get("batch_per_worker") and values.get("workers"):
        values.setdefault("global_batch", values["batch_per_worker"] * values["workers"])
    return values


def to_settings(run: ParsedRun, overrides: Mapping[str, Override]) -> Settings:
    """The Settings of a run (unknown settings None); InputError when the worker count is unknown."""
    values = merged(run, overrides)
    if values.get("workers") is None:
        what = f" (the run failed: {run.failure})" if run.failure else ""
        raise InputError(f"{run.file}: cannot import this log", [_diag(
            run, run.first_line, "workers", f"the log does not show how many workers (GPUs) ran{what}",
            f"--set '{Path(run.file).name}:workers=N'")])
    fields = {k: v for k, v in values.items() if not k.startswith("extra.")}
    library = fields.pop("comm_library", None)  # a reader whose `backend` is not Horovod's controller says whose
    if library is not None and fields.get("backend") is not None:
        fields["comm"] = {"library": library, "backend": fields.pop("backend")}
    extra = {k.removeprefix("extra."): v for k, v in values.items() if k.startswith("extra.")}
    fields.setdefault("workload", WORKLOADS.get(run.format, run.format))
    for unknown in ("precision", "xla", "data", "hosts"):  # Settings' defaults are for bench runs
        fields.setdefault(unknown, None)
    try:
        return Settings(**fields, extra=extra)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(map(str, first["loc"]))
        raise InputError(f"{run.file}: cannot import this log", [_diag(
            run, run.where.get(name, run.first_line), name, first["msg"], "a valid setting",
            repr(first.get("input")))]) from None
