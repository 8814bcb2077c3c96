"""Put a built image on every host: skip hosts that hold the same image id, else push/pull through the
host's registry (`repro_registry`), else stream `docker save` over SSH into `docker -H <docker_host> load`.

Every host gets a result (shipped / already there / failed: reason); one unreachable host never stops
the others.
"""

from __future__ import annotations

import shlex
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from repro.errors import HostError, ReproError
from repro.hosts.inventory import Host
from repro.hosts.remote import Remote, docker_argv
from repro.progress import Lines, silent


class ImageSource(Protocol):
    """Where shipped images come from: the local engine (repro.image.engine.EngineSource)."""

    def save(self, tag: str) -> Iterator[bytes]:
        """`docker save TAG` as a stream of chunks."""
        ...

    def push(self, tag: str, registry: str) -> str:
        """Push TAG to `registry`; the reference hosts pull."""
        ...


SHIPPED, ALREADY, FAILED = "shipped", "already there", "failed"
LOAD_TIMEOUT_S = 3600
INSPECT_TIMEOUT_S = 60


@dataclass(frozen=True)
class ShipResult:
    """What happened on one host."""

    host: str
    status: str  # shipped | already there | failed
    method: str
    seconds: float = 0.0
    bytes: int = 0
    detail: str = ""

    def render(self) -> str:
        text = f"{self.host}: {self.status}"
        if self.status == SHIPPED:
            text += f" ({self.method}, {self.bytes / (1 << 20):.0f} MiB in {self.seconds:.1f} s)"
        elif self.status == FAILED:
            text += f": {self.detail}"
        return text


def method(host: Host) -> str:
    """How an image would reach this host (a shell-safe line: every value quoted)."""
    if host.registry:
        return f"push/pull through {shlex.quote(host.registry)}"
    load = shlex.join(["docker", "-H", host.docker_host, "load"])
    if host.local:
        return f"docker save | {load}"
    # the remote shell reads the command again: quote it once more as ssh's one argument
    return f"docker save | {shlex.join(['ssh', '--', host.name, load])}"


def describe(tag: str, hosts: Sequence[Host]) -> str:
    """The dry-run text: what would be shipped where."""
    lines = [f"ship {tag} to {len(hosts)} host{'s' if len(hosts) != 1 else ''} (skipped where the same image id "
             "is there already):"]
    lines += [f"  {h.name} ({h.address}): {method(h)}" for h in hosts]
    return "\n".join(lines)


def remote_image_id(remote: Remote, ref: str) -> str | None:
    """The id of `ref` in the host's engine, or None; HostError when the engine does not answer."""
    host = remote.host
    res = remote.run(docker_argv(host, "image", "inspect", "--format", "{{.Id}}", ref), timeout=INSPECT_TIMEOUT_S)
    if res.ok:
        return res.stdout.strip() or None
    if "no such" in (res.stderr + res.stdout).lower():
        return None
    raise HostError(f"{host.name}: the Docker engine {host.docker_host} does not answer: {res.tail(3)}",
                    host=host.name)


class _Counted:
    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks:
            if chunk:
                self.bytes += len(chunk)
                yield chunk


def _save_load(source: ImageSource, remote: Remote, tag: str) -> int:
    stream = _Counted(source.save(tag))
    res = remote.run(docker_argv(remote.host, "load"), input=iter(stream), timeout=LOAD_TIMEOUT_S)
    if not res.ok:
        raise HostError(f"{remote.host.name}: docker load failed: {res.tail(5)}", host=remote.host.name)
    return stream.bytes


def _pull(remote: Remote, ref: str, tag: str) -> None:
    host = remote.host
    for argv in (docker_argv(host, "pull", ref), docker_argv(host, "tag", ref, tag)):
        res = remote.run(argv, timeout=LOAD_TIMEOUT_S)
        if not res.ok:
            raise HostError(f"{host.name}: `{shlex.join(argv[3:])}` failed: {res.tail(5)}", host=host.name)


def _ship_one(source: ImageSource, host: Host, tag: str, image_id: str, push: Callable[[str], str],
              progress: Lines) -> ShipResult:
    how = method(host)
    t0 = time.monotonic()
    try:
        with Remote(host) as remote:
            if remote_image_id(remote, tag) == image_id:
                return ShipResult(host.name, ALREADY, how, time.monotonic() - t0)
            progress(f"{host.name}: shipping {tag} ({how})")
            size = 0
            if host.registry:
                _pull(remote, push(host.registry), tag)
            else:
                size = _save_load(source, remote, tag)
            after = remote_image_id(remote, tag)
            if after != image_id:
                raise HostError(f"{host.name}: after shipping, {tag} is {after or 'absent'} there, "
                                f"expected {image_id}", host=host.name)
            return ShipResult(host.name, SHIPPED, how, time.monotonic() - t0, size)
    except ReproError as exc:
        return ShipResult(host.name, FAILED, how, time.monotonic() - t0,
                          detail=exc.message.removeprefix(f"{host.name}: "))
    except Exception as exc:  # a broken save stream or registry connection: still only this host
        return ShipResult(host.name, FAILED, how, time.monotonic() - t0, detail=str(exc) or type(exc).__name__)


def ship(tag: str, image_id: str, hosts: Sequence[Host], *, source: ImageSource,
         progress: Lines = silent, parallel: int = 4) -> tuple[ShipResult, ...]:
    """Put image `tag` (id `image_id`, from `source`) on every host, `parallel` at a time; a result each."""
    pushed: dict[str, str] = {}
    guard = threading.Lock()

    def push(registry: str) -> str:
        with guard:  # one push per registry, whichever host needs it first
            if registry not in pushed:
                pushed[registry] = source.push(tag, registry)
            return pushed[registry]

    def one(host: Host) -> ShipResult:
        result = _ship_one(source, host, tag, image_id, push, progress)
        progress(result.render())
        return result

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(hosts)))) as pool:
        return tuple(pool.map(one, hosts))
