"""The framework axis: every registered framework supplies every part, and layers ask the registry."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from repro.launch.schedulers.kubernetes import policy_of
from repro.launch.workloads import WORKLOADS
from repro.manifest import frameworks, load_stack
from repro.manifest.frameworks import FRAMEWORKS, PARTS, Framework
from repro.manifest.software import Software, framework_found, mismatches
from repro.pipeline.software import software_line
from repro.results.record import Settings
from repro.workloads.comm import auto_backend, resolve_backend
from repro.workloads.spec import WorkloadSpec

METHODS = [p for p in PARTS if callable(getattr(Framework, p, None))]


@pytest.mark.parametrize("name", FRAMEWORKS.names())
def test_every_registered_framework_supplies_every_part(name):
    plugin = FRAMEWORKS.get(name)
    assert plugin.name == name
    for part in PARTS:
        assert hasattr(plugin, part), f"{name} lacks {part}"
    for attribute in ("title", "section", "comm_library", "backends", "kube_policy", "compile_meaning",
                      "distributions", "version_keys"):
        assert getattr(plugin, attribute), f"{name}: {attribute} is empty"
    # the methods the base leaves unimplemented are the plug-in's own
    for method in ("derive", "software", "image_software", "lock_versions", "mismatches", "auto_backend", "capture",
                   "image_blocks"):
        assert getattr(type(plugin), method) is not getattr(Framework, method), f"{name} does not implement {method}"
    assert plugin.default_workload in WORKLOADS
    assert name in WORKLOADS.get(plugin.default_workload).spec.frameworks


def test_a_plugin_lacking_a_part_is_refused_when_registered():
    class Half:
        name = "half"
        title = "Half"

    with pytest.raises(TypeError, match="lacks"):
        FRAMEWORKS.add("half", Half())  # type: ignore[arg-type]
    assert "half" not in FRAMEWORKS


def test_the_framework_of_a_stack_comes_from_the_section_it_pins():
    assert frameworks.of(load_stack("stacks/cpu-tf215.yaml").stack).name == "tensorflow"
    torch = load_stack("stacks/cpu-torch213.yaml").stack
    assert frameworks.of(torch).name == "pytorch" and torch.framework == "pytorch"
    assert frameworks.pinned(torch) == ["pytorch"]


def test_the_auto_backend_rule_is_written_once_and_the_frameworks_use_it():
    assert (auto_backend(True), auto_backend(False)) == ("nccl", "gloo")
    assert resolve_backend("mpi", True) == "mpi" and resolve_backend("auto", False) == "gloo"
    assert FRAMEWORKS.get("pytorch").auto_backend(True) == "nccl"
    assert FRAMEWORKS.get("tensorflow").auto_backend(True) is None  # Horovod's controller is --backends


class _ToySection(BaseModel):
    version: str


class _Toy(Framework):
    """a framework only this test knows"""

    name = "toyfw"
    title = "ToyFW"
    section = _ToySection
    kube_policy = "torch"
    comm_library = "toy.collectives"


@pytest.fixture()
def toy_workload():
    """A workload of a framework whose name says nothing (no torch_ prefix), registered for the test."""
    FRAMEWORKS.add("toyfw", _Toy())

    class Plain:
        spec = WorkloadSpec(name="plain", summary="a toy", kind="throughput", framework="toyfw")

        def command(self, point, python, *, data=None):
            return []

        def parse(self, stdout):
            return None

    WORKLOADS.add("plain", Plain())
    yield
    WORKLOADS.remove("plain")
    FRAMEWORKS.remove("toyfw")


def test_the_kubernetes_policy_is_the_workloads_frameworks_not_its_name(toy_workload):
    point = Settings(workload="plain", workers=1)
    assert policy_of(point, "toyfw") == "torch"  # the toy framework's policy, though its name has no torch_ prefix
    assert policy_of(point.model_copy(update={"workload": "torch_cnn"}), "pytorch") == "torch"
    assert policy_of(point.model_copy(update={"workload": "cnn"}), "tensorflow") == "mpi"
    assert policy_of(point.model_copy(update={"workload": "cnn"}), "pytorch") == "torch"  # the family's program
    assert policy_of(point.model_copy(update={"workload": "probe"}), "pytorch") == "mpi"


def test_results_show_names_the_framework_a_host_was_found_with():
    torch = Software(python="3.11.2", torch="2.13.0+cpu", mpi="openmpi 4.1.4")
    assert software_line(torch) == "python 3.11.2, pytorch 2.13.0+cpu, horovod None, openmpi 4.1.4"
    tf = Software(python="3.11.2", tensorflow="2.15.1", horovod="0.28.1", mpi="openmpi 4.1.4")
    assert software_line(tf) == "python 3.11.2, tensorflow 2.15.1, horovod 0.28.1, openmpi 4.1.4"
    assert framework_found(Software(python="3.11.2")) == {"tensorflow": None}  # as records before the axis print


def test_the_software_check_asks_the_stacks_framework():
    torch = load_stack("stacks/cpu-torch213.yaml").stack
    found = Software(python="3.11.2", torch="2.12.0+cpu", mpi="openmpi 4.1.4")
    assert "torch: pinned 2.13.0, found 2.12.0+cpu" in mismatches(torch, found, where="host")
    tf = load_stack("stacks/cpu-tf215.yaml").stack
    assert "tensorflow: pinned 2.15.1, found none" in mismatches(tf, found, where="host")
