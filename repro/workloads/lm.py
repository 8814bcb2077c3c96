"""Transformer training throughput (tokens/sec, MFU) of a Llama-style decoder with PyTorch DDP or FSDP2.

    torchrun --nproc-per-node 2 -m repro.workloads.lm --model tiny|llama3-1b|llama3-3b|llama3-8b
        [--seq-len T] [--batch-size SEQUENCES] [--parallelism ddp|fsdp] [--precision fp32|bf16]
        [--activation-checkpointing] [--xla] [--warmup-steps 5] [--steps 20] [--dist-backend auto|gloo|nccl|mpi]
    (or mpirun / srun: the rank variables are mapped, repro.workloads._torch)

The model is repro.workloads.lm_net (shapes and FLOPs in lm_model); the tokens are synthetic: one seeded batch
of `--batch-size` sequences of `--seq-len` random token ids per rank (seed + rank), made once and reused, the
targets the inputs shifted by one. Each step is forward, cross-entropy, backward and an AdamW update.
ddp wraps the model in DistributedDataParallel (bf16: torch.autocast); fsdp shards every block and then the
whole model with FSDP2's `fully_shard` (bf16: a MixedPrecisionPolicy with bf16 parameters and float32 gradient
reduction). --activation-checkpointing recomputes each block in the backward pass; --xla compiles each block
with torch.compile (as torch_cnn's --xla does: give warm-up steps). Every step is timed on every rank with the
device synchronized at its boundaries (repro.workloads.timing); tokens/sec = global tokens per step x steps /
the slowest rank's total step time, as images/sec is defined for the CNNs. A non-finite loss fails the run.
"""

from __future__ import annotations

import math
import resource
from collections.abc import Sequence
from typing import Any

from . import _common as common
from . import _torch, lm_model, timing
from ._common import WorkloadError, run_main
from .spec import ArgumentParser, Option, WorkloadSpec

PRECISIONS = ("fp32", "bf16")
PARALLELISMS = ("ddp", "fsdp")
DIST_BACKENDS = ("auto", *_torch.BACKENDS)

SPEC = WorkloadSpec(
    name="lm",
    summary=__doc__.split("\n\n")[0],
    framework="pytorch",
    kind="lm",
    module="repro.workloads.lm",
    models=lm_model.MODELS,
    options=(
        Option("model", str, "tiny", "the preset (shapes only: Llama 3.2 1B/3B, Llama 3.1 8B; tiny for CPUs)",
               choices=lm_model.MODELS, setting="model", sweep=True),
        Option("batch_size", int, 4, "sequences per worker", minimum=1, setting="batch_per_worker", sweep=True),
        Option("seq_len", int, None, "tokens per sequence (default: 128 tiny, 2048 the Llama presets)", minimum=2),
        Option("parallelism", str, "ddp", "ddp: DistributedDataParallel; fsdp: FSDP2 fully_shard per block",
               choices=PARALLELISMS),
        Option("activation_checkpointing", bool, False, "recompute each block's activations in the backward pass"),
        Option("data", str, "synthetic", "synthetic only (seeded random token ids, reused)", choices=("synthetic",),
               setting="data"),
        Option("precision", str, None, "bf16: autocast (ddp) or a MixedPrecisionPolicy (fsdp); default bf16 on "
               "GPUs, fp32 on CPUs", choices=PRECISIONS, setting="precision", sweep=True),
        Option("xla", bool, False, "compile each block with torch.compile", setting="xla", sweep=True),
        Option("warmup_steps", int, 5, "steps before the measured ones", minimum=0, setting="warmup_steps"),
        Option("steps", int, 20, "measured steps after warm-up", minimum=1, setting="steps"),
        Option("dist_backend", str, "auto", "torch.distributed backend (auto: nccl on GPUs, gloo on CPUs)",
               choices=DIST_BACKENDS),
        Option("learning_rate", float, 3e-4, "AdamW learning rate", minimum=0, exclusive_minimum=True, bench=False),
        Option("nan_at_step", int, None, "a drill: make the loss NaN at this step (0-based) on the last rank",
               minimum=0, bench=False),
        *common.COMMON_OPTIONS,
    ),
)


def build_parser() -> ArgumentParser:
    """The workload's flags, from its SPEC."""
    return SPEC.parser(common.add_output_argument)


def resolve_settings(args: Any, gpu: bool) -> dict[str, Any]:
    """Every setting as it will run, with the model's numbers (no torch needed)."""
    shape = lm_model.PRESETS[args.model]
    seq_len = args.seq_len or lm_model.DEFAULT_SEQ_LEN[args.model]
    return {
        "model": args.model,
        "batch_per_worker": args.batch_size,
        "seq_len": seq_len,
        "tokens_per_worker_step": args.batch_size * seq_len,
        "parallelism": args.parallelism,
        "activation_checkpointing": bool(args.activation_checkpointing),
        "data": "synthetic",
        "precision": args.precision or ("bf16" if gpu else "fp32"),
        "xla": bool(args.xla),
        "compile": "torch.compile per block" if args.xla else None,
        "warmup_steps": args.warmup_steps,
        "steps": args.steps,
        "learning_rate": args.learning_rate,
        "optimizer": "adamw",
        "seed": args.seed,
        "shape": {"dim": shape.dim, "layers": shape.layers, "heads": shape.heads, "kv_heads": shape.kv_heads,
                  "ffn_hidden": shape.ffn_hidden, "vocab": shape.vocab, "rope_theta": shape.rope_theta,
                  "tied_embeddings": shape.tied},
        "params": shape.params(),
        "flops_per_token": shape.flops_per_token(seq_len),
        "flops_convention": lm_model.FLOPS_CONVENTION,
        "timing": timing.METHOD,
    }


