"""tf_cnn_benchmarks (github.com/tensorflow/benchmarks): the program of seeds 000 and 003, as a workload spec.

repro does not ship the program; images check it out (repro.image.render's TfCnnBenchmarks block) and
repro.launch.tf_cnn_benchmarks builds its command line and reads its output.
"""

from __future__ import annotations

import re

from .spec import Option, WorkloadSpec

SUMMARY = "TensorFlow's tf_cnn_benchmarks.py under Horovod (the program of seeds 000 and 003)"

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


SPEC = WorkloadSpec(
    name="tf_cnn_benchmarks",
    summary=SUMMARY,
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


