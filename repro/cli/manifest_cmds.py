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
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("show", help="the resolved stack with derived fields and hashes",
                       description="Print a stack as repro resolves it: extends merged, derived fields filled, "
                       "its content hash and image hash.")
    p.add_argument("stack", metavar="STACK", type=path_argument)
    p.add_argument("--json", action="store_true", help="JSON instead of YAML")
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("stacks", help="table of the stacks in a directory",
                       description="List the stack manifests of a directory with their key versions.")
    p.add_argument("directory", nargs="?", default="stacks", type=path_argument,
                   help="directory of manifests (default: stacks)")
    p.set_defaults(handler=cmd_stacks)

    p = sub.add_parser("schema", help="JSON Schema of the manifest (for editors)",
                       description="Print the JSON Schema of a stack manifest, e.g. for YAML completion in editors.")
    p.set_defaults(handler=cmd_schema)


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
    import json

    from repro.errors import CompatibilityError

    failed: list[str] = []
    report = []
    from repro.inputs import expand_directories

    for path in expand_directories(args.stacks, (".yaml", ".yml")):
        loaded, findings, error, bad = _validate_one(path, args.strict)
        if bad:
            failed.append(path)
        if args.json:
            report.append({
                "file": path,
                "valid": not bad,
                "hash": loaded.hash if loaded else None,
                "diagnostics": [d.render() for d in error.diagnostics] if error else [],
                "findings": [f.as_dict() for f in findings],
            })
            continue
        if error:
            print(error.render(), file=sys.stderr)
            continue
        shown = [f for f in findings if not args.quiet or f.severity == "error"]
        for f in shown:
            print(f.render(), file=sys.stderr if f.severity == "error" else sys.stdout)
        counts = {s: sum(1 for f in findings if f.severity == s) for s in ("error", "warning", "note")}
        verdict = "FAILED" if bad else "ok"
        print(f"{path}: {verdict} ({loaded.stack.name}, hash {loaded.hash}; {counts['error']} errors, "
              f"{counts['warning']} warnings, {counts['note']} notes)")
    if args.json:
        print(json.dumps(report, indent=2))
    if failed:
        why = "errors or warnings (--strict)" if args.strict else "errors"
        raise CompatibilityError(f"{len(failed)} of {len(args.stacks)} stacks have {why}: {', '.join(failed)}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    import json

    import yaml

    from repro.manifest import load_stack
    from repro.manifest.compat import check
    from repro.manifest.compat_torch import bundled
    from repro.results.redact import redact_tree

    loaded = load_stack(args.stack)
    data = redact_tree({
        "name": loaded.stack.name,
        "file": loaded.file,
        "extends": list(loaded.chain[1:]),
        "hash": loaded.hash,
        "image_hash": loaded.image_hash,
        "gpu": loaded.stack.gpu,
        "stack": loaded.stack.model_dump(mode="json"),
        **({"bundled": bundled(loaded.stack)} if loaded.stack.pytorch else {}),
        "findings": [f.as_dict() for f in check(loaded)],
    })
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(yaml.safe_dump(data, sort_keys=False, default_flow_style=False), end="")
    return 0


def cmd_stacks(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tabulate import tabulate

    from repro.errors import InputError

    directory = Path(args.directory)
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory of stacks")
    rows = []
    for path in sorted(directory.glob("*.y*ml")):
        loaded, findings, _error, bad = _validate_one(str(path), strict=False)
        if loaded is None:
            rows.append([path.name, "-", "-", "-", "-", "-", "-", "-", "-", "invalid"])
            continue
        s = loaded.stack
        status = "errors" if bad else f"{sum(f.severity == 'warning' for f in findings)} warnings"
        rows.append([s.name, f"{s.os.distro} {s.os.version}", s.cuda or "-", s.cudnn or "-",
                     f"{s.mpi.implementation} {s.mpi.version}", s.python,
                     f"{s.framework} {(s.tensorflow or s.pytorch).version}",
                     s.horovod.version if s.horovod else "-", loaded.hash, status])
    headers = ["stack", "os", "cuda", "cudnn", "mpi", "python", "framework", "horovod", "hash", "status"]
    print(tabulate(rows, headers=headers, disable_numparse=True))  # versions are text: 3.10 is not 3.1
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from repro.manifest.editor_schema import editor_schema

    print(json.dumps(editor_schema(), indent=2))
    return 0
