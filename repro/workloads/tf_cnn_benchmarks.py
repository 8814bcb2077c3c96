"""tf_cnn_benchmarks command lines (pure): benchmark settings in, an argv list out.

tf_cnn_benchmarks (github.com/tensorflow/benchmarks, scripts/tf_cnn_benchmarks) is what the Dell EMC
whitepaper (seed 003) and the IBM DLaaS tables (seed 000) ran. Its flags are absl flags; booleans are
written `--flag=True|False`. Model names follow its model_config: resnet50, inception3, vgg16, ...

Like every module of repro.workloads it imports nothing from repro outside this package: what the
program is (its models, its flags) is declared here once, for the planner and the log importer alike.
Its output is read by repro.results.importers.tf_cnn (`parse_tf_cnn_output`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import WorkloadError
from .spec import Option, WorkloadSpec

SCRIPT = "tf_cnn_benchmarks.py"  # run from scripts/tf_cnn_benchmarks, or pass the full path

# tf_cnn_benchmarks' ImageNet and CIFAR-10 model names (models/model_config.py)
MODELS = frozenset({
    "alexnet", "googlenet", "inception3", "inception4", "lenet", "mobilenet", "nasnet", "nasnetlarge", "overfeat",
    "resnet50", "resnet50_v1.5", "resnet50_v2", "resnet101", "resnet101_v2", "resnet152", "resnet152_v2",
    "trivial", "vgg11", "vgg16", "vgg19", "resnet20", "resnet20_v2", "resnet32", "resnet32_v2", "resnet44",
    "resnet44_v2", "resnet56", "resnet56_v2", "resnet110", "resnet110_v2", "densenet40_k12", "densenet100_k12",
    "densenet100_k24",
})
# How papers and Keras write the same models (seed 003: "ResNet-50", "Inception-v3"; Keras: "ResNet50")
_ALIASES = {"inceptionv3": "inception3", "inceptionv4": "inception4"}


def canonical_model(name: str) -> str:
    """A model name as tf_cnn_benchmarks spells it: 'ResNet-50' -> 'resnet50', 'Inception-v3' -> 'inception3'."""
    text = name.strip()
    if text in MODELS:
        return text
    folded = re.sub(r"[\s_-]", "", text.lower())
    folded = _ALIASES.get(folded, folded)
    for model in MODELS:
        if re.sub(r"[\s_-]", "", model) == folded:
            return model
    return text.lower()


@dataclass(frozen=True)
class TfCnnSettings:
    """What one tf_cnn_benchmarks process runs; data_dir None means synthetic ImageNet-shaped data."""

    model: str
    batch_per_worker: int
    warmup_steps: int | None = None
    steps: int | None = None
    xla: bool = False
    fp16: bool = False
    data_format: str | None = "NCHW"
    data_dir: str | None = None
    data_name: str = "imagenet"
    horovod: bool = True
    num_gpus: int = 1  # GPUs per process without Horovod (replicated / parameter_server)
    variable_update: str | None = None  # default: horovod with Horovod, replicated without
    all_reduce_spec: str | None = None  # replicated only, e.g. nccl
    device: str = "gpu"
    optimizer: str | None = "sgd"
    distortions: bool | None = False
    local_parameter_device: str | None = "gpu"
    datasets_num_private_threads: int | None = None
    display_every: int | None = 10


def _bool(value: bool) -> str:
    return "True" if value else "False"


def tf_cnn_argv(s: TfCnnSettings, *, python: str = "python", script: str = SCRIPT) -> list[str]:
    """The argv of one tf_cnn_benchmarks process (flag order as in seed 003's appendix)."""
    model = canonical_model(s.model)
    if model not in MODELS:
        raise WorkloadError(f"tf_cnn_benchmarks has no model '{s.model}' (one of: {', '.join(sorted(MODELS))})")
    if s.batch_per_worker < 1:
        raise WorkloadError(f"batch size must be positive, found {s.batch_per_worker}")
    variable_update = s.variable_update or ("horovod" if s.horovod else "replicated")
    argv = [python, script, f"--device={s.device}"]
    if s.data_format:
        argv.append(f"--data_format={s.data_format}")
    if s.optimizer:
        argv.append(f"--optimizer={s.optimizer}")
    if s.distortions is not None:
        argv.append(f"--distortions={_bool(s.distortions)}")
    argv.append(f"--use_fp16={_bool(s.fp16)}")
    if s.local_parameter_device:
        argv.append(f"--local_parameter_device={s.local_parameter_device}")
    argv.append(f"--variable_update={variable_update}")
    if variable_update == "horovod":
        argv.append(f"--horovod_device={s.device}")
    elif s.all_reduce_spec:
        argv.append(f"--all_reduce_spec={s.all_reduce_spec}")
    if s.datasets_num_private_threads:
        argv.append(f"--datasets_num_private_threads={s.datasets_num_private_threads}")
    if s.data_dir:
        argv += [f"--data_dir={s.data_dir}", f"--data_name={s.data_name}"]
    if s.display_every:
        argv.append(f"--display_every={s.display_every}")
    argv += [f"--model={model}", f"--batch_size={s.batch_per_worker}"]
    if variable_update != "horovod":
        argv.append(f"--num_gpus={s.num_gpus}")
    argv.append(f"--xla={_bool(s.xla)}")
    if s.warmup_steps is not None:
        argv.append(f"--num_warmup_batches={s.warmup_steps}")
    if s.steps is not None:
        argv.append(f"--num_batches={s.steps}")
    return argv


def tf_cnn_benchmarks_argv(point: Any, *, python: str = "python", data_dir: str | None = None,
                           script: str | None = None) -> list[str]:
    """The argv of one worker of a sweep point (repro.results.record.Settings) under mpirun + Horovod.

    The device is point.extra["device"] when set, else gpu unless the data format is NHWC (tf_cnn's
    CPU layout); the script path is point.extra["script"] when set. A data_dir of "synthetic" (or
    none) runs on synthetic data.
    """
    extra = dict(getattr(point, "extra", {}) or {})
    device = str(extra.get("device") or ("cpu" if point.data_format == "NHWC" else "gpu"))
    data = data_dir if data_dir and data_dir != "synthetic" else None
    settings = TfCnnSettings(
        model=str(point.model), batch_per_worker=int(point.batch_per_worker), warmup_steps=point.warmup_steps,
        steps=point.steps, xla=bool(point.xla), fp16=point.precision == "fp16", data_format=point.data_format,
        data_dir=data, horovod=True, device=device, local_parameter_device=device,
        datasets_num_private_threads=extra.get("datasets_num_private_threads"),
    )
    return tf_cnn_argv(settings, python=python, script=str(extra.get("script") or script or SCRIPT))


SUMMARY = "TensorFlow's tf_cnn_benchmarks.py under Horovod (the program of seeds 000 and 003)"

SPEC = WorkloadSpec(
    name="tf_cnn_benchmarks",
    summary=SUMMARY,
    framework="tensorflow",
    kind="throughput",
    module=None,
    output="tf_cnn_benchmarks",
    models=tuple(sorted(MODELS)),
    options=(
        Option("model", str, "resnet50", "the network", choices=tuple(sorted(MODELS)), setting="model", sweep=True),
        Option("batch_size", int, 64, "per worker", minimum=1, setting="batch_per_worker", sweep=True),
        Option("data", str, "synthetic", "'synthetic' or a directory of ImageNet TFRecords", setting="data"),
        Option("precision", str, "fp32", "--use_fp16 for fp16", choices=("fp32", "fp16"), setting="precision",
               sweep=True),
        Option("xla", bool, False, "--xla", setting="xla", sweep=True),
        Option("data_format", str, None, "NCHW (GPU) or NHWC (CPU)", choices=("NHWC", "NCHW"),
               setting="data_format"),
        Option("warmup_steps", int, None, "--num_warmup_batches", minimum=0, setting="warmup_steps"),
        Option("steps", int, None, "--num_batches", minimum=1, setting="steps"),
    ),
)
