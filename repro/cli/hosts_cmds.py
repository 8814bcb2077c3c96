"""Commands on hosts: prepare (and its --check-only preflight)."""

from __future__ import annotations

import argparse
import sys

from repro import inputs
from repro.inputs import argument, extra_var_argument, path_argument


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
    p.add_argument("--runtime", default=None, metavar="RUNTIME",
                   help="the runtime `repro bench` will use, whose needs readiness checks (the host runtime: the "
                   "hosts' TensorFlow, Horovod and MPI against --stack; docker: the engine); default: host for a "
                   "local inventory, else docker, as bench chooses")
    p.add_argument("--limit", metavar="PATTERN", type=argument(inputs.HOST_PATTERN),
                   help="only these hosts (an Ansible host pattern)")
    p.add_argument("-e", "--extra-var", action="append", metavar="KEY=VALUE", type=extra_var_argument,
                   help="a role variable for this run (repeatable), e.g. -e nvidia_manage=true")
    p.add_argument("--store", metavar="DIR", type=path_argument,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the ansible-playbook command and variables it would use; touch nothing")
    p.add_argument("-v", "--verbose", action="store_true", help="also show tasks skipped by their conditions")
    p.set_defaults(handler=cmd_prepare)


def _progress(verbose: bool):
    from repro.hosts.ansible import TaskResult

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
        print(f"  {r.host:<12} {where[:70]:<70} {text}", flush=True)

    return show


def _failure_text(h) -> str:
    """'h2: unreachable: <why>' or 'h1: failed at <role> / <task>: <why>'."""
    if h.unreachable:
        return f"{h.host}: unreachable: {h.why_unreachable}"
    if h.failure is not None:
        return f"{h.host}: failed at {h.failure.role or '-'} / {h.failure.task}: {h.failure.message}"
    return f"{h.host}: {h.status}"


def _summary_rows(result) -> list[list[str]]:
    rows = []
    for h in result.inventory.hosts:
        out = result.outcome.hosts.get(h.name)
        if out is None:
            rows.append([h.name, "not run", "", "", "", "", "not matched by --limit"])
            continue
        notes = []
        if out.unreachable:
            notes.append(f"unreachable: {out.why_unreachable}")
            notes.append("nothing after this ran on the host")
        elif out.failure is not None:
            f = out.failure
            notes.append(f"failed at {f.role or '-'} / {f.task}: {f.message}")
            notes.append("roles before it were applied; later tasks did not run on this host")
        else:
            changes = "would change" if result.run.check else "changes"
            notes.append("all selected roles ran" + (f", {out.changed} {changes}" if out.changed else ", no changes"))
        notes += [f"{role or '-'}: skipped: {reason}" for role, reason in out.skips]
        rows.append([h.name, out.status.upper() if out.status in ("failed", "unreachable") else out.status,
                     out.ok, out.changed, out.skipped, out.failed + (1 if out.unreachable else 0), "\n".join(notes)])
    return rows


def _print_readiness(readiness) -> None:
    from tabulate import tabulate

    rows = [[c.host, c.name, c.status.upper() if c.status == "fail" else c.status, c.message]
            for c in readiness.checks]
    print(tabulate(rows, headers=["host", "check", "status", "message"], maxcolwidths=[None, None, None, 90]))


def cmd_prepare(args: argparse.Namespace) -> int:
    import json

    from tabulate import tabulate

    from repro.errors import HostError, InputError
    from repro.hosts.prepare import parse_extra_vars, parse_tags
    from repro.pipeline.prepare import prepare

    if args.check_only and (args.tags or args.check):
        raise InputError("--check-only runs only the facts playbook; it takes no --tags or --check")
    tags = parse_tags(args.tags)
    extra = parse_extra_vars(args.extra_var)
    stack = None
    if args.stack:
        from repro.manifest import load_stack

        stack = load_stack(args.stack)
    mode = "check-only" if args.check_only else ("check mode" if args.check else "apply")
    if not args.dry_run:
        print(f"repro prepare ({mode}): {args.hosts}" + (f", stack {stack.stack.name}" if stack else ""), flush=True)
    result = prepare(args.hosts, stack=stack, tags=tags, check=args.check, check_only=args.check_only,
                     store_root=args.store, dry_run=args.dry_run, limit=args.limit, extra_vars=extra,
                     progress=_progress(args.verbose), runtime=args.runtime)
    if args.dry_run:
        import shlex

        from repro.secrets import redact_tree

        run = result.run
        print(f"# hosts: {', '.join(h.name for h in result.inventory.hosts)}")
        print(f"# run in {run.playbook_path.parent} with:")
        for key, value in sorted(run.env().items()):
            print(f"export {key}={shlex.quote(value)}")
        print(shlex.join(run.argv()))
        print("# variables (-e):")
        print(json.dumps(redact_tree(run.variables()), indent=2, sort_keys=True))
        return 0

    outcome = result.outcome
    if not args.check_only:
        print()
        print(tabulate(_summary_rows(result), headers=["host", "result", "ok", "changed", "skipped", "failed", "notes"],
                       maxcolwidths=[None, None, None, None, None, None, 100]))
    if result.facts_paths:
        where = next(iter(result.facts_paths.values())).parent
        print(f"\nfacts of {len(result.facts_paths)} host(s) stored in {where}")
    if result.readiness is not None:
        if args.check_only:
            print(f"\nreadiness for the {result.runtime} runtime" + (f" (--runtime {result.runtime} chose it)"
                                                                     if args.runtime else
                                                                     " (what repro bench uses here; --runtime "
                                                                     "checks another)"))
            _print_readiness(result.readiness)
        else:
            fails = len(result.readiness.failed)
            warns = sum(1 for c in result.readiness.checks if c.status == "warn")
            print(f"readiness: {fails} failed, {warns} warnings (details: repro prepare --check-only --hosts "
                  f"{args.hosts}{' --stack ' + args.stack if args.stack else ''})")
    if result.data_dir:
        print(f"ansible-runner artifacts: {outcome.artifact_dir or result.data_dir}")
    bad = outcome.failed_hosts
    if bad:
        what = "; ".join(_failure_text(h) for h in bad)
        raise HostError(f"prepare {mode} failed on {len(bad)} of {len(result.inventory.hosts)} hosts: {what}",
                        host=bad[0].host)
    if outcome.rc != 0:
        raise HostError(f"ansible-playbook exited with status {outcome.rc} ({outcome.status}):\n"
                        f"{outcome.output_tail() or '(no output)'}\nsee {outcome.artifact_dir or result.data_dir}")
    if args.check_only and result.readiness is not None and not result.readiness.ok:
        hosts = sorted({c.host for c in result.readiness.failed})
        raise HostError(f"not ready: {', '.join(hosts)} ({len(result.readiness.failed)} failed checks)",
                        host=hosts[0])
    verb = "checked" if args.check_only or args.check else "prepared"
    print(f"done: {len(result.inventory.hosts)} host(s) {verb}", file=sys.stderr)
    return 0
