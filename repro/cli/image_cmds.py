"""Commands on stack images: up (build, verify, lock, ship), render, base-image, archive, restore."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from repro import inputs
from repro.inputs import argument, key_value_argument, path_argument


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
    p.set_defaults(handler=cmd_base_image)

    p = sub.add_parser("archive", help="write a stack's built image, lock, manifest and recipe into one file",
                       description="Save the image `repro up` locked for STACK (docker save), its lock, the resolved "
                       "manifest and the rendered recipe into one archive with a sha256 per member.")
    p.add_argument("stack", metavar="STACK", help="stack manifest")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="archive to write")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    p.add_argument("--docker-host", metavar="URL", default=None, help="Docker engine holding the image")
    p.set_defaults(handler=cmd_archive)

    p = sub.add_parser("restore", help="load an archive's image into an engine and its lock into a store",
                       description="Check every member of FILE against its manifest, load the image, verify its id "
                       "and contents against the lock, and put the lock and the stack manifest into the store: "
                       "`repro bench` then runs from the image with no build and no network.")
    p.add_argument("archive", metavar="FILE", help="archive written by `repro archive`")
    p.add_argument("--store", metavar="DIR", default=None,
                   help="results store (default: $REPRO_STORE, [site] store in repro.toml, or ./results)")
    p.add_argument("--docker-host", metavar="URL", default=None, help="Docker engine to load the image into")
    p.set_defaults(handler=cmd_restore)


def _options(args: argparse.Namespace):
    from repro.image.build import BuildOptions, default_ca_bundle

    ca = None if args.no_ca_bundle else (Path(args.ca_bundle) if args.ca_bundle else default_ca_bundle())
    return BuildOptions(
        ca_bundle=ca, pip_index=args.pip_index, extra_index=args.extra_index,
        wheelhouse=Path(args.wheelhouse) if args.wheelhouse else None, build_args=tuple(args.build_arg),
        ofed_url=args.ofed_url, ofed_mirror=args.ofed_mirror,
        ofed_tarball=Path(args.ofed_tarball) if args.ofed_tarball else None, docker_host=args.docker_host)


def _validated(path: str):
    """Load the stack; compatibility errors stop here (the one gate policy), warnings are printed."""
    from repro.manifest import load_stack
    from repro.pipeline.gate import admit

    loaded = load_stack(path)
    admit(loaded, action="built", show=lambda text: print(text, file=sys.stderr))
    return loaded


def _write_apptainer(target: Path, loaded, plan) -> None:
    from repro.image.render import render_apptainer

    target.parent.mkdir(parents=True, exist_ok=True)
    for f in plan.files:
        dest = target.parent / f.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read())
    target.write_text(render_apptainer(loaded.stack, plan.options))
    print(f"wrote {target} (build it in {target.parent}: apptainer build IMAGE.sif {target.name})", file=sys.stderr)


def cmd_up(args: argparse.Namespace) -> int:
    from repro.errors import HostError
    from repro.hosts import ship
    from repro.hosts.inventory import load_inventory
    from repro.image.build import plan_build
    from repro.pipeline.up import up
    from repro.results.store import Store

    loaded = _validated(args.stack)
    options = _options(args)
    inventory = load_inventory(args.hosts) if args.hosts else None
    plan = plan_build(loaded, options)  # hashes the whole build context: once per command
    if args.dry_run:
        print(plan.describe())
        if inventory is not None:
            print()
            print(ship.describe(plan.tag, inventory.hosts))
        if args.apptainer:
            print(f"\nwould write the Apptainer definition to {args.apptainer}")
        print("\n(dry run: nothing was built, verified, locked or shipped)")
        return 0
    if args.apptainer:
        _write_apptainer(Path(args.apptainer), loaded, plan)

    def progress(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    result = up(loaded, store=Store(args.store), options=options, inventory=inventory, progress=progress, plan=plan)
    _summary(result)
    if result.failed_hosts:
        failed = result.failed_hosts
        raise HostError(f"the image did not reach {len(failed)} of {len(result.shipping)} hosts: "
                        f"{', '.join(failed)}", host=failed[0])
    return 0


def _summary(result) -> None:
    lock, o = result.lock, result.outcome
    v = lock.versions
    names = {**result.framework_titles, "mpi": "MPI", "gloo": "Gloo", "nccl": "NCCL"}
    flags = [k for k in names if lock.horovod_build.get(k)]
    how = f"built in {o.seconds:.0f} s" if o.built else "already built (no build)"
    print(f"stack {result.plan.stack} ({result.plan.stack_hash}): image {o.tag}")
    print(f"  id {o.image_id}, {how}, {'verified' if result.verified else 'verified earlier'}")
    print(f"  lock {result.lock_path}")
    found = ", ".join(f"{k} {v[k]}" for k in ("os", "python", *result.framework_keys, "horovod", "mpi", "cuda",
                                               "cudnn", "nccl", "ofed") if v.get(k))
    hvd = f"; Horovod built with {', '.join(names[f] for f in flags) or 'nothing'}" if v.get("horovod") else ""
    print(f"  found {found}{hvd}")
    print(f"  sshd on port {lock.sshd.port}, {len(lock.sshd.host_keys)} host keys in the lock")
    if result.shipping:
        print("hosts:")
        for r in result.shipping:
            print(f"  {r.render()}")


def cmd_render(args: argparse.Namespace) -> int:
    from repro.errors import InputError
    from repro.image import cuda_base
    from repro.image.blocks.formats import APPTAINER, DOCKER
    from repro.image.build import plan_build
    from repro.image.render import render_apptainer
    from repro.manifest import load_stack

    loaded = load_stack(args.stack)
    if args.base:
        recipe = cuda_base.recipe_for_stack(loaded.stack)
        if recipe is None:
            base = loaded.stack.base_image or "its distribution image"
            why = ("repro has no rebuild recipe for it (docker/cuda_bases.yaml)"
                   if cuda_base.is_end_of_life(loaded.stack) else "it is not an end-of-life nvidia/cuda image")
            raise InputError(f"stack {loaded.stack.name} builds FROM {base}, which repro does not rebuild: {why}")
        sys.stdout.write(recipe.render(APPTAINER if args.apptainer else DOCKER))
        return 0
    plan = plan_build(loaded, _options(args), check_inputs=False)
    from repro.secrets import redact_text

    text = render_apptainer(loaded.stack, plan.options) if args.apptainer else plan.dockerfile
    sys.stdout.write(redact_text(text))  # a token in a pip index URL is never printed
    return 0


def cmd_archive(args: argparse.Namespace) -> int:
    from repro.image.archive import write_archive
    from repro.manifest import load_stack
    from repro.results.store import Store

    loaded = load_stack(args.stack)
    result = write_archive(loaded, Store(args.store), Path(args.output), docker_host=args.docker_host,
                           progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(f"wrote {result.path} ({result.size / (1 << 20):.0f} MiB): stack {result.stack} ({result.stack_hash}), "
          f"image {result.tag} {result.image_id}")
    for name, member in result.members.items():
        print(f"  {name:<18} {member['size']:>12}  sha256:{member['sha256']}")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from repro.pipeline.restore import restore
    from repro.results.store import Store

    result = restore(Path(args.archive), Store(args.store), docker_host=args.docker_host,
                     progress=lambda line: print(line, file=sys.stderr, flush=True))
    how = "loaded" if result.loaded else "already in the engine"
    print(f"stack {result.stack} ({result.stack_hash}): image {result.tag} {result.image_id} {how}, verified "
          "against its lock")
    print(f"  lock {result.lock_path}")
    print(f"  stack manifest {result.stack_path} (use it with `repro bench --stack`)")
    return 0


def cmd_base_image(args: argparse.Namespace) -> int:
    import logging

    from repro.image.base import ensure_base_image, load_into

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    hosts = list(args.docker_host) or [None]
    ids = {hosts[0]: ensure_base_image(args.ref, hosts[0], mirror=args.mirror)}
    ids.update(load_into(args.ref, [h for h in hosts[1:] if h], source_host=hosts[0]))
    for host, image in ids.items():
        print(f"{args.ref} {image} {host or 'default engine'}")
    return 0
