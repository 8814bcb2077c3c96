"""TensorFlow with Horovod: the framework repro started with."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from repro.errors import InputError
from repro.manifest.frameworks import Framework, ImageNeeds
from repro.manifest.schema import TensorFlow as Section
from repro.manifest.software import FrameworkFound, normal_name, same

PACKAGES = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel")


class TensorFlow(Framework):
    """TensorFlow, distributed by Horovod (MPI or Gloo controller)."""

    name = "tensorflow"
    title = "TensorFlow"
    section = Section
    distributions = PACKAGES
    version_keys = ("tensorflow",)
    default_workload = "cnn"
    gpu_libraries = ("cudnn", "nccl")
    derived = ("package",)
    compat_module = "repro.manifest.compat"
    comm_library = "horovod"
    backends = ("mpi", "gloo", "nccl")
    default_launcher = None  # the one Horovod's controller needs
    kube_policy = "mpi"
    compile_meaning = "XLA: the model's step compiled with tf.function(jit_compile=True)"
    horovod_variable = "TENSORFLOW"
    wheelhouse_prefix = "tf"

    def derive(self, stack: Any) -> Section:
        return stack.tensorflow.model_copy(update={"package": package(stack)})

    def software(self, probe: dict) -> FrameworkFound | None:
        version, error = probe.get("tensorflow"), probe.get("tensorflow_error")
        return FrameworkFound(version=version, error=error) if version or error else None

    def image_software(self, probe: dict) -> FrameworkFound | None:
        error = (probe.get("tensorflow") or {}).get("error")
        version = self.lock_versions(probe)["tensorflow"]
        return FrameworkFound(version=version, error=error) if version or error else None

    def lock_versions(self, probe: dict) -> dict[str, str | None]:
        version = (probe.get("tensorflow") or {}).get("version")
        if version is None:  # not importable (a GPU wheel without a driver): the installed distribution still tells
            frozen = probe.get("frozen") or {}
            version = next((v for k, v in frozen.items() if k in ("tensorflow", "tensorflow-gpu", "tensorflow-cpu")),
                           None)
        return {"tensorflow": version}

    def mismatches(self, stack: Any, sw: Any, where: str, backend: str | None) -> list[str]:
        pinned, out = stack.tensorflow, []
        version, error = self.found(sw)
        if not same(pinned.version, version):
            why = version or (error and f"none ({error})") or "none"
            out.append(f"tensorflow: pinned {pinned.version}, found {why}")
        if version and error and not stack.gpu:
            out.append(f"tensorflow: pinned {pinned.version}, found it does not import ({error[:200]})")
        wanted = pinned.package if pinned.build == "binary" else None
        if where == "image" and wanted and normal_name(wanted) not in sw.packages:
            others = [f"{k}=={x}" for k, x in sw.packages.items() if k in PACKAGES]
            out.append(f"tensorflow package: pinned {wanted}, found {', '.join(others) or 'none'}")
        return out

    def auto_backend(self, gpu: bool) -> str | None:
        return None  # Horovod picks NCCL for GPU tensors itself (gpu_operations); its controller is --backends

    def capture(self, sw: Any, data: dict, notes: list[str]) -> None:
        from repro.manifest.capture import checked_version

        version = checked_version("tensorflow.__version__", sw.framework(self.name).version or "")
        package = next((p for p in ("tensorflow-cpu", "tensorflow", "tensorflow-gpu", "tensorflow-intel")
                        if p in sw.packages), None)
        data["tensorflow"] = {"version": version, **({"package": package} if package else {})}
        notes.append(f"tensorflow: {version}" + (f" (pip package {package})" if package else ""))
        if sw.cuda or (package in ("tensorflow", "tensorflow-gpu") and sw.driver):
            raise InputError("capturing a GPU TensorFlow stack needs its cuDNN and NCCL, which the probe cannot tell",
                             hint="capture it as a CPU stack and add cuda, cudnn, nccl and driver yourself")

    def image_needs(self, stack: Any, options: Any) -> ImageNeeds:
        """A source build's wheel comes from the wheelhouse; tf_cnn_benchmarks (late_blocks) is fetched with wget."""
        from repro.image.blocks.stack import tf_benchmarks_pin

        pin = tf_benchmarks_pin(stack.tensorflow.version)
        return ImageNeeds(copies_wheelhouse=stack.tensorflow.build == "source", os_packages=("wget",) if pin else ())

    def late_blocks(self, stack: Any) -> list:
        """tf_cnn_benchmarks at the commit that matches the TensorFlow release (where repro knows one)."""
        from repro.image.blocks import own
        from repro.image.blocks.stack import tf_benchmarks_pin

        pin = tf_benchmarks_pin(stack.tensorflow.version)
        return [("tf_cnn_benchmarks", own.TfCnnBenchmarks(branch=pin[0], commit=pin[1]))] if pin else []

    def check_wheels(self, stack: Any, names: tuple[str, ...], where: Any, hint_dir: Any) -> None:
        """A source build (tensorflow.build: source) installs its wheel from the wheelhouse, with no index."""
        from repro.errors import ImageError
        from repro.image.render import wheel_matches

        tf = stack.tensorflow
        pkg = tf.package or "tensorflow"
        if tf.build == "source" and not any(wheel_matches(n, pkg, tf.version, stack.python) for n in names):
            raise ImageError(
                f"stack {stack.name} builds TensorFlow from source (tensorflow.build: source), but no "
                f"{pkg} {tf.version} wheel for Python {stack.python} is in {where}",
                hint=f"put the wheel you built (and its dependencies: it installs with --no-index) in {hint_dir}")

    def image_blocks(self, stack: Any, plan: Any, options: Any) -> list:
        from repro.image.blocks.stack import tensorflow_blocks

        return tensorflow_blocks(stack, options, plan)


def package(stack: Any) -> str:
    """pip package: tensorflow-gpu for GPU TF 1.x, tensorflow for GPU 2.x, tensorflow-cpu from 2.1 on CPU."""
    if stack.tensorflow.package:
        return stack.tensorflow.package
    tf = Version(stack.tensorflow.version)
    if stack.gpu:
        return "tensorflow-gpu" if tf < Version("2.0") else "tensorflow"
    return "tensorflow-cpu" if tf >= Version("2.1") else "tensorflow"
