"""PyTorch: DistributedDataParallel over torch.distributed (gloo, nccl, mpi), started by torchrun."""

from __future__ import annotations

from typing import Any

from repro.manifest.frameworks import Framework, ImageNeeds
from repro.manifest.schema import PyTorch as Section
from repro.manifest.software import FrameworkFound, cudnn_text, nccl_text, normal_name, same
from repro.workloads.comm import auto_backend


class PyTorch(Framework):
    """PyTorch, distributed by torch.distributed (or Horovod's torch binding)."""

    name = "pytorch"
    title = "PyTorch"
    section = Section
    distributions = ("torch",)
    version_keys = ("torch", "torch_cuda", "torch_backends")
    default_workload = "torch_cnn"  # the name stacks written before `cnn` ran on PyTorch resolve to (same hash)
    gpu_libraries = ()  # a PyTorch wheel brings its own cuDNN and NCCL: pinning the image's copies is optional
    derived = ("package", "variant")
    compat_module = "repro.manifest.compat_torch"
    comm_library = "torch.distributed"
    backends = ("gloo", "nccl", "mpi")
    default_launcher = "torchrun"
    kube_policy = "torch"
    compile_meaning = "torch.compile: the DDP model compiled by TorchDynamo/Inductor"
    horovod_variable = "PYTORCH"
    wheelhouse_prefix = "torch"

    def derive(self, stack: Any) -> Section:
        return stack.pytorch.model_copy(update={"package": package(stack), "variant": variant(stack)})

    def software(self, probe: dict) -> FrameworkFound | None:
        return torch_found(probe.get("torch"))

    def image_software(self, probe: dict) -> FrameworkFound | None:
        return torch_found(probe.get("torch"))

    def lock_versions(self, probe: dict) -> dict[str, str | None]:
        """torch, torch_cuda, torch_cudnn, torch_nccl and torch_backends ("gloo,mpi") where torch is in the image:
        the versions of a TensorFlow image stay what its lock has always held."""
        found = torch_found(probe.get("torch"))
        if found is None or not found.version:
            return {}
        b = found.build
        return {"torch": found.version, "torch_cuda": b.get("cuda"), "torch_cudnn": b.get("cudnn"),
                "torch_nccl": b.get("nccl"),
                "torch_backends": ",".join(k for k, v in sorted((b.get("backends") or {}).items()) if v)}

    def mismatches(self, stack: Any, sw: Any, where: str, backend: str | None) -> list[str]:
        """PyTorch against what torch itself reports: its version, its build (variant) and, in an image, the package
        it came from; and the torch.distributed backend the point runs."""
        p, torch = stack.pytorch, sw.framework(self.name)
        version, cuda = torch.version, torch.build.get("cuda")
        if not same(p.version, version):
            why = f"none ({torch.error})" if version is None and torch.error else version or "none"
            return [f"torch: pinned {p.version}, found {why}"]
        out: list[str] = []
        label = (version or "").partition("+")[2]
        found_build = f"CUDA {cuda}" if cuda else "a CPU build"
        if p.variant == "cpu" and cuda:
            out.append(f"torch variant: pinned cpu, found {found_build} ({version})")
        elif p.variant and p.variant.startswith("cu"):
            want = f"{p.variant[2:-1]}.{p.variant[-1]}"
            if not cuda or not same(want, cuda):
                out.append(f"torch variant: pinned {p.variant} (CUDA {want}), found {found_build} ({version})")
        elif label and p.variant and label != p.variant and not label.startswith("git"):
            out.append(f"torch variant: pinned {p.variant}, found {version}")
        if where == "image" and p.source == "pip" and sw.packages and normal_name(p.package or "torch") \
                not in sw.packages:
            out.append(f"torch package: pinned {p.package or 'torch'} (pip), found it not installed by pip")
        return out

    def backend_mismatches(self, sw: Any, backend: str | None) -> list[str]:
        """The torch.distributed backend a point runs, missing from the torch build found."""
        if backend in self.backends and (sw.framework(self.name).build.get("backends") or {}).get(backend) is False:
            return [f"torch.distributed {backend}: needed by --dist-backend {backend}, found not available in this "
                    "torch build"]
        return []

    def show(self, stack: Any) -> dict:
        from repro.manifest.compat_torch import bundled

        return {"bundled": bundled(stack)}

    def auto_backend(self, gpu: bool) -> str | None:
        return auto_backend(gpu)

    def capture(self, sw: Any, data: dict, notes: list[str]) -> None:
        from repro.manifest.capture import checked_version, driver
        from repro.manifest.findings import table

        torch = sw.framework(self.name)
        version, _, label = checked_version("torch.__version__", torch.version or "").partition("+")
        b = torch.build
        cuda = checked_version("torch.version.cuda", b["cuda"]) if b.get("cuda") else None
        variant = label if label.startswith("cu") or label == "cpu" else (
            f"cu{cuda.split('.')[0]}{cuda.split('.')[1]}" if cuda and "." in cuda else "cpu")
        section: dict[str, Any] = {"version": version, "source": "pip", "variant": variant}
        if variant != "cpu":
            section["index_url"] = table()["torch_index"]["url"].format(variant=variant)
        data["pytorch"] = section
        found = [f"torch {torch.version}", f"CUDA {cuda}" if cuda else "a CPU build",
                 *([f"cuDNN {b['cudnn']}"] if b.get("cudnn") else []),
                 *([f"NCCL {b['nccl']}"] if b.get("nccl") else []),
                 "torch.distributed " + (", ".join(k for k, v in sorted((b.get("backends") or {}).items()) if v)
                                         or "none")]
        notes.append("pytorch: " + ", ".join(found) + " (its wheel brings its own CUDA runtime, cuDNN and NCCL)")
        if cuda:
            data["driver"] = driver(sw, cuda, notes)
            data["cuda"] = cuda
        data["benchmark"] = {"workload": self.default_workload}

    def image_needs(self, stack: Any, options: Any) -> ImageNeeds:
        """Debian's python3-torch (the venv sees the system's packages), or its wheel from the wheelhouse."""
        from repro.image.blocks.stack import torch_wheel_matches

        if stack.pytorch.source == "debian":
            return ImageNeeds(system_site_packages=True, os_packages=("python3-torch",))
        wheel = next((w for w in options.wheels if torch_wheel_matches(w, stack)), None)
        return ImageNeeds(wheel=wheel, copies_wheelhouse=wheel is not None)

    def build_wheels(self, stack: Any, wheelhouse: Any) -> list:
        """Its wheel from pip: in the stack's wheelhouse directory, else in pip's find-links directories."""
        from repro.image.build_plan import pip_find_links
        from repro.image.render import torch_wheel_matches

        if stack.pytorch.source != "pip":
            return []
        for where in [*([wheelhouse] if wheelhouse else []), *pip_find_links()]:
            found = sorted(p for p in where.glob("*.whl") if torch_wheel_matches(p.name, stack))
            if found:
                return found[-1:]
        return []

    def check_wheels(self, stack: Any, names: tuple[str, ...], where: Any, hint_dir: Any) -> None:
        """A CPU PyTorch from pip without an index_url needs its wheel in the context: PyPI's torch is a CUDA build."""
        from repro.errors import ImageError
        from repro.image.build_plan import pip_find_links
        from repro.image.render import torch_wheel_matches

        p = stack.pytorch
        if p.source != "pip" or p.index_url or p.variant != "cpu" or any(torch_wheel_matches(n, stack) for n in names):
            return
        links = ", ".join(map(str, pip_find_links())) or "none set"
        raise ImageError(
            f"stack {stack.name} pins the CPU build of PyTorch {p.version}, but no {p.package or 'torch'} "
            f"{p.version}+cpu wheel for Python {stack.python} is in {where} or pip's find-links ({links})",
            hint=f"put it in {hint_dir} (pip download --no-deps torch=={p.version} --index-url "
            "https://download.pytorch.org/whl/cpu), or set pytorch.index_url")

    def image_blocks(self, stack: Any, plan: Any, options: Any) -> list:
        from repro.image.blocks.stack import torch_blocks

        return torch_blocks(stack, options, plan)


