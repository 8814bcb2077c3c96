"""tf_cnn_benchmarks argv (pure): golden tests against the Dell EMC whitepaper's appendix (seed 003)."""

from __future__ import annotations

import re
import shlex
from types import SimpleNamespace

import pytest

from repro.workloads import WorkloadError
from repro.workloads.tf_cnn_benchmarks import TfCnnSettings, canonical_model, tf_cnn_argv, tf_cnn_benchmarks_argv

# The appendix's command lines as the whitepaper prints them (its PDF text lost some dashes and underscores).
SEED003_MULTI_NODE = (
    "python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py -device=gpu --data_format=NCHW "
    "--optimizer=sgd --distortions=false -use_fp16=True --local_parameter_device=gpu --variable_update=horovod "
    "-horovod_device=gpu --datasets_num_private_threads=4 --data_dir=/data/train -data_name=imagenet "
    "--display_every=10 --model=ResNet-50 --batch_size=256 -xla=True")
SEED003_SINGLE_NODE = (
    "python /benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py -device=gpu --data_format=NCHW "
    "--optimizer=sgd --distortions=false -use_fp16=True --local_parameter_device=gpu --variable_update=replicated "
    "-all_reduce_spec=nccl --data_dir=/data/train --data_name=imagenet -model=ResNet-50 --batch size=256 "
    "--num gpus=4 --xla=true")
SCRIPT = "/benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"


def normalised(line: str) -> list[str]:
    """The appendix line as tf_cnn_benchmarks would accept it: the PDF's lost dashes ('-use_fp16') and
    underscores ('--batch size', '--num gpus') restored, absl booleans written True/False, and the model
    named as tf_cnn_benchmarks names it ('ResNet-50' is not in its model_config; 'resnet50' is)."""
    line = line.replace("--batch size", "--batch_size").replace("--num gpus", "--num_gpus")
    out = []
    for arg in shlex.split(line):
        if re.match(r"^-[a-z]", arg):
            arg = "-" + arg
        name, eq, value = arg.partition("=")
        if value.lower() in ("true", "false"):
            value = value.capitalize()
        if name == "--model":
            value = canonical_model(value)
        out.append(f"{name}{eq}{value}")
    return out


def test_multi_node_horovod_line_of_seed_003():
    settings = TfCnnSettings(model="ResNet-50", batch_per_worker=256, xla=True, fp16=True, data_format="NCHW",
                             data_dir="/data/train", horovod=True, datasets_num_private_threads=4)
    assert tf_cnn_argv(settings, script=SCRIPT) == normalised(SEED003_MULTI_NODE)


def test_single_node_replicated_line_of_seed_003():
    settings = TfCnnSettings(model="ResNet-50", batch_per_worker=256, xla=True, fp16=True, data_dir="/data/train",
                             horovod=False, num_gpus=4, all_reduce_spec="nccl", display_every=None)
    assert tf_cnn_argv(settings, script=SCRIPT) == normalised(SEED003_SINGLE_NODE)


def test_warmup_and_steps_are_explicit_and_synthetic_data_has_no_data_dir():
    argv = tf_cnn_argv(TfCnnSettings(model="inception3", batch_per_worker=64, warmup_steps=10, steps=100))
    assert argv[-2:] == ["--num_warmup_batches=10", "--num_batches=100"]
    assert not any(a.startswith(("--data_dir", "--data_name")) for a in argv)
    assert "--xla=False" in argv and "--use_fp16=False" in argv and "--variable_update=horovod" in argv


@pytest.mark.parametrize(("name", "expected"), [
    ("ResNet-50", "resnet50"), ("ResNet50", "resnet50"), ("resnet50", "resnet50"), ("Inception-v3", "inception3"),
    ("InceptionV3", "inception3"), ("Inception-v4", "inception4"), ("VGG16", "vgg16"), ("vgg-19", "vgg19"),
    ("GoogLeNet", "googlenet"), ("resnet50_v1.5", "resnet50_v1.5"), ("resnet20", "resnet20"),
])
def test_model_names_follow_tf_cnn_benchmarks(name, expected):
    assert canonical_model(name) == expected


def test_unknown_model_is_an_input_error():
    with pytest.raises(WorkloadError, match="no model 'transformer'"):
        tf_cnn_argv(TfCnnSettings(model="transformer", batch_per_worker=8))


def test_sweep_point_to_worker_argv():
    point = SimpleNamespace(workload="tf_cnn_benchmarks", model="resnet50", batch_per_worker=128, warmup_steps=10,
                            steps=100, xla=True, precision="fp16", data_format="NCHW", data="synthetic", extra={})
    argv = tf_cnn_benchmarks_argv(point, python="python3", data_dir="/data")
    assert argv[:2] == ["python3", "tf_cnn_benchmarks.py"]
    assert {"--device=gpu", "--horovod_device=gpu", "--use_fp16=True", "--xla=True", "--data_dir=/data",
            "--data_name=imagenet", "--batch_size=128", "--num_batches=100"} <= set(argv)
    cpu = SimpleNamespace(**{**point.__dict__, "data_format": "NHWC", "extra": {"script": "/opt/tf_cnn.py"}})
    argv = tf_cnn_benchmarks_argv(cpu, python="python3", data_dir="synthetic")
    assert argv[1] == "/opt/tf_cnn.py" and "--device=cpu" in argv and "--horovod_device=cpu" in argv
    assert not any(a.startswith("--data_dir") for a in argv)
