"""repro's `lm` workload against a plain PyTorch training loop with the same model and settings (the peer).

    python bench/lm_peer.py [--workers 2] [--model tiny] [--batch-size 4] [--seq-len 128] [--precision fp32|bf16]
        [--parallelism ddp|fsdp] [--activation-checkpointing] [--compile] [--warmup-steps 3] [--steps 20]
        [--repeats 6] [--side both|plain|repro]

Both sides are `torchrun --standalone --nproc-per-node N` jobs, interleaved (A B, B A, ...), with the same network
(repro.workloads.lm_net), sequences per worker, sequence length, precision, parallelism (DDP, or FSDP2
`fully_shard` per block then the model, with the same MixedPrecisionPolicy), checkpointing, torch.compile,
AdamW, seed, thread count and torch.distributed backend:
  plain  warm-up steps, a barrier, then one wall clock around all measured steps, the loss read once at the end,
         one device synchronize; tokens/sec = global tokens x steps / the slowest rank's elapsed time;
  repro  repro.workloads.lm: every step timed with the device synchronized at its boundaries and the loss read
         every step (it fails the run on a non-finite loss); tokens/sec from its result.
Prints each pair, then the geometric mean of the pair ratios repro/plain with its 95% interval (a paired t on
log ratios, repro.results.stats) and the load average; goal >= 0.98 on a CPU. Nothing is asserted. `--side plain`
runs only the peer; its last line is then `PEER_RESULT {json}` (for scripts/device-check.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from _peer import default_threads, printed, repro_metric, run_pairs, start_worker, timed_steps, torchrun

RESULT = "PEER_RESULT "


def plain_worker(args: argparse.Namespace) -> None:
    """One rank of the bare loop (run by torchrun); rank 0 prints PEER_RESULT."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    from repro.workloads import lm_model, lm_net

    device, local_rank = start_worker(args)
    cuda = device.type == "cuda"
    rank, world = dist.get_rank(), dist.get_world_size()
    shape = lm_model.PRESETS[args.model]
    precision = args.precision or ("bf16" if cuda else "fp32")
    torch.manual_seed(args.seed)
    with torch.device(device):
        model = lm_net.build(shape, args.seq_len, checkpointing=args.activation_checkpointing)
    if args.compile:
        for block in model.layers:
            block.compile()
    bf16 = precision == "bf16"
    if args.parallelism == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        net = DDP(model, device_ids=[local_rank] if cuda else None)
    else:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if bf16 else None,
                                      reduce_dtype=torch.float32 if bf16 else None)
        for block in model.layers:
            fully_shard(block, mp_policy=policy)
        net = fully_shard(model, mp_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    generator = torch.Generator().manual_seed(args.seed + rank)
    tokens = torch.randint(0, shape.vocab, (args.batch_size, args.seq_len + 1), generator=generator).to(device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    autocast = bf16 and args.parallelism == "ddp"

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            logits = net(inputs)
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        return loss

    elapsed = timed_steps(step, args, device)
    if rank == 0:
        tps = args.batch_size * args.seq_len * world * args.steps / elapsed
        print(RESULT + json.dumps({"tokens_per_sec": tps, "workers": world,
                                   "device": torch.cuda.get_device_name(0) if cuda else "CPU"}), flush=True)
    dist.destroy_process_group()


def common_args(args: argparse.Namespace) -> list[str]:
    out = ["--model", args.model, "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len),
           "--parallelism", args.parallelism, "--warmup-steps", str(args.warmup_steps), "--steps", str(args.steps),
           "--dist-backend", args.dist_backend, "--intra-threads", str(args.intra_threads), "--seed", str(args.seed)]
    out += ["--precision", args.precision] if args.precision else []
    return out + (["--activation-checkpointing"] if args.activation_checkpointing else [])


def run_plain(args: argparse.Namespace) -> float:
    extra = ["--compile"] if args.compile else []
    out = torchrun(args, [str(Path(__file__).resolve()), "--worker", *common_args(args), *extra])
    return printed(out, RESULT, "tokens_per_sec")


def run_repro(args: argparse.Namespace) -> float:
    extra = ["--xla"] if args.compile else []
    out = torchrun(args, ["-m", "repro.workloads.lm", *common_args(args), *extra, "--inter-threads", "1"])
    return repro_metric(out, "tokens_per_sec")


def main() -> int:
    """Interleaved pairs of both sides (or one side); print tokens/sec and the geometric mean of the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--precision", default=None, choices=("fp32", "bf16"), help="default: bf16 GPU, fp32 CPU")
    parser.add_argument("--parallelism", default="ddp", choices=("ddp", "fsdp"))
    parser.add_argument("--activation-checkpointing", action="store_true")
    parser.add_argument("--compile", action="store_true", help="torch.compile per block (lm's --xla)")
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--dist-backend", default="auto", choices=("auto", "gloo", "nccl", "mpi"))
    parser.add_argument("--intra-threads", type=int, default=0, help="per worker (0: cores / workers)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--side", default="both", choices=("both", "plain", "repro"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.worker:
        plain_worker(args)
        return 0
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    default_threads(args)

    print(f"lm {args.model}, {args.batch_size} x {args.seq_len} tokens/worker x {args.workers} workers, "
          f"{args.parallelism}, {args.precision or 'auto'}, checkpointing {args.activation_checkpointing}, compile "
          f"{args.compile}, {args.warmup_steps} warm-up + {args.steps} steps, {args.intra_threads} threads/worker, "
          f"{args.repeats} pairs; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    return run_pairs(args, {"plain": run_plain, "repro": run_repro}, "tokens_per_sec", "tokens/sec", RESULT)

if __name__ == "__main__":
    sys.exit(main())
