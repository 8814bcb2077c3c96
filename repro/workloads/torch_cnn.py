"""CNN training throughput (images/sec) with PyTorch DistributedDataParallel, the counterpart of `cnn`.

    torchrun --nproc-per-node 2 -m repro.workloads.torch_cnn --model resnet50 --batch-size 32
        [--precision fp32|fp16|bf16] [--xla] [--data-format NCHW|NHWC] [--warmup-steps 10] [--steps 100]
        [--dist-backend auto|gloo|nccl|mpi]
    (or mpirun / srun: the rank variables are mapped, repro.workloads._torch)

Synthetic data, as `cnn`: one random batch of the model's shape per rank, made once and reused every step.
fp16 and bf16 are automatic mixed precision (torch.autocast; fp16 with a gradient scaler); --data-format
NHWC trains in channels_last memory format; --xla compiles the DDP model with torch.compile (the counterpart
of TensorFlow's XLA; compilation happens in the first steps, so give warm-up steps). Every step is timed on
every rank from fetching the batch to the loss being on the host, with the device synchronized at both
step boundaries (repro.workloads.timing): on a GPU the step's time includes the work it queued. images/sec
is defined as `cnn` defines it (global batch x steps / the slowest rank's total step time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _common as common
from . import _torch, cnn, timing
from . import torch_models as models
from ._common import WorkloadError, run_main
from .cnn import throughput_metrics
from .comm import resolve_backend
from .spec import ArgumentParser

# the cnn family's PyTorch program, under the name records and scripts from before the family use
SPEC = cnn.SPEC.program("pytorch").alias("torch_cnn")


def build_parser() -> ArgumentParser:
    """The workload's flags, from its SPEC."""
    return SPEC.parser(common.add_output_argument)


def resolve_settings(args: Any) -> dict[str, Any]:
    """Check the flags that need no torch and fill in model-dependent defaults."""
    image_size = args.image_size or models.default_image_size(args.model)
    if image_size < models.min_image_size(args.model):
        raise WorkloadError(f"{args.model} needs --image-size >= {models.min_image_size(args.model)}, got {image_size}")
    return {
        "model": args.model,
        "batch_per_worker": args.batch_size,
        "image_size": image_size,
        "num_classes": args.num_classes or models.default_num_classes(args.model),
        "data": "synthetic",
        "precision": args.precision,
        "xla": bool(args.xla),
        "compile": "torch.compile" if args.xla else None,
        "data_format": args.data_format,
        "channels_last": args.data_format == "NHWC",
        "warmup_steps": args.warmup_steps,
        "steps": args.steps,
        "learning_rate": args.learning_rate,
        "momentum": args.momentum,
        "optimizer": "sgd_momentum",
        "seed": args.seed,
        "timing": timing.METHOD,
    }


def backend_for(requested: str, gpu: bool) -> str:
    """The torch.distributed backend: the one asked for, or the auto rule's (repro.workloads.comm)."""
    return resolve_backend(requested, gpu)


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, train for warm-up + measured steps, emit the result (rank 0).

    One function on purpose: the program reads top to bottom, as PyTorch's DDP examples do."""
    args = build_parser().parse_args(argv)
    settings = resolve_settings(args)
    import torch

    backend = backend_for(args.dist_backend, torch.cuda.is_available())
    world, device = _torch.start(backend, args.intra_threads, args.inter_threads)
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    if args.precision == "bf16" and world.gpu and not torch.cuda.is_bf16_supported():
        raise WorkloadError(f"{world.device} does not support bf16; use fp16 or fp32")
    torch.manual_seed(args.seed)  # same initial weights everywhere (DDP broadcasts rank 0's anyway)
    memory_format = torch.channels_last if settings["channels_last"] else torch.contiguous_format
    model = models.build(args.model, settings["num_classes"]).to(device, memory_format=memory_format)
    params = sum(p.numel() for p in model.parameters())
    ddp = DDP(model, device_ids=[device.index] if world.gpu else None)
    net = torch.compile(ddp) if args.xla else ddp
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=args.momentum)
    amp_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler(device.type, enabled=args.precision == "fp16")

    side, batch = settings["image_size"], args.batch_size
    generator = torch.Generator().manual_seed(args.seed + world.rank)
    images = torch.rand(batch, 3, side, side, generator=generator).to(device, memory_format=memory_format)
    labels = torch.randint(0, settings["num_classes"], (batch,), generator=generator).to(device)

    def next_batch() -> tuple[Any, Any]:
        return images, labels

    def train_step() -> float:
        x, y = next_batch()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = F.cross_entropy(net(x).float(), y)
        scaler.scale(loss).backward()  # DDP all-reduces the gradients during backward
        scaler.step(optimizer)
        scaler.update()
        return float(loss.item())

    def after(number: int, total: int, loss: float, elapsed: float) -> None:
        if world.rank == 0 and number % 10 == 0:
            common.log(f"torch_cnn: step {number}/{total} loss {loss:.4f} {elapsed * 1000:.1f} ms")

    measured = timing.run_steps(lambda _index: train_step(), timing.device_of(torch, device), args.warmup_steps,
                                args.steps, after=after)
    warmup_times, step_times, losses = measured.warmup_times, measured.step_times, measured.losses

    settings.update(global_batch=batch * world.size, params=params, dist_backend=backend,
                    **common.runtime_settings(world))
    record = common.rank_record(world, warmup_times, step_times, batch)
    return _torch.finish("torch_cnn", world, settings, record,
                         lambda ranks: throughput_metrics(ranks, params, losses), args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    _torch.exit_process(main())
