"""How a workload declares itself, once, next to its program (pure, standard library only).

A `WorkloadSpec` lists the workload's options with their types, defaults, limits and meaning. The
program builds its own argument parser from it (`spec.parser()`), and `repro bench` builds its flags,
choices, help, validation and the record's settings from the same spec, so the three cannot drift.

An option is either one of the point's common settings (`setting="model"`, `"batch_per_worker"`,
`"precision"`, `"xla"`, `"data_format"`, `"data"`, `"warmup_steps"`, `"steps"`, `"threads"`) or a
workload-specific one, stored in the point's `extra` under its name. Options with `bench=False` exist
only for the program (tuning knobs a person may pass by hand); `repro bench` never sends them.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from . import WorkloadError

COMMON_SETTINGS = ("model", "batch_per_worker", "precision", "xla", "data_format", "data", "warmup_steps", "steps",
                   "threads")


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises WorkloadError instead of printing usage, so every failure is one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise WorkloadError(f"{self.prog}: {message}")


@dataclass(frozen=True)
class Option:
    """One option of a workload: `--name-with-dashes VALUE` for the program."""

    name: str  # python name, e.g. "batch_size"; the flag is --batch-size
    type: Callable[[str], Any] = str  # int, float, str, or bool (a --x / --no-x pair)
    default: Any = None
    help: str = ""
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None  # values must be >= minimum
    exclusive_minimum: bool = False  # values must be > minimum
    setting: str | None = None  # a common setting of the point (see COMMON_SETTINGS), else extra[name]
    sweep: bool = False  # repro bench accepts several values and measures each
    bench: bool = True  # repro bench offers (and sends) it
    items: tuple[str, ...] | None = None  # a comma-separated list whose items must be among these
    pattern: str | None = None  # a regular expression the whole value must match
    pattern_help: str = ""  # what the pattern means, for the error message
    frameworks: tuple[str, ...] | None = None  # the programs of a family that take it (None: every program)
    # what differs in one framework's program, by framework: {"pytorch": {"choices": (...), "help": "..."}}
    on: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)

    def for_framework(self, framework: str) -> Option | None:
        """The option as `framework`'s program takes it, or None when that program does not take it."""
        if self.frameworks is not None and framework not in self.frameworks:
            return None
        return replace(self, frameworks=None, on={}, **dict(self.on.get(framework, {})))

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """The value converted and checked; ValueError saying what is expected."""
        if value is None:
            return None
        if self.type is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "on", "yes"):
                return True
            if text in ("0", "false", "off", "no"):
                return False
            raise ValueError(f"{self.flag}: expected on or off, found {value!r}")
        try:
            converted = self.type(value) if not isinstance(value, bool) else None
        except (TypeError, ValueError):
            converted = None
        if converted is None:
            raise ValueError(f"{self.flag}: expected {_type_name(self.type)}, found {value!r}")
        if isinstance(converted, float) and not math.isfinite(converted):
            raise ValueError(f"{self.flag}: expected a finite number, found {value!r}")
        if self.choices is not None and converted not in self.choices:
            raise ValueError(f"{self.flag}: expected one of {', '.join(map(str, self.choices))}, found {value!r}")
        if self.minimum is not None:
            low_ok = converted > self.minimum if self.exclusive_minimum else converted >= self.minimum
            if not low_ok:
                bound = ">" if self.exclusive_minimum else ">="
                raise ValueError(f"{self.flag}: expected a value {bound} {self.minimum:g}, found {value!r}")
        if self.pattern is not None and not re.fullmatch(self.pattern, str(converted)):
            raise ValueError(f"{self.flag}: expected {self.pattern_help or self.pattern}, found {value!r}")
        if self.items is not None:
            parts = [p.strip() for p in str(converted).split(",") if p.strip()]
            bad = [p for p in parts if p not in self.items]
            if bad or not parts:
                raise ValueError(f"{self.flag}: expected a comma-separated list of {', '.join(self.items)}, "
                                 f"found {value!r}")
        return converted

    def argv(self, value: Any) -> list:
        """The program's arguments for `value` (none for None)."""
        if value is None:
            return []
        if self.type is bool:
            return [self.flag if value else "--no-" + self.flag[2:]]
        return [self.flag, str(value)]


