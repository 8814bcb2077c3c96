"""Base OS images without a registry: debootstrap a Debian root filesystem once, import it anywhere.

No image can be pulled on an air-gapped site (or on this project's CI machines), so the base image
stacks build `FROM` is made from Debian's archive: `debootstrap --variant=minbase SUITE ROOTFS
MIRROR`, packed into a tarball cached under `${XDG_CACHE_HOME:-~/.cache}/repro/base/` (built once per
machine and reused), then imported into a Docker engine as `debian:12`. `load_into` copies the
imported image into further engines (save -> load stream), so every host holds the same image id.
The recipes are repro.image.base_recipe's; building and caching the tarball, repro.image.rootfs.

    python -m repro.image.base debian:12 [--docker-host URL ...]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from repro.errors import ImageError, ReproError
from repro.image.base_recipe import DEFAULT_REF, recipe_for
from repro.image.engine import engine
from repro.image.engine import image_id as lookup_image
from repro.image.rootfs import ensure_rootfs_tarball, read_digest

if TYPE_CHECKING:  # the docker SDK is imported only when an engine is used
    import docker

log = logging.getLogger(__name__)


def ensure_base_image(ref: str = DEFAULT_REF, docker_host: str | None = None, *, mirror: str | None = None) -> str:
    """Return the id of image `ref` in the engine, importing it from a debootstrap tarball if absent."""
    client = engine(docker_host)
    try:
        existing = lookup_image(client, ref)
        if existing:
            log.info("base %s: already in engine %s (%s)", ref, _engine_name(docker_host), existing)
            return existing
        recipe = recipe_for(ref, mirror=mirror)
        tarball, _ = ensure_rootfs_tarball(recipe)
        digest = read_digest(tarball)
        started = time.monotonic()
        try:
            client.api.import_image(
                src=str(tarball), repository=recipe.repository, tag=recipe.tag,
                changes=recipe.import_changes(digest),
            )
        except Exception as exc:  # docker.errors.* and connection errors alike
            raise ImageError(f"importing {tarball} as {ref} into {_engine_name(docker_host)} failed: {exc}") from exc
        image_id = lookup_image(client, ref)
        if not image_id:
            raise ImageError(f"engine {_engine_name(docker_host)} accepted the import of {ref} but does not list it")
        log.info("base %s: imported into %s in %.1f s (%s)", ref, _engine_name(docker_host),
                 time.monotonic() - started, image_id)
        return image_id
    finally:
        client.close()


def load_into(ref: str, docker_hosts: Sequence[str], source_host: str | None = None) -> dict[str, str]:
    """Copy image `ref` from the source engine into each engine of `docker_hosts`; return host -> id."""
    source = engine(source_host)
    try:
        source_id = lookup_image(source, ref)
        if not source_id:
            raise ImageError(f"image {ref} is not in the source engine {_engine_name(source_host)}",
                             hint="run ensure_base_image (python -m repro.image.base) on it first")
        loaded: dict[str, str] = {}
        for host in docker_hosts:
            loaded[host] = _load_one(source, source_id, ref, host)
        return loaded
    finally:
        source.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ensure `ref` in the first engine, then copy it into the others."""
    parser = argparse.ArgumentParser(prog="python -m repro.image.base", description=main.__doc__)
    parser.add_argument("ref", nargs="?", default=DEFAULT_REF, help="image reference (default %(default)s)")
    parser.add_argument("--docker-host", action="append", default=[], metavar="URL",
                        help="engine to hold the image (repeatable; default: DOCKER_HOST or the local engine)")
    parser.add_argument("--mirror", default=None, help="archive for debootstrap (default: the distribution's)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    hosts: list[str | None] = list(args.docker_host) or [None]
    # This is a command-line edge like repro.cli: it turns repro's errors into an exit status.
    try:
        first = hosts[0]
        ids = {first: ensure_base_image(args.ref, first, mirror=args.mirror)}
        rest = [h for h in hosts[1:] if h]
        ids.update(load_into(args.ref, rest, source_host=first))
    except ReproError as exc:
        print(exc.render(), file=sys.stderr)
        return exc.exit_code
    for host, image_id in ids.items():
        print(f"{host or 'default'} {image_id}")
    return 0


# -- engines -------------------------------------------------------------------------------------


def _load_one(source: docker.DockerClient, source_id: str, ref: str, host: str) -> str:
    target = engine(host)
    try:
        if lookup_image(target, ref) == source_id:
            log.info("base %s: already in engine %s (%s)", ref, host, source_id)
            return source_id
        started = time.monotonic()
        try:
            for message in target.api.load_image(source.api.get_image(ref)):
                _raise_on_error(message, ref, host)
        except ImageError:
            raise
        except Exception as exc:  # docker.errors.* and broken streams alike
            raise ImageError(f"copying {ref} into engine {host} failed: {exc}") from exc
        loaded = lookup_image(target, ref)
        if loaded != source_id:
            raise ImageError(f"engine {host} holds {ref} as {loaded} after loading, expected {source_id}")
        log.info("base %s: loaded into %s in %.1f s", ref, host, time.monotonic() - started)
        return source_id
    finally:
        target.close()


def _raise_on_error(message: Any, ref: str, host: str) -> None:
    if isinstance(message, dict) and message.get("error"):
        raise ImageError(f"engine {host} refused {ref}: {message['error']}")


def _engine_name(docker_host: str | None) -> str:
    return docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


if __name__ == "__main__":
    sys.exit(main())
