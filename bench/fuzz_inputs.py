"""A longer, nightly-style fuzz run of repro's input boundary, reporting instead of stopping at the first failure.

The same case classes as tests/unit/test_manifest_fuzz.py, tests/unit/test_inventory_fuzz.py and the
end-to-end sample of tests/integration/test_inventory_input.py, SCALE times as many and with random
seeds (printed, so a run can be repeated). For each class it prints the cases, values accepted, errors,
errors without file:line, tracebacks (by exception type) and hangs. Exit status 1 when any traceback,
hang or unlocated error was seen.

    python bench/fuzz_inputs.py --scale 10                     # ~12,000 manifests, ~12,000 inventories
    python bench/fuzz_inputs.py --scale 1 --end-to-end 200     # + 200 inventories through ansible-inventory
    python bench/fuzz_inputs.py --seed 7 --only manifests      # one seed again

It runs against whatever `repro` is importable, so pointing PYTHONPATH at another checkout measures it
(inventories in-process need repro.hosts.inventory.inventory_from_listing; use --end-to-end otherwise).
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import given, seed, settings

from repro.errors import ReproError
from tests.unit import fuzz_cases as fc


class Report:
    def __init__(self, name: str) -> None:
        self.name = name
        self.tally = fc.Tally()
        self.crashes: collections.Counter[str] = collections.Counter()
        self.hangs = 0
        self.example: str = ""
        self.started = time.monotonic()
        self.seconds = 0.0

    def done(self) -> Report:
        self.seconds = time.monotonic() - self.started
        return self

    def crashed(self, exc: BaseException) -> None:
        if isinstance(exc, fc.Hang):
            self.hangs += 1
            return
        self.crashes[type(exc).__name__] += 1
        self.example = self.example or f"{type(exc).__name__}: {str(exc)[:200]}"

    def line(self) -> str:
        t = self.tally
        crashes = ", ".join(f"{k} {v}" for k, v in self.crashes.most_common()) or "0"
        return (f"{self.name:40} {t.cases:6} cases {t.ok:6} ok {t.errors:6} errors {len(t.unlocated):5} unlocated "
                f"tracebacks: {crashes}; hangs: {self.hangs}; {self.seconds:.0f} s")

    @property
    def bad(self) -> bool:
        return bool(self.crashes or self.hangs or self.tally.unlocated)


def _settings(examples: int, run_seed: int):
    def wrap(fn):
        return seed(run_seed)(settings(fc.fuzz_settings(examples), derandomize=False)(fn))
    return wrap


def _guarded(report: Report, action) -> None:
    try:
        with fc.time_limit():
            action()
    except AssertionError:
        pass  # an expectation of the unit tests; this run counts tracebacks, hangs and places
    except ReproError as exc:  # an error the property did not record (e.g. an unexpected kind)
        report.tally.error(exc, True)
    except BaseException as exc:  # what this run is for: any traceback, counted
        if isinstance(exc, KeyboardInterrupt):
            raise
        report.crashed(exc)


def _manifest_class(report: Report, examples: int, strategy, to_bytes, run_seed: int) -> Report:
    @_settings(examples, run_seed)
    @given(strategy)
    def case(value):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "fuzz.yaml"
            path.write_bytes(to_bytes(value))
            _guarded(report, lambda: fc.manifest_property(path, report.tally))

    case()
    return report.done()


def manifests(scale: int, run_seed: int) -> list[Report]:
    reports = []
    for name, (examples, strategy, to_bytes) in fc.MANIFEST_CLASSES.items():
        reports.append(_manifest_class(Report(f"manifests: {name}"), examples * scale, strategy, to_bytes, run_seed))
    report = Report("manifests: extends to special files")
    for target in fc.SPECIAL_TARGETS:
        with tempfile.TemporaryDirectory() as tmp:
            child = fc.special_extends(Path(tmp), target)
            _guarded(report, lambda child=child: fc.manifest_property(child, report.tally))
    reports.append(report.done())
    return reports


def inventories(examples: int, run_seed: int, *, end_to_end: bool) -> Report:
    report = Report("inventories: " + ("through ansible-inventory" if end_to_end else "in-process listing"))

    @_settings(examples, run_seed)
    @given(fc.inventory_cases())
    def case(inventory_case):
        with tempfile.TemporaryDirectory() as tmp:
            path = fc.write_inventory(inventory_case, Path(tmp))
            _guarded(report, lambda: fc.inventory_property(inventory_case, path, report.tally,
                                                           end_to_end=end_to_end))

    case()
    return report.done()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=10, help="times the unit tests' case counts (default 10)")
    parser.add_argument("--end-to-end", type=int, default=0, help="inventory cases through ansible-inventory")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: a new one, printed)")
    parser.add_argument("--only", choices=("manifests", "inventories"), default=None)
    args = parser.parse_args()
    run_seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"seed {run_seed}, scale {args.scale}, python {sys.version.split()[0]}, cwd {os.getcwd()}")
    reports: list[Report] = []
    if args.only != "inventories":
        reports += manifests(args.scale, run_seed)
    if args.only != "manifests":
        if args.scale:
            reports.append(inventories(1200 * args.scale, run_seed, end_to_end=False))
        if args.end_to_end:
            reports.append(inventories(args.end_to_end, run_seed, end_to_end=True))
    for report in reports:
        print(report.line())
    for report in reports:
        for text in report.tally.unlocated[:3]:
            print(f"unlocated ({report.name}): {text.splitlines()[0][:200]}")
        if report.example:
            print(f"traceback ({report.name}): {report.example}")
    total = sum(r.tally.cases for r in reports)
    print(f"total: {total} cases, {sum(len(r.tally.unlocated) for r in reports)} errors without file:line, "
          f"{sum(sum(r.crashes.values()) for r in reports)} tracebacks, {sum(r.hangs for r in reports)} hangs")
    return 1 if any(r.bad for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
