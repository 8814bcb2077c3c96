"""What does repro's per-step timing and recording cost? A plain TensorFlow loop vs repro.workloads.cnn.

    python bench/workload_overhead.py [--model resnet20] [--batch-size 32] [--steps 50] [--repeats 5]

Both sides train the same model with the same step (SGD with momentum, hvd.DistributedGradientTape,
one worker, synthetic data generated once) with the same thread settings, in this one process (so
both share its TensorFlow runtime, allocator and CPU placement):
  plain  one wall clock around N steps, no per-step synchronisation, timing or recording;
  repro  repro.workloads.cnn.run(), throughput = batch * N / sum of its recorded step times.
Repeats alternate which side runs first. Prints both throughputs per repeat, their medians, the ratio
repro / plain of the medians and the geometric mean of the per-repeat ratios with its paired-t interval
(target: within 2%, i.e. >= 0.98; "unresolved" when the interval reaches both sides of it),
and how much slower repro's first warm-up step (tracing and optimising the graph) was than its median
measured step: the reason warm-up steps are recorded apart.
Figures only; nothing is asserted. On a loaded machine the run-to-run spread exceeds 2%: read the
per-repeat figures before the ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from repro.results.stats import goal_check  # noqa: E402  (after the path: run from a checkout)


class PlainLoop:
    """The bare loop: the model and its compiled step are built once and reused by every repeat."""

    def __init__(self, args: argparse.Namespace) -> None:
        import horovod.tensorflow as hvd
        import tensorflow as tf

        from repro.workloads import models

        self.args = args
        tf.random.set_seed(args.seed)
        side = models.default_image_size(args.model)
        classes = models.default_num_classes(args.model)
        model = models.build(args.model, side, classes)
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9)
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.images = tf.random.uniform([args.batch_size, side, side, 3], seed=args.seed)
        self.labels = tf.random.uniform([args.batch_size], 0, classes, dtype=tf.int32, seed=args.seed)

        @tf.function
        def train_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = loss_object(y, tf.cast(model(x, training=True), tf.float32))
            tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))  # noqa: B905
            return loss

        self.train_step = train_step

    def run(self) -> float:
        """images/sec: warm-up steps, then one wall clock around `steps` steps, one sync at the end."""
        args = self.args
        loss = None
        for _ in range(args.warmup_steps):
            loss = self.train_step(self.images, self.labels)
        if loss is not None:
            loss.numpy()
        began = time.perf_counter()
        for _ in range(args.steps):
            loss = self.train_step(self.images, self.labels)
        loss.numpy()
        return args.batch_size * args.steps / (time.perf_counter() - began)


def run_repro(args: argparse.Namespace, warmup_ratios: list[float]) -> float:
    """repro.workloads.cnn, called in this process; throughput over its recorded step times."""
    from repro.workloads import cnn

    argv = ["--model", args.model, "--batch-size", str(args.batch_size), "--seed", str(args.seed)]
    argv += ["--warmup-steps", str(args.warmup_steps), "--steps", str(args.steps)]
    argv += ["--intra-threads", str(args.intra_threads), "--inter-threads", str(args.inter_threads)]
    with contextlib.redirect_stdout(io.StringIO()):  # the REPRO_RESULT line; run() returns the result too
        result = cnn.run(argv)
    rank = result["ranks"][0]
    warmup_ratios.append(rank["warmup_times"][0] / statistics.median(rank["step_times"]))
    return rank["items_per_step"] * len(rank["step_times"]) / sum(rank["step_times"])


def main() -> int:
    """Interleaved repeats of both sides; print throughputs and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--intra-threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--inter-threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import horovod.tensorflow as hvd
    import tensorflow as tf

    hvd.init()
    # the same values repro.workloads.cnn sets (setting an equal value again is allowed)
    tf.config.threading.set_intra_op_parallelism_threads(args.intra_threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.inter_threads)
    plain_loop = PlainLoop(args)

    print(
        f"model {args.model}, batch {args.batch_size}, {args.warmup_steps} warm-up + {args.steps} steps, "
        f"intra {args.intra_threads} inter {args.inter_threads}, {args.repeats} interleaved repeats"
    )
    plain: list[float] = []
    repro: list[float] = []
    warmup_ratios: list[float] = []
    for repeat in range(args.repeats):
        order = [("plain", lambda _a: plain_loop.run(), plain), ("repro", lambda a: run_repro(a, warmup_ratios), repro)]
        if repeat % 2:
            order.reverse()
        for name, runner, sink in order:
            value = runner(args)
            sink.append(value)
            print(f"  repeat {repeat + 1} {name:5s} {value:8.2f} images/sec", flush=True)
    plain_median, repro_median = statistics.median(plain), statistics.median(repro)
    ratio = repro_median / plain_median
    print(f"plain loop          median {plain_median:8.2f} images/sec")
    print(f"repro.workloads.cnn median {repro_median:8.2f} images/sec")
    print(f"ratio repro/plain   {ratio:.4f} ({(ratio - 1) * 100:+.2f}%; target within 2%)")
    print(f"first warm-up step / median measured step: {statistics.median(warmup_ratios):.1f}x "
          f"(per repeat: {', '.join(f'{r:.1f}' for r in warmup_ratios)})")
    # the pair of runs in one repeat ran back to back: their ratio is less exposed to load drifting, and the
    # geometric mean of the pair ratios with its paired-t interval says whether the pairs settle the goal
    print(goal_check(list(zip(plain, repro)), 0.98).line("paired ratio repro/plain, geometric mean"))  # noqa: B905
    print(f"  per pair: {', '.join(f'{r / p:.3f}' for r, p in zip(repro, plain))}")  # noqa: B905
    return 0


if __name__ == "__main__":
    sys.exit(main())
