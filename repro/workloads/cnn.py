"""CNN training throughput (images/sec), tf_cnn_benchmarks style, with Horovod.

    mpirun -np 2 python -m repro.workloads.cnn --model resnet50 --batch-size 32 [--data synthetic|DIR]
        [--precision fp32|fp16] [--xla] [--data-format NHWC|NCHW] [--warmup-steps 10] [--steps 100]

Synthetic data is one random batch of the dataset's shape, generated once and reused every step.
A directory holds ImageNet-format TFRecords (`image/encoded` JPEG, `image/class/label` int64):
files `train-*`, else any `*.tfrecord*`; images are decoded and resized to the model's image size.
Every step is timed on every rank with time.perf_counter, from fetching the batch to the loss being
on the host (which waits for the step, its gradient all-reduce and its update); warm-up steps are
kept apart. Variables are broadcast from rank 0 after the first step (its optimizer slots exist then),
outside any timed interval.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import _common as common
from . import models, torch_models
from ._common import WorkloadError, run_main
from .comm import DIST_BACKEND
from .data import tfrecord_dataset, tfrecord_files
from .spec import ArgumentParser, Option, WorkloadSpec

PT_PRECISIONS = ("fp32", "fp16", "bf16")

# The cnn family: its options once, one program per framework (torch_cnn is its PyTorch program's older name)
SPEC = WorkloadSpec(
    name="cnn",
    summary="CNN training throughput (images/sec), tf_cnn_benchmarks style: TensorFlow with Horovod, or PyTorch DDP.",
    kind="throughput",
    programs={"tensorflow": "repro.workloads.cnn", "pytorch": "repro.workloads.torch_cnn"},
    models=tuple(dict.fromkeys((*models.MODELS, *torch_models.MODELS))),
    options=(
        Option("model", str, "resnet50", "the network", choices=models.MODELS, setting="model", sweep=True,
               on={"pytorch": {"choices": torch_models.MODELS}}),
        Option("batch_size", int, 32, "per worker", minimum=1, setting="batch_per_worker", sweep=True),
        Option("image_size", int, None, "default: 224, 299 inception3, 32 CIFAR", minimum=1, bench=False),
        Option("num_classes", int, None, "default: 1000, 10 for CIFAR models", minimum=1, bench=False),
        Option("data", str, "synthetic", "'synthetic' or a directory of ImageNet TFRecords", setting="data",
               on={"pytorch": {"help": "synthetic only (one random batch, reused)", "choices": ("synthetic",)}}),
        Option("label_offset", int, 0, "subtracted from TFRecord labels (1: 1-based labels)", bench=False,
               frameworks=("tensorflow",)),
        Option("precision", str, "fp32", "fp16: mixed_float16 + loss scaling", choices=("fp32", "fp16"),
               setting="precision", sweep=True,
               on={"pytorch": {"help": "fp16/bf16: torch.autocast mixed precision", "choices": PT_PRECISIONS}}),
        Option("xla", bool, False, "compile forward and loss with XLA", setting="xla", sweep=True,
               on={"pytorch": {"help": "compile the model with torch.compile"}}),
        Option("data_format", str, "NHWC", "NCHW needs a GPU", choices=("NHWC", "NCHW"), setting="data_format",
               on={"pytorch": {"default": "NCHW", "help": "NHWC: channels_last memory format",
                               "choices": ("NCHW", "NHWC")}}),
        Option("warmup_steps", int, 10, "steps before the measured ones", minimum=0, setting="warmup_steps"),
        Option("steps", int, 100, "measured steps after warm-up", minimum=1, setting="steps"),
        DIST_BACKEND,
        Option("learning_rate", float, 0.01, "SGD learning rate", minimum=0, exclusive_minimum=True, bench=False),
        Option("momentum", float, 0.9, "SGD momentum", bench=False),
        *common.COMMON_OPTIONS,
    ),
)
PROGRAM = SPEC.program("tensorflow")


def build_parser() -> ArgumentParser:
    """The workload's flags, from its SPEC (the TensorFlow program's)."""
    return PROGRAM.parser(common.add_output_argument)


def resolve_settings(args: Any) -> dict[str, Any]:
    """Check the flags that need no TensorFlow and fill in model-dependent defaults."""
    image_size = args.image_size or models.default_image_size(args.model)
    if image_size < models.min_image_size(args.model):
        raise WorkloadError(f"{args.model} needs --image-size >= {models.min_image_size(args.model)}, got {image_size}")
    data = args.data
    files: list[str] = []
    if data != "synthetic":
        if not os.path.isdir(data):
            raise WorkloadError(f"--data {data}: not a directory (and not 'synthetic')")
        files = tfrecord_files(data)
        if not files:
            raise WorkloadError(f"--data {data}: no train-* or *.tfrecord* files in it")
        data = os.path.abspath(data)
    return {
        "model": args.model,
        "batch_per_worker": args.batch_size,
        "image_size": image_size,
        "num_classes": args.num_classes or models.default_num_classes(args.model),
        "data": data,
        "data_files": len(files),
        "label_offset": args.label_offset,
        "precision": args.precision,
        "xla": bool(args.xla),
        "data_format": args.data_format,
        "warmup_steps": args.warmup_steps,
        "steps": args.steps,
        "learning_rate": args.learning_rate,
        "momentum": args.momentum,
        "optimizer": "sgd_momentum",
        "seed": args.seed,
        "_files": files,
    }


def _optimizer_variables(optimizer: Any) -> list[Any]:
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def throughput_metrics(ranks: Sequence[dict[str, Any]], params: int, losses: Sequence[float]) -> dict[str, Any]:
    """images/sec as repro defines it (docs/statistics.md): global batch x steps / the largest per-rank total
    step time; each rank's own batch / mean step time beside it, and step-time figures."""
    per_rank = []
    for r in ranks:
        mean = common.mean(r["step_times"])
        per_rank.append(r["items_per_step"] / mean if mean else 0.0)
    slowest = [max(t) for t in zip(*[r["step_times"] for r in ranks])]  # noqa: B905 (equal lengths)
    total_items = sum(r["items_per_step"] for r in ranks)
    steps = min((len(r["step_times"]) for r in ranks), default=0)
    longest = max((sum(r["step_times"][:steps]) for r in ranks), default=0.0)
    return {
        "unit": "images/sec",
        "images_per_sec": total_items * steps / longest if longest else None,
        "images_per_sec_per_worker": per_rank,
        "step_time_median": common.median(slowest),
        "step_time_mean": common.mean(slowest),
        "warmup_time_total": max((sum(r["warmup_times"]) for r in ranks), default=0.0),
        "params": params,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
    }


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, train for warm-up + measured steps, emit the result (rank 0).

    One function on purpose: the program reads top to bottom, as tf_cnn_benchmarks' and Horovod's do."""
    args = build_parser().parse_args(argv)
    settings = resolve_settings(args)
    files = settings.pop("_files")
    world = common.start(args.intra_threads, args.inter_threads)
    if args.data_format == "NCHW" and not world.gpu:
        raise WorkloadError("NCHW needs a GPU; use NHWC on CPU")

    import horovod.tensorflow as hvd
    import tensorflow as tf

    tf.random.set_seed(args.seed)  # same initial weights everywhere (broadcast makes sure anyway)
    if args.precision == "fp16":
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
    channels_first = args.data_format == "NCHW"
    model = models.build(args.model, settings["image_size"], settings["num_classes"], args.data_format)
    optimizer: Any = tf.keras.optimizers.SGD(learning_rate=args.learning_rate, momentum=args.momentum)
    if args.precision == "fp16":
        optimizer = tf.keras.mixed_precision.LossScaleOptimizer(optimizer)
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    batch = args.batch_size

    if files:
        dataset = tfrecord_dataset(
            files,
            world.rank,
            world.size,
            batch,
            settings["image_size"],
            args.label_offset,
            channels_first,
            args.seed,
        )
        iterator = iter(dataset)

        def next_batch() -> tuple[Any, Any]:
            return next(iterator)
    else:
        side = settings["image_size"]
        shape = [batch, 3, side, side] if channels_first else [batch, side, side, 3]
        images = tf.random.uniform(shape, seed=args.seed + world.rank)
        labels = tf.random.uniform([batch], 0, settings["num_classes"], dtype=tf.int32, seed=args.seed + world.rank)

        def next_batch() -> tuple[Any, Any]:
            return images, labels

    def forward(x: Any, y: Any) -> Any:
        logits = model(x, training=True)
        return loss_object(y, tf.cast(logits, tf.float32))

    forward_fn = tf.function(forward, jit_compile=True) if args.xla else forward
    mixed = args.precision == "fp16"

    @tf.function
    def train_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = forward_fn(x, y)
            scaled = optimizer.get_scaled_loss(loss) if mixed else loss
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(scaled, model.trainable_variables)
        if mixed:
            grads = optimizer.get_unscaled_gradients(grads)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # noqa: B905
        return loss

    warmup_times: list[float] = []
    step_times: list[float] = []
    losses: list[float] = []
    total = args.warmup_steps + args.steps
    clock = time.perf_counter
    shown = -1.0  # when rank 0 last printed a step line: at most 2 a second, the first and the last always
    for step in range(total):
        began = clock()
        x, y = next_batch()
        loss = float(train_step(x, y).numpy())  # .numpy() waits for the step: the timing is synchronous
        elapsed = clock() - began
        (warmup_times if step < args.warmup_steps else step_times).append(elapsed)
        losses.append(loss)
        if step == 0:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(_optimizer_variables(optimizer), root_rank=0)
        if world.rank == 0 and (step in (0, total - 1) or clock() - shown >= 0.5):
            shown = clock()  # repro shows it as the point's progress and its ETA from these step times
            phase = "warm-up" if step < args.warmup_steps else "measured"
            common.progress(f"[{step + 1}/{total}] step ({phase}) loss {loss:.4f} {elapsed * 1000:.1f} ms")

    params = int(model.count_params())
    settings.update(
        global_batch=batch * world.size,
        params=params,
        **common.runtime_settings(world),
    )
    record = common.rank_record(world, warmup_times, step_times, batch)
    return common.finish(
        "cnn", world, settings, record, lambda ranks: throughput_metrics(ranks, params, losses), args.output
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
