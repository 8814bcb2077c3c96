"""PyTorch as a framework of the manifest (pure): the framework axis, optional Horovod, PyTorch's compatibility
rules, what a torch wheel bundles, and the torch part of the software check. Real manifest files, no services."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import ManifestError
from repro.manifest import load_stack
from repro.manifest.compat import check
from repro.manifest.compat_torch import bundled, variant_cuda
from repro.manifest.software import Software, cudnn_text, from_host_probe, mismatches, nccl_text

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
CPU = 'os: {distro: debian, version: "12"}\nmpi: {version: "4.1.4"}\npython: "3.11"\n'
GPU = ('os: {distro: ubuntu, version: "24.04"}\nmpi: {version: "4.1.6"}\npython: "3.12"\ndriver: "580.65.06"\n'
       'cuda: "13.0.0"\n')

# The hashes every stack shipped before PyTorch had (computed on the tree before the framework axis): a stack's
# records and images are keyed by them, so the framework axis must leave every one unchanged.
EARLIER_HASHES = {
    "cpu-tf215": ("bd779ae04811", "e5074543190f"), "tf114-cuda10": ("158c4320f69c", "74b706ca7856"),
    "tf215-cuda122": ("ef2d18db846b", "c171e8aca4d4"), "cpu-tf212": ("8cec1f51f248", "7a2ac0b54086"),
    "tf110-cuda91": ("3ed5d13d0999", "8c4a20217230"), "cpu-tf215-xla": ("2d68783d1fd8", "e5074543190f"),
    "tf114-cuda10-xla": ("53a17d9ad927", "74b706ca7856"),
}


def stack_file(tmp_path: Path, text: str, name: str = "s") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def rules(path: Path, severity: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in check(load_stack(path)):
        if f.severity == severity:
            out.setdefault(f.rule, []).append(f.message)
    return out


def refused(path: Path) -> list[str]:
    with pytest.raises(ManifestError) as exc:
        load_stack(path)
    return [d.render() for d in exc.value.diagnostics]


# -- the framework axis --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EARLIER_HASHES))
def test_tensorflow_stacks_keep_their_stack_and_image_hashes(name):
    loaded = load_stack(STACKS / f"{name}.yaml")
    assert (loaded.hash, loaded.image_hash) == EARLIER_HASHES[name]
    assert loaded.stack.framework == "tensorflow"


@pytest.mark.parametrize("name", ["cpu-torch213", "torch24-cuda124", "torch211-cuda130"])
def test_shipped_torch_stacks_validate_without_errors(name):
    loaded = load_stack(STACKS / f"{name}.yaml")
    assert loaded.stack.framework == "pytorch" and loaded.stack.horovod is None
    assert not [f for f in check(loaded) if f.severity == "error"]


def test_a_tensorflow_stack_without_horovod_validates(tmp_path):
    path = stack_file(tmp_path, CPU + 'tensorflow: {version: "2.15.1", package: tensorflow-cpu}\n')
    loaded = load_stack(path)
    assert loaded.stack.horovod is None and not rules(path, "error")


def test_a_stack_without_a_framework_is_refused_at_its_first_line(tmp_path):
    (line,) = refused(stack_file(tmp_path, CPU))
    assert "s.yaml:1:" in line and "exactly one framework" in line and "neither" in line


def test_a_stack_with_both_frameworks_names_both_lines(tmp_path):
    lines = refused(stack_file(tmp_path, CPU + 'tensorflow: {version: "2.15.1"}\npytorch: {version: "2.13.0"}\n'))
    assert any("s.yaml:4:" in ln and "tensorflow and pytorch" in ln for ln in lines)
    assert any("s.yaml:5:" in ln for ln in lines)


def test_a_tensorflow_workload_on_a_torch_stack_is_refused_at_the_workload(tmp_path):
    text = CPU + 'pytorch: {version: "2.13.0"}\nbenchmark: {workload: tf_cnn_benchmarks}\n'
    (line,) = refused(stack_file(tmp_path, text))
    assert "s.yaml:5:" in line and "benchmark.workload" in line and "runs on tensorflow" in line


def test_a_family_workload_on_a_torch_stack_takes_its_pytorch_programs_models(tmp_path):
    stack = load_stack(stack_file(tmp_path, CPU + 'pytorch: {version: "2.13.0"}\nbenchmark: {workload: cnn, '
                                  'model: resnet20}\n')).stack
    assert stack.benchmark.workload == "cnn"
    (line,) = refused(stack_file(tmp_path, CPU + 'pytorch: {version: "2.13.0"}\nbenchmark: {workload: cnn, '
                                 'model: resnet152}\n'))  # TensorFlow's cnn has it, the PyTorch program not
    assert "benchmark.model" in line and "on pytorch has no model resnet152" in line


def test_a_torch_stack_defaults_to_the_torch_cnn_workload(tmp_path):
    stack = load_stack(stack_file(tmp_path, CPU + 'pytorch: {version: "2.13.0"}\n')).stack
    assert stack.benchmark.workload == "torch_cnn"
    assert (stack.pytorch.package, stack.pytorch.variant) == ("torch", "cpu")


def test_variant_and_package_are_derived(tmp_path):
    gpu = load_stack(stack_file(tmp_path, GPU + 'pytorch: {version: "2.11.0"}\n', "g")).stack
    assert gpu.pytorch.variant == "cu130" and gpu.cudnn is None  # a wheel brings its own cuDNN and NCCL
    deb = load_stack(stack_file(tmp_path, CPU + 'pytorch: {version: "1.13.1", source: debian}\n', "d")).stack
    assert deb.pytorch.package == "python3-torch"


def test_an_index_url_with_credentials_is_refused_without_echoing_them(tmp_path):
    text = CPU + 'pytorch: {version: "2.13.0", index_url: "https://me:s3cret@pypi.example.com/simple"}\n'
    (line,) = refused(stack_file(tmp_path, text))
    assert "pytorch.index_url" in line and "credentials" in line and "s3cret" not in line


def test_horovod_commit_must_be_a_full_commit(tmp_path):
    (line,) = refused(stack_file(tmp_path, CPU + 'pytorch: {version: "2.13.0"}\nhorovod: {version: "0.28.1", '
                                  'commit: abc123}\n'))
    assert "horovod.commit" in line


# -- compatibility rules -----------------------------------------------------------------------------------------


def test_horovod_release_on_torch_21_or_later_is_an_error_naming_the_fix(tmp_path):
    errors = rules(stack_file(tmp_path, CPU + 'pytorch: {version: "2.13.0"}\nhorovod: {version: "0.28.1"}\n'),
                   "error")
    assert "C++17" in errors["horovod-torch"][0] and "3998" in errors["horovod-torch"][0]


def test_horovod_from_a_commit_is_a_warning_not_an_error(tmp_path):
    path = stack_file(tmp_path, CPU + 'pytorch: {version: "2.13.0"}\nhorovod: {version: "0.28.1", commit: '
                      f'"{"a" * 40}"}}\n')
    assert "horovod-torch" not in rules(path, "error") and "horovod-commit" in rules(path, "warning")


@pytest.mark.parametrize("text, rule, words", [
    (GPU + 'pytorch: {version: "2.11.0", variant: cpu}\n', "torch-variant", ["would not use the GPUs"]),
    (GPU + 'pytorch: {version: "2.11.0", variant: cu118}\n', "torch-cuda", ["no cu118 wheels", "cu130"]),
    (CPU.replace("3.11", "3.9") + 'pytorch: {version: "2.11.0"}\n', "torch-python", ["Python 3.9"]),
    (GPU.replace("580.65.06", "550.54.15") + 'pytorch: {version: "2.11.0"}\n', "torch-driver", [">= 580", "550"]),
    (GPU + 'pytorch: {version: "1.13.1", source: debian}\n', "torch-debian", ["CPU build"]),
    (CPU + 'pytorch: {version: "2.13.0", source: debian}\n', "torch-debian", ["1.13.1"]),
])
def test_incompatible_torch_stacks_are_errors(tmp_path, text, rule, words):
    errors = rules(stack_file(tmp_path, text), "error")
    assert rule in errors, errors
    assert all(any(w in m for m in errors[rule]) for w in words), errors[rule]


def test_a_gpu_variant_without_index_url_warns_where_its_wheels_are(tmp_path):
    warnings = rules(stack_file(tmp_path, GPU + 'pytorch: {version: "2.11.0"}\n'), "warning")
    assert "download.pytorch.org/whl/cu130" in warnings["torch-index"][0]


def test_a_pinned_system_cudnn_other_than_the_wheels_is_a_warning(tmp_path):
    path = stack_file(tmp_path, GPU + 'cudnn: "9.1.0"\npytorch: {version: "2.11.0", index_url: '
                      '"https://download.pytorch.org/whl/cu130"}\n')
    assert "9.17.1.4" in rules(path, "warning")["torch-cudnn"][0]


def test_show_derives_what_the_wheel_bundles():
    have = bundled(load_stack(STACKS / "torch211-cuda130.yaml").stack)
    assert (have["cuda"], have["cudnn"], have["nccl"], have["nccl_verified"]) == ("13.0", "9.17.1.4", "2.28.9", True)
    assert bundled(load_stack(STACKS / "cpu-torch213.yaml").stack) == {"variant": "cpu", "cuda": None}
    assert bundled(load_stack(STACKS / "cpu-tf215.yaml").stack) == {}
    assert (variant_cuda("cu124"), variant_cuda("cu130"), variant_cuda("cpu")) == ("12.4", "13.0", None)


# -- the software check -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [(91300, "9.13.0"), (91701, "9.17.1"), (8907, "8.9.7"), (None, None)])
def test_cudnn_integers_become_versions(value, text):
    assert cudnn_text(value) == text


@pytest.mark.parametrize("value, text", [([2, 27, 7], "2.27.7"), ((2, 28, 9), "2.28.9"), (21805, "2.18.5"),
                                         (2708, "2.7.8"), ("x", None)])
def test_nccl_versions_become_versions(value, text):
    assert nccl_text(value) == text


def probe(version: str, cuda: str | None = None, **more) -> Software:
    return from_host_probe({"python": "3.11.2", "mpi": "mpirun (Open MPI) 4.1.4",
                            "torch": {"version": version, "cuda": cuda, "backends": {"gloo": True, "mpi": False,
                                                                                      "nccl": False}, **more}})


def test_the_torch_stack_matches_a_host_with_its_cpu_wheel():
    stack = load_stack(STACKS / "cpu-torch213.yaml").stack
    assert mismatches(stack, probe("2.13.0+cpu"), where="host", backend="gloo") == []


@pytest.mark.parametrize("found, cuda, words", [
    ("2.4.1+cu124", "12.4", ["torch: pinned 2.13.0, found 2.4.1+cu124"]),
    ("2.13.0+cu130", "13.0", ["torch variant: pinned cpu", "CUDA 13.0"]),
])
def test_a_host_with_another_torch_is_a_mismatch(found, cuda, words):
    stack = load_stack(STACKS / "cpu-torch213.yaml").stack
    out = mismatches(stack, probe(found, cuda), where="host", backend="gloo")
    assert all(any(w in line for line in out) for w in words), out


def test_a_backend_torch_lacks_is_a_mismatch_only_when_asked_for():
    stack = load_stack(STACKS / "cpu-torch213.yaml").stack
    assert any("torch.distributed mpi" in line for line in mismatches(stack, probe("2.13.0+cpu"), where="host",
                                                                      backend="mpi"))


def test_a_host_without_torch_says_why():
    stack = load_stack(STACKS / "cpu-torch213.yaml").stack
    sw = from_host_probe({"python": "3.11.2", "mpi": "mpirun (Open MPI) 4.1.4",
                          "torch": {"error": "No module named 'torch'"}})
    assert mismatches(stack, sw, where="host") == ["torch: pinned 2.13.0, found none (No module named 'torch')"]


def test_the_gpu_host_probe_gives_dotted_versions():
    sw = probe("2.11.0+cu130", "13.0", cudnn=91701, nccl=[2, 27, 7])
    build = sw.framework("pytorch").build
    assert (build["cuda"], build["cudnn"], build["nccl"]) == ("13.0", "9.17.1", "2.27.7")
    stack = load_stack(STACKS / "torch211-cuda130.yaml").stack
    assert mismatches(stack, sw.model_copy(update={"python": "3.12.3", "mpi": "openmpi 4.1.6"}), where="host") == []


def test_a_tensorflow_stack_ignores_torch_on_the_host():
    stack = load_stack(STACKS / "cpu-tf215.yaml").stack
    sw = from_host_probe({"python": "3.11.2", "tensorflow": "2.15.1", "horovod": "0.28.1",
                          "horovod_built": {"mpi": True, "gloo": True, "nccl": False},
                          "mpi": "mpirun (Open MPI) 4.1.4", "torch": {"version": "2.13.0+cpu"}})
    assert mismatches(stack, sw, where="host", backend="gloo") == []


def test_show_prints_what_the_wheel_bundles_for_a_torch_stack_only(capsys):
    import json

    from repro.cli import main

    assert main(["show", "--json", str(STACKS / "torch24-cuda124.yaml")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["bundled"]["cudnn"] == "9.1.0.70" and shown["stack"]["pytorch"]["variant"] == "cu124"
    assert main(["show", "--json", str(STACKS / "cpu-tf215.yaml")]) == 0
    assert "bundled" not in json.loads(capsys.readouterr().out)



def test_the_compare_headline_names_the_pytorch_versions_of_two_torch_stacks():
    from repro.compare.align import Change
    from repro.compare.diff import Changes, diff_flat, flatten

    old, new = (flatten(load_stack(STACKS / f"{n}.yaml").stack.model_dump(mode="json"))
                for n in ("torch24-cuda124", "torch211-cuda130"))
    manifest = diff_flat([old], [new])
    assert any(isinstance(c, Change) and c.path == "pytorch.version" for c in manifest)
    headline = Changes(manifest, (), (), ()).headline()
    assert "PyTorch 2.4.1 → 2.11.0" in headline and "PyTorch build cu124 → cu130" in headline


def test_a_torch_stack_can_extend_a_tensorflow_stack_by_dropping_its_framework(tmp_path):
    base = STACKS / "cpu-tf215.yaml"
    both = stack_file(tmp_path, f'extends: {base}\npytorch: {{version: "2.13.0"}}\n', "both")
    assert any("tensorflow: null" in line for line in refused(both))
    child = stack_file(tmp_path, f'extends: {base}\ntensorflow: null\nhorovod: null\npytorch: {{version: "2.13.0"}}\n'
                       'benchmark: {workload: torch_cnn}\n', "child")
    stack = load_stack(child).stack
    assert stack.framework == "pytorch" and stack.tensorflow is None and stack.horovod is None
