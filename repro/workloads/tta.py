"""Time to accuracy (MLBench's recipe): synchronous SGD until the held-out top-1 reaches a target.

    mpirun -np 2 python -m repro.workloads.tta --dataset digits|cifar10:DIR|imagenet:DIR
        [--target-accuracy 0.95] [--max-epochs N] [--max-seconds S] [--batch-size B] [--learning-rate LR]

Recipe: SGD with Nesterov momentum 0.9 and L2 weight decay on the kernels (conv and dense weights);
linear scaling rule lr = base * k for k workers, reached by a linear warm-up from base over the first
--warmup-epochs (default log2 k, 0 for one worker), updated every step; then the rate is multiplied by
--decay-factor once --plateau-patience epochs pass without a lower validation loss. Each epoch the
training set is shuffled with the epoch's seed and split into disjoint, equal shards, one per rank
(at most k-1 examples left out per epoch, different ones each time). Gradients are averaged
explicitly with hvd.grouped_allreduce, so compute (forward, backward, update) and communication are
timed apart; step time = data + compute + communication (the latter includes waiting for the
slowest rank). Validation covers the whole held-out set, which is never trained on: each rank
evaluates a disjoint part and the sums are all-reduced.
The run stops at the end of the first epoch whose validation top-1 >= the target, or when
--max-epochs or --max-seconds (checked after each epoch) runs out. Elapsed time counts from the
first training step (model building and data loading excluded) and includes validation.

The schedule and the result's bookkeeping are repro.workloads.tta_recipe's (shared with torch_tta).

Datasets: `digits` (scikit-learn's bundled 8x8 digits, 1797 images, stratified hold-out with a
fixed seed), `cifar10:DIR` (python pickle batches; data_batch_* trains, test_batch validates; random
crop and flip), `imagenet:DIR` (TFRecords train-* and validation-*; resized, random flip).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

from . import _common as common
from . import models
from ._common import WorkloadError, run_main
from .comm import DIST_BACKEND
from .data import ArrayData, RecordData, load_cifar10, load_digits, load_imagenet
from .spec import ArgumentParser, Option, WorkloadSpec
from .torch_models import CIFAR_RESNET_BLOCKS
from .tta_recipe import Plateau, check_shards, curve_entry, default_warmup_epochs, learning_rate, tta_metrics

TORCH_MODELS = tuple(CIFAR_RESNET_BLOCKS)  # the PyTorch program's CIFAR ResNets

DATASET_DEFAULTS: dict[str, dict[str, Any]] = {
    "digits": {
        "model": "digits_cnn",
        "batch_size": 32,
        "learning_rate": 0.05,
        "target_accuracy": 0.95,
        "max_epochs": 40,
        "weight_decay": 1e-4,
    },
    "cifar10": {
        "model": "resnet20",
        "batch_size": 128,
        "learning_rate": 0.1,
        "target_accuracy": 0.80,
        "max_epochs": 164,
        "weight_decay": 1e-4,
    },
    "imagenet": {
        "model": "resnet50",
        "batch_size": 32,
        "learning_rate": 0.0125,
        "target_accuracy": 0.75,
        "max_epochs": 90,
        "weight_decay": 1e-4,
    },
}
# Keep per-epoch shard index lists in the result only for small in-memory sets (they prove disjointness).
_RECORD_SHARDS_UP_TO = 5000

def parse_dataset(text: str) -> tuple[str, str | None]:
    """'digits' -> ('digits', None); 'cifar10:/data/c' -> ('cifar10', '/data/c')."""
    name, _, directory = text.partition(":")
    if name not in DATASET_DEFAULTS:
        raise WorkloadError(f"unknown dataset {text!r}: use digits, cifar10:DIR or imagenet:DIR")
    if name == "digits" and directory:
        raise WorkloadError("--dataset digits takes no directory (it is bundled with scikit-learn)")
    if name != "digits" and not directory:
        raise WorkloadError(f"--dataset {name} needs a directory: {name}:DIR")
    return name, directory or None


# --------------------------------------------------------------------------- the run


# The tta family: its options once, one program per framework (torch_tta is its PyTorch program's older name)
SPEC = WorkloadSpec(
    name="tta",
    summary="Time to accuracy (MLBench's recipe): synchronous SGD until the held-out top-1 reaches a target.",
    kind="tta",
    programs={"tensorflow": "repro.workloads.tta", "pytorch": "repro.workloads.torch_tta"},
    models=("digits_cnn", *models.MODELS),
    options=(
        Option("dataset", str, "digits", "digits, cifar10:DIR or imagenet:DIR",
               pattern=r"digits|(cifar10|imagenet):.+", pattern_help="digits, cifar10:DIR or imagenet:DIR",
               on={"pytorch": {"help": "digits or cifar10:DIR", "pattern": r"digits|cifar10:.+",
                               "pattern_help": "digits or cifar10:DIR"}}),
        Option("model", str, None, "default: digits_cnn, resnet20 (cifar10), resnet50 (imagenet)",
               choices=("digits_cnn", *models.MODELS), setting="model", sweep=True,
               on={"pytorch": {"default": "resnet20", "help": "a CIFAR ResNet", "choices": TORCH_MODELS}}),
        Option("batch_size", int, None, "per worker (default: the dataset's)", minimum=1, setting="batch_per_worker",
               sweep=True),
        Option("learning_rate", float, None, "base rate for one worker", minimum=0, exclusive_minimum=True),
        Option("momentum", float, 0.9, "SGD momentum", bench=False),
        Option("weight_decay", float, None, "L2 weight decay", bench=False),
        Option("warmup_epochs", float, None, "default log2(workers)", minimum=0, bench=False),
        Option("decay_factor", float, 0.1, "learning-rate factor on a plateau", minimum=0, exclusive_minimum=True,
               bench=False),
        Option("plateau_patience", int, 2, "epochs without improvement before decaying", minimum=1, bench=False),
        Option("target_accuracy", float, None, "validation top-1 to reach", minimum=0, exclusive_minimum=True),
        Option("max_epochs", int, None, "stop after this many epochs", minimum=1),
        Option("max_seconds", float, 3600.0, "stop after this much training time", minimum=0, exclusive_minimum=True),
        Option("validation_fraction", float, 0.2, "digits: share held out", bench=False),
        Option("split_seed", int, 0, "digits: seed of the hold-out split", bench=False),
        Option("image_size", int, 224, "imagenet only", minimum=1, bench=False, frameworks=("tensorflow",)),
        Option("label_offset", int, 0, "imagenet: subtracted from labels", bench=False, frameworks=("tensorflow",)),
        Option("train_examples", int, 0, "imagenet: records (0: count)", minimum=0, bench=False,
               frameworks=("tensorflow",)),
        DIST_BACKEND,
        *common.COMMON_OPTIONS,
    ),
)
PROGRAM = SPEC.program("tensorflow")


def build_parser() -> ArgumentParser:
    """The workload's flags (None means: the dataset's default), from its SPEC."""
    return PROGRAM.parser(common.add_output_argument)


def resolve_settings(args: Any) -> dict[str, Any]:
    """Flags with the dataset's defaults filled in (worker count still to come)."""
    name, directory = parse_dataset(args.dataset)
    defaults = DATASET_DEFAULTS[name]

    def pick(key: str) -> Any:
        value = getattr(args, key)
        return defaults[key] if value is None else value

    model = pick("model")
    if model not in (*models.MODELS, "digits_cnn"):
        raise WorkloadError(f"unknown --model {model!r}: choose from digits_cnn, {', '.join(models.MODELS)}")
    if (name == "digits") != (model == "digits_cnn"):
        raise WorkloadError(f"--model {model} does not fit --dataset {name} (digits goes with digits_cnn)")
    target = pick("target_accuracy")
    if target > 1:
        raise WorkloadError(f"--target-accuracy is a fraction (0..1], got {target}")
    return {
        "dataset": name,
        "data": os.path.abspath(directory) if directory else None,
        "model": model,
        "batch_per_worker": pick("batch_size"),
        "base_learning_rate": pick("learning_rate"),
        "momentum": args.momentum,
        "nesterov": True,
        "weight_decay": pick("weight_decay"),
        "decay_factor": args.decay_factor,
        "plateau_patience": args.plateau_patience,
        "target_accuracy": target,
        "max_epochs": pick("max_epochs"),
        "max_seconds": args.max_seconds,
        "seed": args.seed,
    }