def variant(stack: Any) -> str:
    """The PyTorch wheel's build: cpu on a CPU stack, cu<major><minor> from the stack's CUDA (12.4 -> cu124)."""
    if stack.pytorch.variant:
        return stack.pytorch.variant
    if not stack.cuda:
        return "cpu"
    major, minor = [*stack.cuda.split("."), "0"][:2]
    return f"cu{major}{minor}"


def package(stack: Any) -> str:
    """The package PyTorch comes from: torch from pip, python3-torch from Debian's archive."""
    if stack.pytorch.package:
        return stack.pytorch.package
    return "python3-torch" if stack.pytorch.source == "debian" else "torch"


def torch_found(found: object) -> FrameworkFound | None:
    """The torch part of a probe ({version, cuda, cudnn, nccl, backends} or {error}) as a FrameworkFound (None: the
    probe has none): build facts cuda, cudnn and nccl as dotted versions, backends {gloo: True, ...}."""
    if not isinstance(found, dict) or not found:
        return None
    backends = found.get("backends") if isinstance(found.get("backends"), dict) else {}
    build = {"cuda": str(found["cuda"]) if found.get("cuda") else None, "cudnn": cudnn_text(found.get("cudnn")),
             "nccl": nccl_text(found.get("nccl")),
             "backends": {str(k): bool(v) for k, v in backends.items() if v is not None}}
    return FrameworkFound(version=found.get("version") if isinstance(found.get("version"), str) else None,
                          error=str(found["error"])[:200] if found.get("error") else None,
                          build={k: v for k, v in build.items() if v})