def lm_metrics(ranks: Sequence[dict[str, Any]], settings: dict[str, Any], device: str,
               losses: Sequence[float]) -> dict[str, Any]:
    """tokens/sec (global and per worker), FLOPs per token, MFU where the device's peak is known, peak memory per
    rank, first and last loss (pure: from the gathered rank records)."""
    steps = min((len(r["step_times"]) for r in ranks), default=0)
    longest = max((sum(r["step_times"][:steps]) for r in ranks), default=0.0)
    tokens = sum(r["items_per_step"] for r in ranks)
    tps = tokens * steps / longest if longest else None
    per_device = tps / len(ranks) if tps else None
    flops = settings["flops_per_token"]
    peak = lm_model.peak_flops(device, settings["precision"])
    memory = [r.get("peak_memory_bytes") for r in ranks]
    windows = [r["step_times"][:steps] for r in ranks]
    return {
        "unit": "tokens/sec",
        "tokens_per_sec": tps,
        "tokens_per_sec_per_worker": [r["items_per_step"] / common.mean(r["step_times"])
                                      if r["step_times"] and common.mean(r["step_times"]) else None for r in ranks],
        "tokens_per_sec_per_device": per_device,
        "flops_per_token": flops,
        "flops_convention": settings["flops_convention"],
        "tflops_per_device": per_device * flops / 1e12 if per_device else None,
        "peak_flops": peak[0] if peak else None,
        "peak_flops_source": peak[1] if peak else f"none known for {device} at {settings['precision']}",
        "mfu": lm_model.mfu(per_device, flops, peak[0] if peak else None),
        "peak_memory_bytes": max((m for m in memory if m is not None), default=None),
        "peak_memory_bytes_per_rank": memory,
        "memory_source": ranks[0].get("memory_source") if ranks else None,
        "params": settings["params"],
        "step_time_median": common.median([max(t) for t in zip(*windows, strict=True)]),
        "warmup_time_total": max((sum(r["warmup_times"]) for r in ranks), default=0.0),
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
    }


def peak_memory(torch: Any, gpu: bool) -> tuple[int, str]:
    """(bytes, what they are): the largest memory torch allocated on the GPU, or the process's peak RSS on a CPU."""
    if gpu:
        return int(torch.cuda.max_memory_allocated()), "torch.cuda.max_memory_allocated"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "peak RSS of the process (ru_maxrss)"


def _wrap(model: Any, torch: Any, settings: dict[str, Any], world: Any, device: Any) -> Any:
    """The model compiled per block (--xla) and wrapped for data parallelism (DDP, or FSDP2 per block)."""
    bf16 = settings["precision"] == "bf16"
    if settings["xla"]:
        for block in model.layers:
            block.compile()
    if settings["parallelism"] == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[device.index] if world.gpu else None)
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if bf16 else None,
                                  reduce_dtype=torch.float32 if bf16 else None)
    for block in model.layers:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, train for warm-up + measured steps, emit the result (rank 0)."""
    args = build_parser().parse_args(argv)
    import torch

    from . import lm_net

    backend = args.dist_backend if args.dist_backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    world, device = _torch.start(backend, args.intra_threads, args.inter_threads)
    settings = resolve_settings(args, world.gpu)
    if settings["precision"] == "bf16" and world.gpu and not torch.cuda.is_bf16_supported():
        raise WorkloadError(f"{world.device} does not support bf16; use fp32")
    torch.manual_seed(args.seed)  # same initial weights everywhere (DDP broadcasts rank 0's; FSDP shards them)
    shape, seq_len, batch = lm_model.PRESETS[args.model], settings["seq_len"], args.batch_size
    with torch.device(device):
        model = lm_net.build(shape, seq_len, checkpointing=settings["activation_checkpointing"])
    net = _wrap(model, torch, settings, world, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    autocast = settings["precision"] == "bf16" and settings["parallelism"] == "ddp"

    generator = torch.Generator().manual_seed(args.seed + world.rank)
    tokens = torch.randint(0, shape.vocab, (batch, seq_len + 1), generator=generator).to(device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    drill = args.nan_at_step if world.rank == world.size - 1 else None

    def train_step(step: int) -> float:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = net(inputs)
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        if step == drill:
            loss = loss * float("nan")
        loss.backward()  # DDP all-reduces, FSDP reduce-scatters the gradients during backward
        optimizer.step()
        return float(loss.item())

    def after(number: int, total: int, loss: float, elapsed: float) -> None:
        if not math.isfinite(loss):
            raise WorkloadError(f"the loss is {loss} at step {number} of {total} on rank {world.rank}: the run "
                                "is not a measurement of training")
        if world.rank == 0 and number % 5 == 0:
            common.log(f"lm: step {number}/{total} loss {loss:.4f} {elapsed * 1000:.1f} ms")

    measured = timing.run_steps(train_step, timing.device_of(torch, device), args.warmup_steps, args.steps,
                                after=after)
    warmup_times, step_times, losses = measured.warmup_times, measured.step_times, measured.losses

    settings.update(global_batch=batch * world.size, dist_backend=backend, **common.runtime_settings(world))
    record = common.rank_record(world, warmup_times, step_times, batch * seq_len)
    record["peak_memory_bytes"], record["memory_source"] = peak_memory(torch, world.gpu)
    return _torch.finish("lm", world, settings, record,
                         lambda ranks: lm_metrics(ranks, settings, world.device, losses), args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    _torch.exit_process(main())