def load_data(settings: dict[str, Any], args: Any) -> ArrayData | RecordData:
    """The dataset named in settings."""
    name, directory = settings["dataset"], settings["data"]
    if name == "digits":
        return load_digits(args.validation_fraction, args.split_seed)
    if name == "cifar10":
        return load_cifar10(directory)
    return load_imagenet(directory, args.image_size, args.label_offset, args.train_examples or None)


def build_model(settings: dict[str, Any], data: ArrayData | RecordData, num_classes: int) -> Any:
    """The model for the dataset."""
    if settings["model"] == "digits_cnn":
        return models.digits_cnn(num_classes)
    side = data.image_size if isinstance(data, RecordData) else int(data.x_train.shape[1])
    return models.build(settings["model"], side, num_classes, "NHWC")


class Trainer:
    """The model, the optimizer and the compiled compute / communicate / update / evaluate steps."""

    def __init__(self, model: Any, settings: dict[str, Any], num_classes: int, gpu: bool) -> None:
        import horovod.tensorflow as hvd
        import tensorflow as tf

        self.model = model
        self.gpu = gpu
        variables = model.trainable_variables
        decays = [len(v.shape) > 1 for v in variables]  # kernels; not biases or batch-norm scales
        weight_decay = settings["weight_decay"]
        self.lr = tf.Variable(settings["base_learning_rate"], trainable=False, dtype=tf.float32)
        optimizer = tf.keras.optimizers.SGD(learning_rate=self.lr, momentum=settings["momentum"], nesterov=True)
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def compute(x: Any, y: Any) -> Any:
            with tf.GradientTape() as tape:
                loss = loss_object(y, model(x, training=True))
            return loss, tape.gradient(loss, variables)

        @tf.function
        def communicate(grads: Any) -> Any:
            return hvd.grouped_allreduce(list(grads), op=hvd.Average)

        @tf.function
        def update(grads: Any) -> None:
            if weight_decay:
                grads = [g + weight_decay * v if d else g for g, v, d in zip(grads, variables, decays)]  # noqa: B905
            optimizer.apply_gradients(zip(grads, variables))  # noqa: B905

        @tf.function
        def evaluate(x: Any, y: Any) -> Any:
            logits = model(x, training=False)
            y = tf.cast(y, tf.int32)
            losses = tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            top1 = tf.reduce_sum(tf.cast(tf.math.in_top_k(y, logits, 1), tf.float64))
            top5 = tf.reduce_sum(tf.cast(tf.math.in_top_k(y, logits, min(5, num_classes)), tf.float64))
            count = tf.cast(tf.size(y), tf.float64)
            return tf.stack([tf.reduce_sum(tf.cast(losses, tf.float64)), top1, top5, count])

        self.compute, self.communicate, self.update, self.evaluate = compute, communicate, update, evaluate

    def _sync(self, tensor: Any) -> None:
        # CPU calls return finished; on a GPU one scalar to the host waits for the stream
        if self.gpu:
            float(tensor[(0,) * len(tensor.shape)].numpy())

    def train_epoch(self, batches: Iterator[tuple[Any, Any]], rates: Sequence[float]) -> dict[str, Any]:
        """One step per rate; returns loss sum, examples, step times and the time split of the epoch."""
        clock = time.perf_counter
        out: dict[str, Any] = {"loss_sum": 0.0, "seen": 0, "compute_s": 0.0, "comm_s": 0.0, "data_s": 0.0}
        out["step_times"] = []
        for rate in rates:
            self.lr.assign(rate)
            t0 = clock()
            x, y = next(batches)
            t1 = clock()
            loss, grads = self.compute(x, y)
            self._sync(grads[0])
            t2 = clock()
            grads = self.communicate(grads)
            self._sync(grads[0])
            t3 = clock()
            self.update(grads)
            loss_value = float(loss.numpy())
            self._sync(self.model.trainable_variables[0])
            t4 = clock()
            out["data_s"] += t1 - t0
            out["compute_s"] += (t2 - t1) + (t4 - t3)
            out["comm_s"] += t3 - t2
            out["step_times"].append(t4 - t0)
            out["loss_sum"] += loss_value * len(y)
            out["seen"] += len(y)
        return out

    def validate(self, batches: Iterator[tuple[Any, Any]]) -> list[float]:
        """[loss sum, top-1 hits, top-5 hits, examples] over this rank's part of the held-out set."""
        totals = [0.0, 0.0, 0.0, 0.0]
        for x, y in batches:
            totals = [a + float(b) for a, b in zip(totals, self.evaluate(x, y).numpy())]  # noqa: B905
        return totals


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, train until the target or a limit, emit the result (rank 0).

    One function on purpose: the program reads top to bottom, as Horovod's examples do."""
    args = build_parser().parse_args(argv)
    settings = resolve_settings(args)
    world = common.start(args.intra_threads, args.inter_threads)
    import horovod.tensorflow as hvd
    import numpy as np
    import tensorflow as tf

    k = world.size
    warmup_epochs = default_warmup_epochs(k) if args.warmup_epochs is None else args.warmup_epochs
    base, batch = settings["base_learning_rate"], settings["batch_per_worker"]
    settings.update(
        workers=k, global_batch=batch * k, peak_learning_rate=base * k, warmup_epochs=warmup_epochs,
        **common.runtime_settings(world),
    )  # fmt: skip
    data = load_data(settings, args)
    num_classes = 1000 if isinstance(data, RecordData) else int(np.max(data.y_train)) + 1
    tf.random.set_seed(args.seed)
    model = build_model(settings, data, num_classes)
    trainer = Trainer(model, settings, num_classes, world.gpu)
    # Same starting point everywhere (optimizer slots start at zero on every rank).
    hvd.broadcast_variables(model.variables, root_rank=0)

    plateau = Plateau(args.decay_factor, args.plateau_patience)
    steps = data.steps(k, batch)
    curve: list[dict[str, Any]] = []
    step_times: list[float] = []
    shard_record: dict[str, Any] = {}
    reached_at: float | None = None
    began = time.perf_counter()
    epoch = 0
    stop = False
    while not stop:
        shard = data.shard(epoch, args.seed, world.rank, k)
        if epoch == 0 and shard is not None:
            shards = common.gather([int(i) for i in shard])
            shard_record = check_shards(shards, data.train_size)
            if data.train_size <= _RECORD_SHARDS_UP_TO:
                shard_record["positions"] = shards
        rates = [learning_rate(epoch + s / steps, base, k, warmup_epochs, plateau.multiplier) for s in range(steps)]
        trained = trainer.train_epoch(data.train_batches(epoch, args.seed, world.rank, k, batch), rates)
        step_times += trained["step_times"]
        val_start = time.perf_counter()
        totals = trainer.validate(data.validation_batches(world.rank, k, max(batch, 256)))
        validation_s = time.perf_counter() - val_start
        local = [*totals, trained["loss_sum"], trained["seen"]]
        local += [trained["compute_s"], trained["comm_s"], trained["data_s"], validation_s]
        sums = hvd.allreduce(tf.constant(local, tf.float64), op=hvd.Sum).numpy().tolist()
        epoch += 1
        elapsed = time.perf_counter() - began
        entry = curve_entry(epoch, elapsed, rates[-1], sums, k)
        curve.append(entry)
        if epoch > warmup_epochs and entry["val_loss"] is not None:
            plateau.update(entry["val_loss"])
        reached = entry["val_top1"] >= settings["target_accuracy"]
        if reached:
            reached_at = elapsed
        # rank 0's clock decides the time limit for everyone
        limit = epoch >= settings["max_epochs"] or elapsed >= settings["max_seconds"]
        stop = bool(hvd.broadcast_object(reached or limit, root_rank=0))
        if world.rank == 0:
            common.log(
                f"tta: epoch {epoch} top1 {entry['val_top1']:.4f} val_loss {entry['val_loss']:.4f} "
                f"lr {rates[-1]:.4f} elapsed {elapsed:.1f}s"
            )

    settings.update(steps_per_epoch=steps, num_classes=num_classes, params=int(model.count_params()))
    metrics = tta_metrics(settings["target_accuracy"], reached_at, epoch, curve, data, shard_record)
    record = common.rank_record(world, [], step_times, batch)
    return common.finish("tta", world, settings, record, metrics, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    sys.exit(main())
