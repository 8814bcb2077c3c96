"""Commands on stack manifests: validate, show, stacks, schema."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from repro.inputs import path_argument

if TYPE_CHECKING:
    from repro.formats import Document
    from repro.pipeline.stacks import StackCheck, Validation


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check stack manifests and their version compatibility",
                       description="Validate stack manifests: schema, extends, and the compatibility rules. "
                       "Exit status 2 if any stack has an error (or a warning, with --strict).")
    p.add_argument("stacks", nargs="+", metavar="STACK", type=path_argument,
                   help="manifest files or names, or directories of them")
    p.add_argument("--strict", action="store_true", help="treat warnings as errors")
    p.add_argument("--quiet", "-q", action="store_true", help="print errors only, no warnings or notes")
    add_output_format(p, "the report")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("show", help="the resolved stack with derived fields and hashes",
                       description="Print a stack as repro resolves it: extends merged, derived fields filled, "
                       "its content hash and image hash.")
    p.add_argument("stack", metavar="STACK", type=path_argument)
    add_output_format(p, "the stack (table: YAML)")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("stacks", help="table of the stacks in a directory",
                       description="List the stack manifests of a directory with their key versions.")
    p.add_argument("directory", nargs="?", default="stacks", type=path_argument,
                   help="directory of manifests (default: stacks)")
    add_output_format(p, "the table", json_flag=False)
    p.set_defaults(handler=cmd_stacks)

    p = sub.add_parser("schema", help="JSON Schema of the manifest (for editors)",
                       description="Print the JSON Schema of a stack manifest, e.g. for YAML completion in editors.")
    p.set_defaults(handler=cmd_schema)


def add_output_format(p: argparse.ArgumentParser, what: str, *, json_flag: bool = True) -> None:
    """--format (and --json unless json_flag is False): how the command prints its result."""
    from repro.formats import FORMATS

    out = p.add_mutually_exclusive_group()
    out.add_argument("--format", choices=FORMATS.names(), default="table",
                     help=f"output format of {what}: {FORMATS.describe()} (default table)")
    if json_flag:
        out.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")


def _stack_findings(check: StackCheck, quiet: bool) -> None:
    """One stack's findings and verdict on a terminal: errors on stderr, the rest on stdout."""
    if check.error:
        print(check.error.render(), file=sys.stderr)
        return
    for f in (f for f in check.findings if not quiet or f.severity == "error"):
        print(f.render(), file=sys.stderr if f.severity == "error" else sys.stdout)
    counts = ", ".join(f"{check.count(s)} {s}s" for s in ("error", "warning", "note"))
    print(f"{check.file}: {'FAILED' if check.failed else 'ok'} ({check.loaded.stack.name}, hash "
          f"{check.loaded.hash}; {counts})")


def _validation_document(validation: Validation, fmt: str) -> Document:
    """The report of every stack as one table (markdown, csv, json)."""
    from repro.formats import Column, Document, Table

    headers = ("file", "valid", "stack", "hash", "errors", "warnings", "notes")
    report = [c.report() for c in validation.checks]
    cells = tuple((r["file"], "yes" if r["valid"] else "NO", r["stack"] or "-", r["hash"] or "-",
                   str(r["errors"]), str(r["warnings"]), str(r["notes"])) for r in report)
    rows = tuple({k: r[k] for k in headers} | {"problems": [*r["diagnostics"], *(
        f"{f['severity']}: {f['message']}" for f in r["findings"])]} for r in report)
    table = Table(tuple(Column(h, numeric=h in ("errors", "warnings", "notes")) for h in headers), cells, rows,
                  notes=tuple(f"{r['file']}: {p}" for r in rows for p in r["problems"]), name="stacks")
    return Document((table,), data=report if fmt == "json" else None)


def cmd_validate(args: argparse.Namespace) -> int:
    from repro.formats import render
    from repro.pipeline.stacks import validate_stacks

    validation = validate_stacks(args.stacks, strict=args.strict)
    if args.format == "table":
        for check in validation.checks:
            _stack_findings(check, args.quiet)
    else:
        sys.stdout.write(render(_validation_document(validation, args.format), args.format))
    failure = validation.failure()
    if failure is not None:
        raise failure
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from repro.cli.output import tree_text, write
    from repro.pipeline.stacks import show_stack

    write(tree_text(show_stack(args.stack), args.format))
    return 0


def cmd_stacks(args: argparse.Namespace) -> int:
    from repro.formats import Column, Document, Table, render
    from repro.pipeline.stacks import list_stacks

    headers = ("stack", "os", "cuda", "cudnn", "mpi", "python", "framework", "horovod", "hash", "status")
    rows = list_stacks(args.directory)
    cells = tuple((r.name, "-", "-", "-", "-", "-", "-", "-", "-", "invalid") if r.status == "invalid" else
                  (r.name, r.os, r.cuda or "-", r.cudnn or "-", r.mpi, r.python, f"{r.framework} "
                   f"{r.framework_version}", r.horovod or "-", r.hash,
                   "errors" if r.status == "errors" else f"{r.warnings} warnings") for r in rows)
    table = Table(tuple(Column(h) for h in headers), cells, tuple(r.as_dict() for r in rows), name="stacks")
    sys.stdout.write(render(Document((table,)), args.format))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from repro.pipeline.stacks import manifest_schema

    print(json.dumps(manifest_schema(), indent=2))
    return 0
