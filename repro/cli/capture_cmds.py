"""`repro capture`: write the stack manifest of the software this host (or an image) has now."""

from __future__ import annotations

import argparse
import sys

from repro.inputs import path_argument


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
    p.add_argument("--framework", choices=("tensorflow", "pytorch"),
                   help="the framework of the stack when both are installed")
    p.add_argument("--os", metavar="DISTRO:VERSION", help="the image's OS when this host's is not one repro "
                   "builds (e.g. ubuntu:24.04)")
    p.add_argument("--name", help="stack name (default: the host name or the image's name)")
    p.add_argument("--output", "-o", type=path_argument, metavar="FILE",
                   help="write the manifest to FILE (default: print it)")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.set_defaults(handler=cmd_capture)


def cmd_capture(args: argparse.Namespace) -> int:
    from pathlib import Path

    from repro.errors import InputError
    from repro.pipeline.capture import capture_here

    out = Path(args.output) if args.output else None
    if out is not None and out.exists() and not args.force:
        raise InputError(f"{out} exists", hint="choose another --output, or --force to overwrite it")
    name = args.name
    result = capture_here(python=args.python, image=args.image, docker_host=args.docker_host,
                          framework=args.framework, os=args.os, name=name, output=out)
    if out is None:
        print(result.text, end="")
    counts = {s: sum(1 for f in result.findings if f.severity == s) for s in ("error", "warning", "note")}
    for f in result.findings:
        if f.severity != "note":
            print(f.render(), file=sys.stderr)
    where = out or "stdout"
    print(f"captured stack {result.name} (hash {result.hash}) to {where}: {counts['error']} errors, "
          f"{counts['warning']} warnings, {counts['note']} notes", file=sys.stderr)
    return 2 if counts["error"] else 0
