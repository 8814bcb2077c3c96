"""Commands on hosts: prepare (and its --check-only preflight)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from repro import inputs
from repro.cli.manifest_cmds import add_output_format
from repro.inputs import argument, extra_var_argument, path_argument

if TYPE_CHECKING:
    from repro.formats import Table
    from repro.pipeline.prepare import HostOutcome, PrepareResult, Readiness, TaskResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prepare", help="prepare an inventory's hosts for a stack (Ansible), or check how ready they are",
        description="Run repro's Ansible roles (ssh_trust, ofed, nvidia, gpudirect, ipoib, docker, nfs_dataset) on "
        "the inventory's hosts through ansible-runner, with the stack's pinned versions. Roles skip, with their "
        "reason, where the hardware is absent. Ends with a per-host summary; gathered facts go to the store. "
        "Exit status 1 if a host failed or was unreachable (or, with --check-only, is not ready).")
    p.add_argument("--hosts", required=True, metavar="INVENTORY", type=path_argument,
                   help="Ansible inventory file or directory")
    p.add_argument("--stack", metavar="STACK", type=path_argument,
                   help="stack manifest whose versions the hosts must match")
    p.add_argument("--tags", metavar="ROLE,...", type=argument(inputs.WORDS),
                   help="run only these roles (ssh_trust, ofed, nvidia, gpudirect, "
                   "ipoib, docker, nfs_dataset); facts are gathered in any case")
    p.add_argument("--check", action="store_true", help="Ansible check mode: report what would change, change nothing")
    p.add_argument("--check-only", action="store_true",
                   help="only gather facts and print each host's readiness for the runtime (changes nothing)")
    p.add_argument("--limit", metavar="PATTERN", type=argument(inputs.HOST_PATTERN),
                   help="only these hosts (an Ansible host pattern)")
    p.add_argument("-e", "--extra-var", action="append", metavar="KEY=VALUE", type=extra_var_argument,
                   help="a role variable for this run (repeatable), e.g. -e nvidia_manage=true")
    p.add_argument("--store", metavar="DIR", type=path_argument,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the ansible-playbook command and variables it would use; touch nothing")
    p.add_argument("-v", "--verbose", action="store_true", help="also show tasks skipped by their conditions")
    add_output_format(p, "the summary and readiness (table: text; the dry run too)", json_flag=False)
    p.defer(_choices)  # the runtimes come from their registry: loaded only for `repro prepare`
    p.set_defaults(handler=cmd_prepare)


def _choices(p: argparse.ArgumentParser) -> None:
    """--runtime, whose names come from repro.pipeline.choices (the runtimes' registry)."""
    from repro.pipeline.choices import prepare_runtimes

    p.add_argument("--runtime", default=None, choices=prepare_runtimes(), metavar="RUNTIME",
                   help="the runtime `repro bench` will use, whose needs readiness checks (the host runtime: the "
                   "hosts' TensorFlow, Horovod and MPI against --stack; docker: the engine; one of "
                   f"{', '.join(prepare_runtimes())}); default: host for a local inventory, else docker, as bench "
                   "chooses")


def _printer(machine: bool) -> Callable[[str], None]:
    """Where progress goes: stdout on a terminal, stderr when stdout carries data (csv, json)."""
    stream = sys.stderr if machine else sys.stdout
    return lambda line: print(line, file=stream, flush=True)


def _progress(verbose: bool, say: Callable[[str], None]) -> Callable[[TaskResult], None]:
    """One line per task result (skipped ones only with --verbose)."""

    def show(r: TaskResult) -> None:
        if r.status == "skipped" and not verbose:
            return
        where = f"{r.role}: {r.task}" if r.role else r.task
        if r.skip_reason is not None:
            text = f"skipped: {r.skip_reason}"
        elif r.status in ("failed", "unreachable"):
            text = f"{r.status.upper()}{' (ignored)' if r.ignored else ''}: {r.message}"
        else:
            text = r.status
        say(f"  {r.host:<12} {where[:70]:<70} {text}")

    return show


def cmd_prepare(args: argparse.Namespace) -> int:
    from repro.formats import is_machine
    from repro.pipeline.prepare import PrepareRequest, prepare_hosts

    say = _printer(is_machine(args.format))
    request = PrepareRequest(args.hosts, stack=args.stack, tags=args.tags, check=args.check,
                             check_only=args.check_only, limit=args.limit, extra_vars=tuple(args.extra_var or ()),
                             store_root=args.store, runtime=args.runtime, dry_run=args.dry_run)
    result = prepare_hosts(request, progress=_progress(args.verbose, say), show=say)
    if args.dry_run:
        _write_dry_run(result, args.format)
        return 0
    _write_prepared(result, args)
    failure = result.failure()
    if failure is not None:
        raise failure
    verb = "checked" if args.check_only or args.check else "prepared"
    print(f"done: {len(result.inventory.hosts)} host(s) {verb}", file=sys.stderr)
    return 0


def _write_dry_run(result: PrepareResult, fmt: str) -> None:
    """The ansible-playbook command and its variables (secrets redacted), as text or data."""
    import json
    import shlex

    from repro.cli.output import tree_text, write
    from repro.secrets import redact_tree

    run = result.run
    data = {"dry_run": True, "hosts": [h.name for h in result.inventory.hosts], "cwd": str(run.playbook_path.parent),
            "env": dict(sorted(run.env().items())), "argv": run.argv(), "variables": redact_tree(run.variables())}
    # env: ansible's own settings, as before (redacting by name would take ANSIBLE_HOST_KEY_CHECKING for a secret)
    lines = [f"# hosts: {', '.join(data['hosts'])}", f"# run in {data['cwd']} with:",
             *(f"export {k}={shlex.quote(v)}" for k, v in data["env"].items()), shlex.join(data["argv"]),
             "# variables (-e):", json.dumps(data["variables"], indent=2, sort_keys=True)]
    write(tree_text(data, fmt, terminal="\n".join(lines) + "\n"))


def _write_prepared(result: PrepareResult, args: argparse.Namespace) -> None:
    """The per-host summary, the facts stored, readiness and where ansible-runner's artifacts are."""
    from repro.cli.output import write
    from repro.formats import Document, render

    summary, readiness = _summary_table(result), _readiness_table(result.readiness)
    if args.format != "table":
        write(render(Document((summary, readiness), data=_prepared_data(result)), args.format))
        return
    text = "" if args.check_only else "\n" + render(Document((summary,)), "table")
    if result.facts_paths:
        where = next(iter(result.facts_paths.values())).parent
        text += f"\nfacts of {len(result.facts_paths)} host(s) stored in {where}\n"
    if result.readiness is not None:
        text += _readiness_text(result, args, readiness)
    if result.data_dir:
        text += f"ansible-runner artifacts: {result.outcome.artifact_dir or result.data_dir}\n"
    write(text)


def _readiness_text(result: PrepareResult, args: argparse.Namespace, table: Table) -> str:
    """Readiness on a terminal: the table of checks (--check-only), else one line pointing to it."""
    from repro.formats import Document, render

    if args.check_only:
        why = (f" (--runtime {result.runtime} chose it)" if args.runtime else
               " (what repro bench uses here; --runtime checks another)")
        return f"\nreadiness for the {result.runtime} runtime{why}\n" + render(Document((table,)), "table")
    fails = len(result.readiness.failed)
    warns = sum(1 for c in result.readiness.checks if c.status == "warn")
    return (f"readiness: {fails} failed, {warns} warnings (details: repro prepare --check-only --hosts "
            f"{args.hosts}{' --stack ' + args.stack if args.stack else ''})\n")


def _host_row(name: str, out: HostOutcome | None, check: bool) -> dict:
    """One host's line of the summary: its result, task counts and notes (why it stopped, what was skipped)."""
    if out is None:
        return {"host": name, "result": "not run", "ok": None, "changed": None, "skipped": None, "failed": None,
                "notes": ["not matched by --limit"]}
    if out.unreachable:
        notes = [f"unreachable: {out.why_unreachable}", "nothing after this ran on the host"]
    elif out.failure is not None:
        f = out.failure
        notes = [f"failed at {f.role or '-'} / {f.task}: {f.message}",
                 "roles before it were applied; later tasks did not run on this host"]
    else:
        changes = "would change" if check else "changes"
        notes = ["all selected roles ran" + (f", {out.changed} {changes}" if out.changed else ", no changes")]
    notes += [f"{role or '-'}: skipped: {reason}" for role, reason in out.skips]
    return {"host": name, "result": out.status.upper() if out.status in ("failed", "unreachable") else out.status,
            "ok": out.ok, "changed": out.changed, "skipped": out.skipped,
            "failed": out.failed + (1 if out.unreachable else 0), "notes": notes}


def _summary_table(result: PrepareResult) -> Table:
    """The per-host summary: notes wrap at 100 columns on a terminal."""
    from repro.formats import Column, Table

    rows = tuple(_host_row(h.name, result.outcome.hosts.get(h.name), result.run.check)
                 for h in result.inventory.hosts)
    headers = ("host", "result", "ok", "changed", "skipped", "failed", "notes")
    cells = tuple(tuple("" if r[k] is None else "\n".join(r[k]) if k == "notes" else str(r[k]) for k in headers)
                  for r in rows)
    return Table(tuple(Column(h, numeric=h in ("ok", "changed", "skipped", "failed")) for h in headers), cells,
                 rows, name="hosts", wrap=(None, None, None, None, None, None, 100))


def _readiness_table(readiness: Readiness | None) -> Table:
    """Each readiness check of each host: messages wrap at 90 columns on a terminal."""
    from repro.formats import Column, Table

    checks = readiness.checks if readiness is not None else ()
    rows = tuple({"host": c.host, "check": c.name, "status": c.status, "message": c.message} for c in checks)
    cells = tuple((c.host, c.name, c.status.upper() if c.status == "fail" else c.status, c.message) for c in checks)
    return Table(tuple(Column(h) for h in ("host", "check", "status", "message")), cells, rows, name="readiness",
                 wrap=(None, None, None, 90))


def _prepared_data(result: PrepareResult) -> dict:
    """`repro prepare --format json`: the summary, facts, readiness and where the artifacts are."""
    failure = result.failure()
    return {"mode": result.mode, "runtime": result.runtime, "ok": failure is None,
            "error": failure.message if failure is not None else None,
            "hosts": [_host_row(h.name, result.outcome.hosts.get(h.name), result.run.check)
                      for h in result.inventory.hosts],
            "facts": {host: str(path) for host, path in result.facts_paths.items()},
            "readiness": [{"host": c.host, "check": c.name, "status": c.status, "message": c.message}
                          for c in result.readiness.checks] if result.readiness is not None else None,
            "artifacts": str(result.outcome.artifact_dir or result.data_dir) if result.data_dir else None}
