"""End-of-life nvidia/cuda bases, rebuilt: repro's own recipe from sourced facts (pure).

NVIDIA deletes end-of-life `nvidia/cuda` tags from Docker Hub, and in 2022 rotated the signing key of
its CUDA apt repositories, which broke every old recipe left unchanged. When a stack's base image is
end of life (compat.yaml's `cuda_image_eol`) and docker/cuda_bases.yaml has a row for it,
the stack builds FROM `repro/cuda-base:<nvidia tag>-<key>` instead, made by this recipe:

    FROM <os image>  ->  tools  ->  CUDA and machine-learning repositories (keys fetched, fingerprints
    checked, signed-by keyrings)  ->  base, runtime, devel and cuDNN packages at the stack's exact pins

The recipe's key digests everything in it, so a change of the facts or of the stack's pins gives a new
base tag (and so a new stack image). Building it needs NVIDIA's servers; see docs/design.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

import yaml

from repro.image.blocks import formats, own, safe
from repro.image.blocks.stack import cudnn_package_version, nccl_package_version
from repro.manifest.compat import table
from repro.manifest.schema import Stack
from repro.manifest.versions import in_any_line, major_minor
from repro.resources import data_dir

REPOSITORY = "repro/cuda-base"
NVIDIA = "nvidia/cuda:"
_ENV_VALUE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ,.=<>:/$_-")


@functools.lru_cache(maxsize=1)
def facts() -> dict[str, Any]:
    """The shipped rebuild facts (docker/cuda_bases.yaml)."""
    text = (data_dir("docker") / "cuda_bases.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


@dataclass(frozen=True)
class Repository:
    """One apt repository of the recipe with its pinned key."""

    name: str
    url: str
    key_url: str
    fingerprint: str
    keyring: str


@dataclass(frozen=True)
class CudaBaseRecipe:
    """How repro rebuilds one end-of-life nvidia/cuda image for one stack's pins."""

    name: str
    replaces: str  # the deleted tag, e.g. nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04
    os_image: str
    os_distro: str
    os_version: str
    cuda_version: str
    nccl: str  # package versions, e.g. 2.5.6-1+cuda10.0
    cudnn: str
    repositories: tuple[Repository, ...]
    tools: tuple[str, ...]
    packages: tuple[tuple[str, tuple[str, ...]], ...]  # (group, packages) in install order
    hold: tuple[str, ...]
    cuda_link: str
    env: tuple[tuple[str, str], ...]
    source: str
    eol_path: str

    @property
    def key(self) -> str:
        """Digest of everything in the recipe (12 hex digits)."""
        payload = json.dumps(self.__dict__, default=lambda r: r.__dict__, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    @property
    def tag(self) -> str:
        """The image reference the rebuilt base gets: repro/cuda-base:<nvidia tag>-<key>."""
        return f"{REPOSITORY}:{self.replaces.removeprefix(NVIDIA)}-{self.key}"

    def lock_entry(self) -> dict[str, Any]:
        """What the lock records about a rebuilt base."""
        return {"rebuilt": True, "recipe": self.name, "recipe_key": self.key, "tag": self.tag,
                "replaces": self.replaces, "os_image": self.os_image, "eol_path": self.eol_path,
                "source": self.source, "cuda": self.cuda_version, "nccl": self.nccl, "cudnn": self.cudnn,
                "keys": {r.name: r.fingerprint for r in self.repositories}}

    def blocks(self) -> list[tuple[str, object]]:
        """(name, block) for each step, in order (inside formats.settings)."""
        from hpccm.building_blocks import apt_get
        from hpccm.primitives import baseimage, environment, label, shell

        distro = formats.hpccm_distro(self.os_distro, self.os_version)
        out: list[tuple[str, object]] = [
            ("base", baseimage(image=self.os_image, _distro=distro, _arch="x86_64")),
            ("labels", label(metadata={"org.repro.base.recipe": self.name, "org.repro.base.key": self.key,
                                       "org.repro.base.replaces": self.replaces})),
            ("tools", [own.bash_pipefail(), apt_get(ospackages=list(self.tools))]),
        ]
        out += [(f"repository {r.name}", own.SignedAptRepository(
            name=r.name, url=r.url, key_url=r.key_url, fingerprint=r.fingerprint, keyring=r.keyring))
            for r in self.repositories]
        out.append(("environment", environment(variables={k: f'"{v}"' if " " in v else v for k, v in self.env})))
        for group, packages in self.packages:
            steps: list[object] = [own.note(f"CUDA {self.cuda_version} {group} packages"),
                                   apt_get(ospackages=list(packages))]
            if group == "base":
                steps.append(shell(commands=[f"ln -s {self.cuda_link} /usr/local/cuda",
                                             'echo "/usr/local/nvidia/lib" >> /etc/ld.so.conf.d/nvidia.conf',
                                             'echo "/usr/local/nvidia/lib64" >> /etc/ld.so.conf.d/nvidia.conf']))
            out.append((f"{group} packages", steps))
        out.append(("hold", shell(commands=[f"apt-mark hold {' '.join(self.hold)}"])))
        return out

    def render(self, fmt: str = formats.DOCKER) -> str:
        """The recipe as a Dockerfile (or Apptainer definition)."""
        with formats.settings(fmt, formats.hpccm_distro(self.os_distro, self.os_version)):
            parts = self.blocks()
            header = [f"# Rebuilt base {self.tag}, by repro, for the end-of-life {self.replaces}.",
                      f"# Recipe {self.name} (key {self.key}): repro's own, from the facts in",
                      "# docker/cuda_bases.yaml; NVIDIA's retired recipe lives under",
                      f"# {self.eol_path}. The 2022 key rotation is applied: each repository's key is",
                      "# checked against its pinned fingerprint and named by signed-by.",
                      f"# Steps: {', '.join(name for name, _ in parts)}."]
            return "\n".join(header) + "\n\n" + formats.join([b for _, b in parts])

    def describe(self) -> str:
        """The dry-run summary: what is rebuilt, from what, with which pins."""
        lines = [f"rebuilt base: {self.tag}",
                 f"  replaces {self.replaces} (end of life: deleted from Docker Hub)",
                 f"  recipe {self.name} (key {self.key}) FROM {self.os_image}; NVIDIA's retired recipe: "
                 f"{self.eol_path}",
                 f"  CUDA {self.cuda_version}, NCCL {self.nccl}, cuDNN {self.cudnn}"]
        lines += [f"  repository {r.url} signed by {r.fingerprint}" for r in self.repositories]
        return "\n".join(lines)


def is_end_of_life(stack: Stack) -> bool:
    """Whether the stack's base is an nvidia/cuda tag of an end-of-life CUDA release."""
    base = stack.base_image or ""
    return bool(stack.cuda and base.startswith(NVIDIA) and in_any_line(stack.cuda, table()["cuda_image_eol"]["cuda"]))


def recipe_for_stack(stack: Stack) -> CudaBaseRecipe | None:
    """The rebuild recipe for the stack's end-of-life base, or None (not end of life, or no recipe row)."""
    if not is_end_of_life(stack):
        return None
    tag = (stack.base_image or "").removeprefix(NVIDIA)
    row = next((r for r in facts()["recipes"] if r["tag"] == tag and r["cuda"] == major_minor(stack.cuda or "")), None)
    return _recipe(row, stack) if row else None


def _recipe(row: dict[str, Any], stack: Stack) -> CudaBaseRecipe:
    cuda = row["cuda_version"]
    nccl = nccl_package_version(stack.nccl or row["nvidia_nccl"], cuda)
    cudnn = cudnn_package_version(stack.cudnn or row["nvidia_cudnn"], cuda)
    values = {"cuda_pkg": row["cuda_pkg"], "cuda_version": cuda, "nccl": nccl, "cudnn": cudnn}
    packages = tuple((group, tuple(safe.apt_package(p.format(**values), f"{row['name']} {group}") for p in items))
                     for group, items in row["packages"].items())
    os_distro, _, os_version = row["os_image"].partition(":")
    return CudaBaseRecipe(
        name=row["name"], replaces=NVIDIA + row["tag"], os_image=safe.image_reference(row["os_image"], "os_image"),
        os_distro=os_distro, os_version=os_version, cuda_version=cuda, nccl=nccl, cudnn=cudnn,
        repositories=tuple(_repository(name, row["repo_os"]) for name in row["repositories"]),
        tools=tuple(safe.apt_package(t, "tools") for t in row["tools"]), packages=packages,
        hold=tuple(safe.apt_package(h, "hold") for h in row["hold"]),
        cuda_link=safe.file_name(row["cuda_link"], "link"),
        env=tuple((k, _env_value(k, str(v))) for k, v in row["env"].items()),
        source=facts()["sources"][row["source"]], eol_path=row["eol_path"])


def _repository(name: str, repo_os: str) -> Repository:
    repo = facts()["repositories"][name]
    key = facts()["keys"][repo["key"]]
    url = repo["url"].format(os=repo_os)
    return Repository(name=name, url=url, key_url=f"{url}/{key['file']}", fingerprint=key["fingerprint"],
                      keyring=key["keyring"])


def _env_value(name: str, value: str) -> str:
    if not set(value) <= _ENV_VALUE:
        raise safe._refuse(f"env {name}", value, "an environment value without quotes or shell characters")
    return value
