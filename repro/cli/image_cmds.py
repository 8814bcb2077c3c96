"""Commands on stack images: up (build, verify, lock, ship), render, base-image, archive, restore."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from repro import inputs
from repro.cli.manifest_cmds import add_output_format
from repro.inputs import argument, key_value_argument, path_argument

if TYPE_CHECKING:
    from repro.pipeline.up import BuildOptions, UpDryRun, UpResult


def _build_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("build options (site settings, not part of the stack)")
    g.add_argument("--ca-bundle", metavar="FILE", default=None, type=path_argument,
                   help="CA bundle for pip/requests/curl inside the build, e.g. behind a TLS-intercepting proxy "
                   "(default: $PIP_CERT when set)")
    g.add_argument("--no-ca-bundle", action="store_true", help="do not use $PIP_CERT")
    g.add_argument("--pip-index", metavar="URL", type=argument(inputs.URL),
                   help="pip index inside the build (PIP_INDEX_URL)")
    g.add_argument("--extra-index", metavar="URL", type=argument(inputs.URL),
                   help="extra pip index inside the build (PIP_EXTRA_INDEX_URL)")
    g.add_argument("--wheelhouse", metavar="DIR", default=None, type=path_argument,
                   help="prebuilt wheels (its tf<TF>-py<XY> subdirectory when present; default "
                   "~/.cache/repro/wheelhouse)")
    g.add_argument("--build-arg", metavar="K=V", action="append", type=key_value_argument, default=[],
                   help="Docker build argument, e.g. OPENMPI_URL=http://mirror/openmpi-4.0.0.tar.bz2 (repeatable)")
    g.add_argument("--ofed-url", metavar="URL", type=argument(inputs.URL),
                   help="GPU stacks: URL of the MLNX_OFED tarball")
    g.add_argument("--ofed-mirror", metavar="URL", type=argument(inputs.URL),
                   help="GPU stacks: mirror of https://content.mellanox.com/ofed with the same layout")
    g.add_argument("--ofed-tarball", metavar="FILE", type=path_argument,
                   help="GPU stacks: a local MLNX_OFED tarball (goes into a layer)")
    g.add_argument("--docker-host", metavar="URL", default=None, type=argument(inputs.DOCKER_ENDPOINT),
                   help="Docker engine (default: DOCKER_HOST or local)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("up", help="build, verify and lock a stack's image; ship it to hosts",
                       description="Build the stack's image (skipped when the engine already holds its tag), "
                       "verify it against the stack, write the lock into the store, and with --hosts put the "
                       "image on every host of the inventory.")
    p.add_argument("stack", metavar="STACK", type=path_argument, help="stack manifest")
    p.add_argument("--hosts", metavar="INVENTORY", type=path_argument,
                   help="ship the image to the hosts of this Ansible inventory")
    p.add_argument("--dry-run", action="store_true",
                   help="print the tag, base image, Dockerfile, context files and shipping; do nothing")
    p.add_argument("--store", metavar="DIR", default=None, type=path_argument,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    p.add_argument("--apptainer", metavar="FILE", type=path_argument,
                   help="also write the Apptainer definition to FILE (its files next to it)")
    p.add_argument("--quiet", "-q", action="store_true", help="no build output, only the summary")
    _build_options(p)
    add_output_format(p, "the summary (table: text; the dry run too)", json_flag=False)
    p.set_defaults(handler=cmd_up)

    p = sub.add_parser("render", help="print a stack's Dockerfile (or Apptainer definition, or rebuilt base)",
                       description="Render the stack's recipe from its building blocks (HPC Container Maker's and "
                       "repro's own), as `repro up` would build it with these options.")
    p.add_argument("stack", metavar="STACK", type=path_argument, help="stack manifest")
    p.add_argument("--apptainer", action="store_true", help="the Apptainer/Singularity definition instead")
    p.add_argument("--base", action="store_true",
                   help="the recipe repro rebuilds the stack's end-of-life nvidia/cuda base image from")
    _build_options(p)
    p.set_defaults(handler=cmd_render)

    p = sub.add_parser("base-image", help="build a Debian or Ubuntu base image with debootstrap (no registry)",
                       description="Make image REF (debian:12 by default; debian:11, ubuntu:16.04 to 22.04) in the "
                       "engine with debootstrap when it is absent (cached), then copy it into every further "
                       "--docker-host. Ubuntu needs Debian's ubuntu-keyring package and a reachable Ubuntu mirror.")
    p.add_argument("ref", nargs="?", default="debian:12", metavar="REF", type=argument(inputs.IMAGE_REFERENCE))
    p.add_argument("--docker-host", metavar="URL", action="append", default=[], type=argument(inputs.DOCKER_ENDPOINT),
                   help="engine to hold the image (repeatable; default: DOCKER_HOST or the local engine)")
    p.add_argument("--mirror", default=None, type=argument(inputs.URL),
                   help="archive for debootstrap (default: the distribution's own)")
    add_output_format(p, "the image ids (table: one line per engine)", json_flag=False)
    p.set_defaults(handler=cmd_base_image)

    p = sub.add_parser("archive", help="write a stack's built image, lock, manifest and recipe into one file",
                       description="Save the image `repro up` locked for STACK (docker save), its lock, the resolved "
                       "manifest and the rendered recipe into one archive with a sha256 per member.")
    p.add_argument("stack", metavar="STACK", help="stack manifest")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="archive to write")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    p.add_argument("--docker-host", metavar="URL", default=None, help="Docker engine holding the image")
    add_output_format(p, "what was written (table: text)", json_flag=False)
    p.set_defaults(handler=cmd_archive)

    p = sub.add_parser("restore", help="load an archive's image into an engine and its lock into a store",
                       description="Check every member of FILE against its manifest, load the image, verify its id "
                       "and contents against the lock, and put the lock and the stack manifest into the store: "
                       "`repro bench` then runs from the image with no build and no network.")
    p.add_argument("archive", metavar="FILE", help="archive written by `repro archive`")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    p.add_argument("--docker-host", metavar="URL", default=None, help="Docker engine to load the image into")
    add_output_format(p, "what was restored (table: text)", json_flag=False)
    p.set_defaults(handler=cmd_restore)


def _options(args: argparse.Namespace) -> BuildOptions:
    """The site's build options as given (the pipeline adds $PIP_CERT's CA bundle unless --no-ca-bundle)."""
    from repro.pipeline.up import BuildOptions

    return BuildOptions(
        ca_bundle=None if args.no_ca_bundle or not args.ca_bundle else Path(args.ca_bundle),
        pip_index=args.pip_index, extra_index=args.extra_index,
        wheelhouse=Path(args.wheelhouse) if args.wheelhouse else None, build_args=tuple(args.build_arg),
        ofed_url=args.ofed_url, ofed_mirror=args.ofed_mirror,
        ofed_tarball=Path(args.ofed_tarball) if args.ofed_tarball else None, docker_host=args.docker_host)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace) -> int:
    from repro.cli.output import tree_text, write
    from repro.pipeline.up import UpDryRun, UpRequest, up_stack

    request = UpRequest(args.stack, hosts=args.hosts, store_root=args.store, options=_options(args),
                        pip_cert=not args.no_ca_bundle, apptainer=Path(args.apptainer) if args.apptainer else None,
                        dry_run=args.dry_run)
    result = up_stack(request, progress=_stderr if not args.quiet else lambda line: None, show=_stderr)
    if isinstance(result, UpDryRun):
        write(tree_text(_dry_run_data(result), args.format, terminal=result.describe()))
        return 0
    write(tree_text(_up_data(result), args.format, terminal=_summary(result)))
    failure = result.failure()
    if failure is not None:
        raise failure
    return 0


def _dry_run_data(dry: UpDryRun) -> dict:
    """`repro up --dry-run --format json`: what would be built and where it would go."""
    from repro.secrets import redact_argv, redact_text

    plan = dry.plan
    return {"dry_run": True, "stack": plan.stack, "stack_hash": plan.stack_hash, "image_hash": plan.image_hash,
            "tag": plan.tag, "base_image": plan.base_image,
            "rebuilt_base": plan.base_recipe.replaces if plan.base_recipe is not None else None,
            "context": [{"name": f.name, "size": f.size, "sha256": f.sha256} for f in plan.files],
            "build_args": redact_argv([f"{k}={v}" for k, v in plan.build_args]),
            "dockerfile": redact_text(plan.dockerfile),
            "hosts": [h.name for h in dry.inventory.hosts] if dry.inventory is not None else [],
            "apptainer": str(dry.apptainer) if dry.apptainer else None}


def _up_data(result: UpResult) -> dict:
    """`repro up --format json`: the image, its lock, the versions found and the shipping per host."""
    lock, o = result.lock, result.outcome
    names = {**result.framework_titles, "mpi": "MPI", "gloo": "Gloo", "nccl": "NCCL"}
    return {"stack": result.plan.stack, "stack_hash": result.plan.stack_hash, "tag": o.tag, "image_id": o.image_id,
            "built": o.built, "build_seconds": o.seconds if o.built else None, "verified": result.verified,
            "lock": result.lock_path, "versions": {k: v for k, v in lock.versions.items() if v},
            "horovod_built_with": [names[k] for k in names if lock.horovod_build.get(k)],
            "sshd_port": lock.sshd.port, "host_keys": len(lock.sshd.host_keys),
            "hosts": [{"host": r.host, "status": r.status, "method": r.method, "seconds": r.seconds,
                       "bytes": r.bytes, "detail": r.detail} for r in result.shipping]}


def _summary(result: UpResult) -> str:
    """The terminal summary of `repro up`."""
    lock, o = result.lock, result.outcome
    v = lock.versions
    names = {**result.framework_titles, "mpi": "MPI", "gloo": "Gloo", "nccl": "NCCL"}
    flags = [k for k in names if lock.horovod_build.get(k)]
    how = f"built in {o.seconds:.0f} s" if o.built else "already built (no build)"
    found = ", ".join(f"{k} {v[k]}" for k in ("os", "python", *result.framework_keys, "horovod", "mpi", "cuda",
                                               "cudnn", "nccl", "ofed") if v.get(k))
    hvd = f"; Horovod built with {', '.join(names[f] for f in flags) or 'nothing'}" if v.get("horovod") else ""
    lines = [f"stack {result.plan.stack} ({result.plan.stack_hash}): image {o.tag}",
             f"  id {o.image_id}, {how}, {'verified' if result.verified else 'verified earlier'}",
             f"  lock {result.lock_path}", f"  found {found}{hvd}",
             f"  sshd on port {lock.sshd.port}, {len(lock.sshd.host_keys)} host keys in the lock"]
    if result.shipping:
        lines += ["hosts:", *(f"  {r.render()}" for r in result.shipping)]
    return "\n".join(lines) + "\n"


def cmd_render(args: argparse.Namespace) -> int:
    from repro.pipeline.images import render_recipe

    sys.stdout.write(render_recipe(args.stack, _options(args), pip_cert=not args.no_ca_bundle,
                                   apptainer=args.apptainer, base=args.base))
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    from repro.cli.output import tree_text, write
    from repro.pipeline.images import archive_stack

    result = archive_stack(args.stack, Path(args.output), store_root=args.store, docker_host=args.docker_host,
                           progress=_stderr)
    data = {"path": str(result.path), "size": result.size, "stack": result.stack, "stack_hash": result.stack_hash,
            "tag": result.tag, "image_id": result.image_id, "members": result.members}
    lines = [f"wrote {result.path} ({result.size / (1 << 20):.0f} MiB): stack {result.stack} ({result.stack_hash}), "
             f"image {result.tag} {result.image_id}"]
    lines += [f"  {name:<18} {m['size']:>12}  sha256:{m['sha256']}" for name, m in result.members.items()]
    write(tree_text(data, args.format, terminal="\n".join(lines) + "\n"))
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from repro.cli.output import tree_text, write
    from repro.pipeline.restore import restore

    r = restore(Path(args.archive), args.store, docker_host=args.docker_host, progress=_stderr)
    data = {"stack": r.stack, "stack_hash": r.stack_hash, "tag": r.tag, "image_id": r.image_id, "loaded": r.loaded,
            "lock": str(r.lock_path), "stack_path": str(r.stack_path)}
    text = (f"stack {r.stack} ({r.stack_hash}): image {r.tag} {r.image_id} "
            f"{'loaded' if r.loaded else 'already in the engine'}, verified against its lock\n"
            f"  lock {r.lock_path}\n  stack manifest {r.stack_path} (use it with `repro bench --stack`)\n")
    write(tree_text(data, args.format, terminal=text))
    return 0


def cmd_base_image(args: argparse.Namespace) -> int:
    import logging

    from repro.cli.output import tree_text, write
    from repro.pipeline.images import base_images

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)  # debootstrap's progress
    result = base_images(args.ref, args.docker_host, mirror=args.mirror)
    data = [{"ref": result.ref, "image_id": image, "engine": host} for host, image in result.ids.items()]
    text = "".join(f"{result.ref} {image} {host or 'default engine'}\n" for host, image in result.ids.items())
    write(tree_text(data, args.format, terminal=text))
    return 0
