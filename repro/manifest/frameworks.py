"""The framework axis: what a training framework (TensorFlow, PyTorch, a plug-in one) is to repro, one plug-in each.

    FRAMEWORKS.add("toy", Toy())     # a plug-in: one instance of a Framework subclass supplying every part

A plug-in owns its part at every layer, and each layer asks this registry instead of testing framework names:
the manifest section (its model, derived fields, compatibility rules), what the host and image probes read
(`Software`), the image block and Horovod build variables, the default launcher, the communication library and
backends with the auto rule, the Kubernetes training policy and what "compile" means. `PARTS` names them; a
plug-in lacking one is refused when it is registered. The built-ins live in repro/frameworks/ and are imported
on first use (the registry itself imports nothing of theirs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from repro.registry import Registry

if TYPE_CHECKING:
    from pydantic import BaseModel

# Every part a framework plug-in supplies (attributes and methods of Framework).
PARTS = ("name", "title", "section", "distributions", "version_keys", "default_workload", "gpu_libraries", "derived",
         "compat_module", "comm_library", "backends", "default_launcher", "kube_policy", "compile_meaning",
         "horovod_variable", "derive", "found", "software", "image_software", "lock_versions", "mismatches",
         "backend_mismatches", "show", "auto_backend", "image_blocks", "capture",
         "wheelhouse_prefix", "build_wheels", "check_wheels",
         "image_needs", "late_blocks")


@dataclass(frozen=True)
class ImageNeeds:
    """What a framework's image block needs of the rest of the image, decided before any block is made."""

    wheel: str | None = None  # its wheel in the build context's wheelhouse
    copies_wheelhouse: bool = False  # its block copies the wheelhouse (Horovod's then need not)
    system_site_packages: bool = False  # the venv sees the system's packages (Debian's python3-torch)
    os_packages: tuple[str, ...] = ()  # distribution packages its block needs


class Framework:
    """One training framework: the base every plug-in fills in (see PARTS)."""

    name: str = ""  # the manifest's section key, the record's software.frameworks key
    title: str = ""  # how people write it: TensorFlow
    section: type[BaseModel]  # the manifest section's model (version, package, ...)
    distributions: tuple[str, ...] = ()  # pip distributions that provide it (normalised names)
    version_keys: tuple[str, ...] = ()  # what an image lock's versions hold of it (repro up's summary)
    default_workload: str = "cnn"  # benchmark.workload of a stack that names none
    gpu_libraries: tuple[str, ...] = ("cudnn", "nccl")  # what a GPU stack must pin besides the driver
    derived: tuple[str, ...] = ()  # fields of its section derived when the manifest leaves them out
    compat_module: str | None = None  # the module whose @rule(framework=name) functions check a stack
    comm_library: str = ""  # who runs the collectives: horovod, torch.distributed
    backends: tuple[str, ...] = ()  # communication backends its library offers
    default_launcher: str | None = None  # None: the launcher the Horovod controller needs (mpirun)
    kube_policy: str = "mpi"  # Kubeflow Trainer's runtime policy: mpi, torch
    compile_meaning: str = ""  # what the `xla` setting (the record's compile) does: XLA, torch.compile
    horovod_variable: str | None = None  # HOROVOD_WITH_<this>; None: Horovod does not support it
    wheelhouse_prefix: str = ""  # the wheelhouse subdirectory <prefix><version>-py<XY> (empty: its name)

    def derive(self, stack: Any) -> BaseModel:
        """Its section with every derived field filled in."""
        raise NotImplementedError

    def found(self, sw: Any) -> tuple[str | None, str | None]:
        """(version, error) of the framework in a probe's Software."""
        part = sw.framework(self.name)
        return part.version, part.error

    def software(self, probe: dict) -> Any:
        """Its part of the host probe's JSON as a FrameworkFound (None: the probe found nothing of it)."""
        raise NotImplementedError

    def image_software(self, probe: dict) -> Any:
        """Its part of the image probe's JSON (repro.image.verify) as a FrameworkFound, or None."""
        raise NotImplementedError

    def lock_versions(self, probe: dict) -> dict[str, str | None]:
        """What an image lock's versions hold of it, from the image probe's JSON (keys: version_keys)."""
        raise NotImplementedError

    def mismatches(self, stack: Any, sw: Any, where: str, backend: str | None) -> list[str]:
        """Every way the framework found differs from the one pinned ('component: pinned X, found Y')."""
        raise NotImplementedError

    def backend_mismatches(self, sw: Any, backend: str | None) -> list[str]:
        """The communication backend a point runs, missing from what was found (none by default)."""
        return []

    def show(self, stack: Any) -> dict:
        """What `repro show` adds for a stack of this framework (PyTorch: what its wheel bundles)."""
        return {}

    def auto_backend(self, gpu: bool) -> str | None:
        """The communication backend `auto` means on a GPU (or CPU) stack; None: Horovod's controller decides."""
        raise NotImplementedError

    def capture(self, sw: Any, data: dict, notes: list[str]) -> None:
        """Its section (and what follows from it: cuda, driver, benchmark) of a stack `repro capture` writes from
        the Software found, with a note per choice; InputError where it cannot tell enough."""
        raise NotImplementedError

    def image_blocks(self, stack: Any, plan: Any, options: Any) -> list:
        """The (name, blocks) that install it in an image (repro.image.blocks)."""
        raise NotImplementedError

    def image_needs(self, stack: Any, options: Any) -> ImageNeeds:
        """What its image block needs of the rest of the image (nothing by default)."""
        return ImageNeeds()

    def late_blocks(self, stack: Any) -> list:
        """The (name, block)s of it that come after the pip packages (none by default)."""
        return []

    def build_wheels(self, stack: Any, wheelhouse: Any) -> list:
        """Its wheels an image build takes from outside the stack's wheelhouse directory (none by default)."""
        return []

    def check_wheels(self, stack: Any, names: tuple[str, ...], where: Any, hint_dir: Any) -> None:
        """ImageError when a wheel its image block installs without an index is not among the build context's
        `names` (`where`: the wheelhouse looked in; `hint_dir`: where to put it)."""


def _check(item: Framework) -> None:
    missing = [part for part in PARTS if not hasattr(item, part)]
    if missing or not item.name:
        raise TypeError(f"framework plug-in {type(item).__name__} lacks {', '.join(missing) or 'a name'}")


FRAMEWORKS: Registry[Framework] = Registry("framework", on_add=_check)
FRAMEWORKS.lazy("tensorflow", "repro.frameworks.tensorflow:TensorFlow", instance=True,
                help="TensorFlow, distributed by Horovod")
FRAMEWORKS.lazy("pytorch", "repro.frameworks.pytorch:PyTorch", instance=True,
                help="PyTorch, distributed by torch.distributed (or Horovod)")


def section_of(stack: Any, name: str) -> Any:
    """The stack's section of framework `name` (a declared field, or a plug-in's section), or None."""
    if name in type(stack).model_fields:
        return getattr(stack, name)
    return (getattr(stack, "model_extra", None) or {}).get(name)


def pinned(stack: Any) -> list[str]:
    """The names of the frameworks a stack pins (a valid stack pins exactly one)."""
    return [name for name in FRAMEWORKS.names() if section_of(stack, name) is not None]


def of(stack: Any) -> Framework:
    """The framework a stack pins (stacks from before the framework axis pin TensorFlow)."""
    names = pinned(stack)
    return FRAMEWORKS.get(names[0] if names else "tensorflow")
