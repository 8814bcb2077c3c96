"""A toy framework defined only here (its manifest section, probe, image block and one workload), one plug-in and
one registration: it reaches validate, show, render, bench --dry-run and a stored record (issue 36 item 5)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from repro.cli import main
from repro.errors import ManifestError
from repro.image.blocks import own
from repro.launch.workloads import WORKLOADS, find_result
from repro.manifest import load_stack
from repro.manifest.frameworks import FRAMEWORKS, Framework, section_of
from repro.manifest.software import FrameworkFound, from_host_probe, mismatches, same
from repro.results.store import Store
from repro.workloads.spec import Option, WorkloadSpec
from tests.unit.test_extensions import PROGRAM, toys  # noqa: F401 - toys is a fixture used below

ROOT = Path(__file__).resolve().parents[2]
LOCALHOST = ROOT / "inventories" / "localhost"
TOY_STACK = """\
description: a stack of a framework only this test knows
os: {distro: debian, version: "12"}
mpi: {implementation: openmpi, version: "4.1.4"}
python: "3.11"
toyfw: {version: "1.2"}
"""


class ToySection(BaseModel):
    """the toy framework's part of a stack"""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: str
    flavour: str | None = None  # derived: plain


class ToyFW(Framework):
    """a framework only this test knows, with its own collective library"""

    name = "toyfw"
    title = "ToyFW"
    section = ToySection
    distributions = ("toyfw",)
    version_keys = ("toyfw",)
    default_workload = "probe"  # a stack's benchmark.workload is a built-in one
    gpu_libraries = ()
    derived = ("flavour",)
    comm_library = "toy.collectives"
    backends = ("gloo",)
    default_launcher = "mpirun"
    kube_policy = "mpi"
    compile_meaning = "nothing: the toy has no compiler"

    def derive(self, stack):
        toy = section_of(stack, self.name)
        return toy.model_copy(update={"flavour": toy.flavour or "plain"})

    def software(self, probe):
        part = probe.get("toyfw")
        return FrameworkFound(version=part.get("version"), error=part.get("error")) if part else None

    def image_software(self, probe):
        return self.software(probe)

    def lock_versions(self, probe):
        return {"toyfw": (probe.get("toyfw") or {}).get("version")}

    def mismatches(self, stack, sw, where, backend):
        pinned, found = section_of(stack, self.name).version, sw.framework(self.name).version
        return [] if same(pinned, found) else [f"toyfw: pinned {pinned}, found {found or 'none'}"]

    def auto_backend(self, gpu):
        return "gloo"

    def capture(self, sw, data, notes):
        data["toyfw"] = {"version": sw.framework(self.name).version}

    def image_blocks(self, stack, plan, options):
        version = section_of(stack, self.name).version
        return [("toyfw", [own.note(f"ToyFW {version}"), own.pip_install([f"toyfw=={version}"])])]


TOY_TRAIN = WorkloadSpec(
    name="toyfw_train", summary="the toy framework's training step", kind="throughput", framework="toyfw",
    options=(Option("batch_size", int, 4, "items per step", minimum=1, setting="batch_per_worker"),
             Option("step_seconds", float, 0.01, "the step time to report", minimum=0, exclusive_minimum=True)))


class ToyTrain:
    spec = TOY_TRAIN

    def command(self, point, python, *, data=None) -> list[str]:
        return [sys.executable, "-c", PROGRAM, str(point.extra.get("step_seconds", 0.01)), str(point.batch_per_worker)]

    def parse(self, stdout: str):
        return find_result(stdout)


@pytest.fixture()
def toyfw(toys, tmp_path):  # noqa: F811 - the fixture imported above
    FRAMEWORKS.add("toyfw", ToyFW())
    WORKLOADS.add("toyfw_train", ToyTrain())
    path = tmp_path / "toy.yaml"
    path.write_text(TOY_STACK)
    yield path
    WORKLOADS.remove("toyfw_train")
    FRAMEWORKS.remove("toyfw")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_toy_frameworks_stack_validates_shows_and_renders(toyfw, capsys):
    loaded = load_stack(toyfw)
    assert loaded.stack.framework == "toyfw" and loaded.stack.toyfw.flavour == "plain"  # its derived field
    code, out, err = run(capsys, "validate", str(toyfw))
    assert code == 0, err
    code, out, err = run(capsys, "show", str(toyfw))
    assert code == 0 and "toyfw:" in out and "flavour: plain" in out, err
    code, out, err = run(capsys, "render", str(toyfw))
    assert code == 0 and "# ToyFW 1.2" in out and "toyfw==1.2" in out, err
    assert "tensorflow" not in out.lower() and "torch" not in out  # only the toy's block installs a framework


def test_a_toy_workload_plans_with_its_frameworks_collectives_and_is_stored(toyfw, capsys, tmp_path):
    code, out, err = run(capsys, "bench", "--stack", str(toyfw), "--hosts", str(LOCALHOST), "--workload",
                         "toyfw_train", "--dry-run", "--store", str(tmp_path / "dry"))
    assert code == 0 and "workload=toyfw_train" in out and "mpirun" in out, err
    store = tmp_path / "store"
    code, out, err = run(capsys, "bench", "--stack", str(toyfw), "--hosts", str(LOCALHOST), "--workload",
                         "toyfw_train", "--runtime", "subprocess", "--launcher", "solo", "--scheduler", "inline",
                         "--batch-size", "6", "--repeats", "1", "--store", str(store), "-q")
    assert code == 0, err
    (rec,) = Store(store).records()
    assert rec.status == "ok" and rec.settings.workload == "toyfw_train"
    assert rec.settings.comm.model_dump() == {"library": "toy.collectives", "backend": "gloo"}  # its auto rule
    assert rec.settings.backend is None  # no Horovod controller
    assert rec.stack.manifest["toyfw"] == {"version": "1.2", "flavour": "plain"}
    code, out, err = run(capsys, "results", "--store", str(store), "show", rec.id)
    assert code == 0 and "workload:       toyfw_train" in out, err


def test_the_toy_probe_is_read_and_checked_by_its_plugin(toyfw):
    stack = load_stack(toyfw).stack
    sw = from_host_probe({"python": "3.11.2", "mpi": "mpirun (Open MPI) 4.1.4", "toyfw": {"version": "1.1"}})
    assert sw.framework("toyfw").version == "1.1"
    assert "toyfw: pinned 1.2, found 1.1" in mismatches(stack, sw, where="host")


def test_a_toy_workload_on_a_tensorflow_stack_and_an_unregistered_section_are_refused(toyfw, capsys, tmp_path):
    code, _, err = run(capsys, "bench", "--stack", str(ROOT / "stacks" / "cpu-tf215.yaml"), "--hosts",
                       str(LOCALHOST), "--workload", "toyfw_train", "--dry-run", "--store", str(tmp_path))
    assert code == 2 and "workload toyfw_train runs on toyfw, but stack cpu-tf215 pins tensorflow" in err
    before = load_stack(ROOT / "stacks" / "cpu-tf215.yaml").hash
    WORKLOADS.remove("toyfw_train")
    FRAMEWORKS.remove("toyfw")
    try:
        with pytest.raises(ManifestError) as refused:
            load_stack(toyfw)
        assert "unknown field 'toyfw'" in str(refused.value.render())
        assert load_stack(ROOT / "stacks" / "cpu-tf215.yaml").hash == before  # a plug-in's section is not hashed
    finally:
        FRAMEWORKS.add("toyfw", ToyFW())
        WORKLOADS.add("toyfw_train", ToyTrain())
