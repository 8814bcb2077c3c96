"""`repro init [DIR]`: example stacks and a localhost inventory to start from (from an installed repro too)."""

from __future__ import annotations

import argparse

from repro.inputs import path_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="write example stacks and a localhost inventory to start from",
                       description="Copy repro's example stack manifests (stacks/) and the inventory of this machine "
                       "(inventories/localhost) into DIR, to edit and use with validate, up, bench.")
    p.add_argument("directory", nargs="?", default=".", type=path_argument, metavar="DIR",
                   help="where to write them (default: the current directory)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.set_defaults(handler=cmd_init)


def cmd_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from repro.resources import copy_examples

    written = copy_examples(Path(args.directory), force=args.force)
    stacks = sorted({p.parent for p in written if p.suffix == ".yaml" and p.parent.name == "stacks"})
    print(f"wrote {len(written)} files into {args.directory}")
    for folder in stacks:
        print(f"  {folder}/: {len([p for p in written if p.parent == folder])} example stacks")
    print(f"  {Path(args.directory) / 'inventories' / 'localhost'}/: this machine as an inventory")
    print("next: repro validate stacks/   then   repro bench --stack stacks/cpu-tf215.yaml")
    return 0
