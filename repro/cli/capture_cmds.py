"""`repro capture`: write the stack manifest of the software this host (or an image) has now."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from repro.inputs import path_argument

if TYPE_CHECKING:  # the pipeline's result type, for annotations only
    from repro.pipeline.capture import CaptureResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="write the stack manifest of this host's (or an image's) software",
                       description="Probe the software this host's Python (or an image) has now: the framework "
                       "(TensorFlow or PyTorch with its CUDA, cuDNN, NCCL and distributed backends), Horovod, MPI, "
                       "the OS and the NVIDIA driver, and write it as a stack manifest that `repro validate` "
                       "accepts, to benchmark the stack you are on and compare against it.")
    p.add_argument("--python", default=sys.executable, type=path_argument, metavar="PATH",
                   help="the interpreter whose packages to capture (default: the one running repro)")
    p.add_argument("--image", metavar="TAG", help="capture a Docker image's software instead of this host's")
    p.add_argument("--docker-host", metavar="URL", help="the Docker engine holding --image")
    from repro.pipeline.choices import capture_frameworks

    p.add_argument("--framework", choices=capture_frameworks(),
                   help="the framework of the stack when both are installed")
    p.add_argument("--os", metavar="DISTRO:VERSION", help="the image's OS when this host's is not one repro "
                   "builds (e.g. ubuntu:24.04)")
    p.add_argument("--name", help="stack name (default: the host name or the image's name)")
    p.add_argument("--output", "-o", type=path_argument, metavar="FILE",
                   help="write the manifest to FILE (default: print it)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    from repro.formats import FORMATS

    p.add_argument("--format", choices=FORMATS.names(), default="table",
                   help="output format: table (the manifest, unless --output), markdown, csv or json (the name, "
                   "hash, manifest and findings; docs/design.md)")
    p.set_defaults(handler=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> int:
    from repro.cli.output import tree_text, write
    from repro.pipeline.capture import capture_here

    result = capture_here(python=args.python, image=args.image, docker_host=args.docker_host,
                          framework=args.framework, os=args.os, name=args.name, output=args.output, force=args.force)
    # on a terminal the manifest itself, unless it went to --output
    write(tree_text(_data(result), args.format, terminal=result.text if result.output is None else ""))
    counts = result.counts()
    for f in result.findings:
        if f.severity != "note":
            print(f.render(), file=sys.stderr)
    print(f"captured stack {result.name} (hash {result.hash}) to {result.output or 'stdout'}: {counts['error']} "
          f"errors, {counts['warning']} warnings, {counts['note']} notes", file=sys.stderr)
    return 2 if counts["error"] else 0


def _data(result: CaptureResult) -> dict:
    """`repro capture --format json`: the stack's name and hash, where it went, the manifest and the findings."""
    return {"name": result.name, "hash": result.hash, "output": None if result.output is None else str(result.output),
            "manifest": result.text, "counts": result.counts(), "findings": [f.as_dict() for f in result.findings]}