def _type_name(kind: Callable[[str], Any]) -> str:
    return {int: "a whole number", float: "a number", str: "text"}.get(kind, getattr(kind, "__name__", "a value"))


def _argparse_type(option: Option) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return option.check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None

    return convert


@dataclass(frozen=True)
class WorkloadSpec:
    """Everything repro needs to know about a workload, declared next to its program."""

    name: str
    summary: str
    kind: str  # how results compare: throughput (items/sec), allreduce (per-size bandwidth), tta
    options: tuple[Option, ...] = ()
    module: str | None = None  # `python -m MODULE` runs it; None for programs that are not repro's
    output: str = "repro_result"  # the output contract: one REPRO_RESULT line (docs/design.md)
    batch: str | None = "per_worker"  # what --batch-size means: per_worker, or None (no batch)
    models: tuple[str, ...] = ()  # models it knows (empty: it takes no --model)
    framework: str | None = None  # what the stack must pin to run it: tensorflow, pytorch; None: no framework
    notes: tuple[str, ...] = field(default_factory=tuple)
    # a family's programs, one per framework ({"tensorflow": "repro.workloads.cnn", "pytorch": ...}): the stack's
    # framework picks one (program()); empty: one program (`module`) for `framework`, or for none
    programs: Mapping[str, str] = field(default_factory=dict, hash=False)
    family: str | None = None  # an alias's family: torch_cnn is cnn's PyTorch program under its older name

    @property
    def frameworks(self) -> tuple[str, ...]:
        """The frameworks it runs on (empty: it needs none)."""
        return tuple(self.programs) if self.programs else ((self.framework,) if self.framework else ())

    @property
    def runs_program(self) -> bool:
        """Whether repro ships its program (a module, or one per framework)."""
        return bool(self.module or self.programs)

    def program(self, framework: str | None) -> WorkloadSpec:
        """The spec of the program that runs on `framework`: its module, options and models (KeyError naming the
        frameworks it supports when it has none for `framework`)."""
        if not self.programs:
            if self.framework is not None and framework != self.framework:
                raise KeyError(f"workload {self.name} runs on {self.framework}, not {framework}")
            return self
        if framework not in self.programs:
            raise KeyError(f"workload {self.name} runs on {' or '.join(self.programs)}, not {framework}")
        options = tuple(o for o in (option.for_framework(framework) for option in self.options) if o is not None)
        model = next((o for o in options if o.setting == "model"), None)
        return replace(self, module=self.programs[framework], framework=framework, programs={}, options=options,
                       models=tuple(model.choices or ()) if model is not None else ())

    def alias(self, name: str) -> WorkloadSpec:
        """The same program under an older name (records and scripts that use it keep working)."""
        return replace(self, name=name, family=self.family or self.name)

    def option(self, name: str) -> Option:
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(f"workload {self.name} has no option {name!r}")

    def by_setting(self, setting: str) -> Option | None:
        """The option that carries a common setting, or None when the workload does not take it."""
        return next((o for o in self.options if o.setting == setting), None)

    @property
    def extra_options(self) -> tuple[Option, ...]:
        """Workload-specific options repro bench offers (stored in the point's extra)."""
        return tuple(o for o in self.options if o.setting is None and o.bench)

    def parser(self, common: Callable[[argparse.ArgumentParser], None] | None = None) -> ArgumentParser:
        """The program's argument parser, from the options (plus `common` arguments every workload takes)."""
        parser = ArgumentParser(prog=self.module or self.name, description=self.summary)
        for o in self.options:
            if o.type is bool:
                parser.add_argument(o.flag, dest=o.name, action="store_true", help=o.help)
                parser.add_argument("--no-" + o.flag[2:], dest=o.name, action="store_false",
                                    help=f"the opposite of {o.flag}")
                parser.set_defaults(**{o.name: o.default})
            else:
                parser.add_argument(o.flag, dest=o.name, type=_argparse_type(o), default=o.default, help=o.help)
        if common is not None:
            common(parser)
        return parser

    def argv(self, values: Sequence[tuple[str, Any]]) -> list:
        """The program's arguments for (option name, value) pairs, in the spec's order."""
        given = dict(values)
        out: list = []
        for o in self.options:
            if o.name in given:
                out += o.argv(given[o.name])
        return out
