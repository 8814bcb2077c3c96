"""Commands on stack manifests: validate, show, stacks, schema."""

from __future__ import annotations

import argparse
import sys

from repro.inputs import path_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check stack manifests and their version compatibility",
                       description="Validate stack manifests: schema, extends, and the compatibility rules. "
                       "Exit status 2 if any stack has an error (or a warning, with --strict).")
    p.add_argument("stacks", nargs="+", metavar="STACK", type=path_argument,
                   help="manifest files or names, or directories of them")
    p.add_argument("--strict", action="store_true", help="treat warnings as errors")
    p.add_argument("--quiet", "-q", action="store_true", help="print errors only, no warnings or notes")
    _format_options(p, "the report")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("show", help="the resolved stack with derived fields and hashes",
                       description="Print a stack as repro resolves it: extends merged, derived fields filled, "
                       "its content hash and image hash.")
    p.add_argument("stack", metavar="STACK", type=path_argument)
    _format_options(p, "the stack (table: YAML)")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("stacks", help="table of the stacks in a directory",
                       description="List the stack manifests of a directory with their key versions.")
    p.add_argument("directory", nargs="?", default="stacks", type=path_argument,
                   help="directory of manifests (default: stacks)")
    _format_options(p, "the table", json_flag=False)
    p.set_defaults(handler=cmd_stacks)

    p = sub.add_parser("schema", help="JSON Schema of the manifest (for editors)",
                       description="Print the JSON Schema of a stack manifest, e.g. for YAML completion in editors.")
    p.set_defaults(handler=cmd_schema)


def _format_options(p: argparse.ArgumentParser, what: str, *, json_flag: bool = True) -> None:
    from repro.formats import FORMATS

    out = p.add_mutually_exclusive_group()
    out.add_argument("--format", choices=FORMATS.names(), default="table",
                     help=f"output format of {what}: {FORMATS.describe()} (default table)")
    if json_flag:
        out.add_argument("--json", dest="format", action="store_const", const="json", help="same as --format json")


def _validate_one(path: str, strict: bool):
    """(LoadedStack or None, findings, input error or None, failed?) for one file."""
    from repro.errors import ManifestError
    from repro.manifest import load_stack
    from repro.pipeline.gate import gate

    try:
        loaded = load_stack(path)
    except ManifestError as exc:
        return None, [], exc, True
    g = gate(loaded, strict=strict)
    return loaded, list(g.findings), None, bool(g.blocking)


def cmd_validate(args: argparse.Namespace) -> int:
    from repro.errors import CompatibilityError
    from repro.formats import Column, Document, Table, render
    from repro.inputs import expand_directories

    failed: list[str] = []
    report = []
    terminal = args.format == "table"
    for path in expand_directories(args.stacks, (".yaml", ".yml")):
        loaded, findings, error, bad = _validate_one(path, args.strict)
        if bad:
            failed.append(path)
        counts = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "note")}
        report.append({
            "file": path, "valid": not bad, "stack": loaded.stack.name if loaded else None,
            "hash": loaded.hash if loaded else None, "errors": counts["error"] + (len(error.diagnostics) if error
                                                                                   else 0),
            "warnings": counts["warning"], "notes": counts["note"],
            "diagnostics": [d.render() for d in error.diagnostics] if error else [],
            "findings": [f.as_dict() for f in findings],
        })
        if not terminal:
            continue
        if error:
            print(error.render(), file=sys.stderr)
            continue
        shown = [f for f in findings if not args.quiet or f.severity == "error"]
        for f in shown:
            print(f.render(), file=sys.stderr if f.severity == "error" else sys.stdout)
        verdict = "FAILED" if bad else "ok"
        print(f"{path}: {verdict} ({loaded.stack.name}, hash {loaded.hash}; {counts['error']} errors, "
              f"{counts['warning']} warnings, {counts['note']} notes)")
    if not terminal:
        headers = ("file", "valid", "stack", "hash", "errors", "warnings", "notes")
        cells = tuple((r["file"], "yes" if r["valid"] else "NO", r["stack"] or "-", r["hash"] or "-",
                       str(r["errors"]), str(r["warnings"]), str(r["notes"])) for r in report)
        rows = tuple({k: r[k] for k in headers} | {"problems": [*r["diagnostics"], *(f"{f['severity']}: "
                                                                                   f"{f['message']}" for f in
                                                                                   r["findings"])]}
                     for r in report)
        table = Table(tuple(Column(h, numeric=h in ("errors", "warnings", "notes")) for h in headers), cells, rows,
                      notes=tuple(f"{r['file']}: {p}" for r in rows for p in r["problems"]), name="stacks")
        sys.stdout.write(render(Document((table,), data=report if args.format == "json" else None), args.format))
    if failed:
        why = "errors or warnings (--strict)" if args.strict else "errors"
        raise CompatibilityError(f"{len(failed)} of {len(args.stacks)} stacks have {why}: {', '.join(failed)}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from repro.cli.output import tree_text, write
    from repro.manifest import load_stack
    from repro.manifest.compat import check
    from repro.pipeline.software import framework_show
    from repro.secrets import redact_tree

    loaded = load_stack(args.stack)
    data = redact_tree({
        "name": loaded.stack.name,
        "file": loaded.file,
        "extends": list(loaded.chain[1:]),
        "hash": loaded.hash,
        "image_hash": loaded.image_hash,
        "gpu": loaded.stack.gpu,
        "stack": loaded.stack.model_dump(mode="json"),
        **framework_show(loaded.stack),
        "findings": [f.as_dict() for f in check(loaded)],
    })
    write(tree_text(data, args.format))
    return 0


def cmd_stacks(args: argparse.Namespace) -> int:
    from pathlib import Path

    from repro.errors import InputError
    from repro.formats import Column, Document, Table, render

    directory = Path(args.directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory of stacks")
    headers = ("stack", "os", "cuda", "cudnn", "mpi", "python", "framework", "horovod", "hash", "status")
    cells, rows = [], []
    for path in sorted(directory.glob("*.y*ml")):
        loaded, findings, _error, bad = _validate_one(str(path), strict=False)
        if loaded is None:
            cells.append((path.name, "-", "-", "-", "-", "-", "-", "-", "-", "invalid"))
            rows.append({"stack": path.name, "file": str(path), "status": "invalid"})
            continue
        s = loaded.stack
        warnings = sum(f.severity == "warning" for f in findings)
        status = "errors" if bad else f"{warnings} warnings"
        framework = getattr(s, s.framework)  # the pinned framework's section
        # versions are text: 3.10 is not 3.1
        cells.append((s.name, f"{s.os.distro} {s.os.version}", s.cuda or "-", s.cudnn or "-",
                      f"{s.mpi.implementation} {s.mpi.version}", s.python, f"{s.framework} {framework.version}",
                      s.horovod.version if s.horovod else "-", loaded.hash, status))
        rows.append({"stack": s.name, "file": str(path), "os": f"{s.os.distro} {s.os.version}", "cuda": s.cuda,
                     "cudnn": s.cudnn, "mpi": f"{s.mpi.implementation} {s.mpi.version}", "python": s.python,
                     "framework": s.framework, "framework_version": framework.version,
                     "horovod": s.horovod.version if s.horovod else None, "hash": loaded.hash,
                     "status": "errors" if bad else "ok", "warnings": warnings})
    table = Table(tuple(Column(h) for h in headers), tuple(cells), tuple(rows), name="stacks")
    sys.stdout.write(render(Document((table,)), args.format))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from repro.manifest.editor_schema import editor_schema

    print(json.dumps(editor_schema(), indent=2))
    return 0
