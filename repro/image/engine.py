"""The Docker engine adapter shared by base images, builds and shipping: connect, look an image up."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from repro.errors import BackendUnavailable, ImageError
from repro.extras import need

if TYPE_CHECKING:
    import docker

ENGINE_TIMEOUT_S = 3600  # a silent build step (a long compile) must not look like a dead engine


def engine(docker_host: str | None = None) -> docker.DockerClient:
    """A Docker SDK client for the engine; BackendUnavailable when none answers."""
    docker = need("docker", "images", "talking to a Docker engine")
    where = docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        if docker_host:
            client = docker.DockerClient(base_url=docker_host, version="auto", timeout=ENGINE_TIMEOUT_S)
        else:
            client = docker.from_env(version="auto", timeout=ENGINE_TIMEOUT_S)
        client.ping()
        return client
    except Exception as exc:  # DockerException, requests' ConnectionError: both mean "no engine"
        raise BackendUnavailable(
            f"no Docker engine answers at {where} ({str(exc).splitlines()[0][:200]})",
            hint="start one: `tests/cluster/local-docker.sh ensure` (or `dockerd --iptables=false "
            "--bridge=none &`, or `systemctl start docker`), or point --docker-host/DOCKER_HOST at one") from None


def image_id(client: docker.DockerClient, ref: str) -> str | None:
    """The id of image `ref` in the engine, or None."""
    import docker

    try:
        return str(client.images.get(ref).id)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:
        raise BackendUnavailable(f"cannot query image {ref} in the Docker engine: {exc}") from None


class EngineSource:
    """The local engine as the source of shipped images (repro.hosts.ship.ImageSource)."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client

    def save(self, tag: str) -> Iterator[bytes]:
        return self.client.api.get_image(tag, chunk_size=1 << 20)

    def push(self, tag: str, registry: str) -> str:
        repository, _, key = tag.rpartition(":")
        target = f"{registry.rstrip('/')}/{repository}"
        self.client.api.tag(tag, target, key)
        for message in self.client.api.push(target, tag=key, stream=True, decode=True):
            if isinstance(message, dict) and message.get("error"):
                raise ImageError(f"pushing {tag} to {registry} failed: {message['error']}")
        return f"{target}:{key}"
