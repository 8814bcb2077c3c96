"""repro's torch_cnn against a plain PyTorch DDP training loop with the same settings (the peer).

    python bench/torch_peer.py [--workers 2] [--model resnet20] [--batch-size 32] [--precision fp32|fp16|bf16]
        [--data-format NCHW|NHWC] [--compile] [--warmup-steps 5] [--steps 30] [--repeats 5] [--side both|plain|repro]

Both sides are launched the same way, as `torchrun --standalone --nproc-per-node N` jobs, alternating which runs
first in each repeat, with the same model (repro.workloads.torch_models), per-worker batch, precision, memory
format, torch.compile, thread count and torch.distributed backend:
  plain  a bare DDP loop (the shape of Horovod's pytorch_synthetic_benchmark.py, with DDP): warm-up steps, then
         one wall clock around all measured steps with one device synchronize at the end; images/sec = global
         batch x steps / the slowest rank's elapsed time;
  repro  repro.workloads.torch_cnn: every step timed with the device synchronized at its boundaries; images/sec
         from its result (global batch x steps / the slowest rank's total step time).
Prints both per repeat, their medians, and the ratio repro / plain as the geometric mean of the pair ratios with
its paired-t interval (repro.results.stats.goal_check; goal: >= 0.98): "unresolved" when the interval reaches
both sides of the goal. Figures only; nothing is asserted. `--side plain` runs only the peer
(scripts/device-check.sh sets it beside `repro bench`); the last line is then `PEER_RESULT {json}`.
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
    from torch.nn.parallel import DistributedDataParallel as DDP

    from repro.workloads import torch_models as models

    device, local_rank = start_worker(args)
    cuda = device.type == "cuda"
    torch.manual_seed(args.seed)
    fmt = torch.channels_last if args.data_format == "NHWC" else torch.contiguous_format
    classes = models.default_num_classes(args.model)
    side = models.default_image_size(args.model)
    model = models.build(args.model, classes).to(device, memory_format=fmt)
    ddp = DDP(model, device_ids=[local_rank] if cuda else None)
    net = torch.compile(ddp) if args.compile else ddp
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    amp = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(args.precision)
    scaler = torch.amp.GradScaler(device.type, enabled=args.precision == "fp16")
    images = torch.rand(args.batch_size, 3, side, side).to(device, memory_format=fmt)
    labels = torch.randint(0, classes, (args.batch_size,)).to(device)

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp or torch.float32, enabled=amp is not None):
            loss = F.cross_entropy(net(images).float(), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss

    slowest = timed_steps(step, args, device)
    world = dist.get_world_size()
    if dist.get_rank() == 0:
        print(RESULT + json.dumps({"images_per_sec": args.batch_size * world * args.steps / slowest,
                                   "workers": world, "device": torch.cuda.get_device_name(0) if cuda else "CPU"}),
              flush=True)
    dist.destroy_process_group()


def common_args(args: argparse.Namespace) -> list[str]:
    out = ["--model", args.model, "--batch-size", str(args.batch_size), "--precision", args.precision,
           "--data-format", args.data_format, "--warmup-steps", str(args.warmup_steps), "--steps", str(args.steps),
           "--dist-backend", args.dist_backend, "--intra-threads", str(args.intra_threads)]
    return out + (["--compile"] if args.compile else [])


def run_plain(args: argparse.Namespace) -> float:
    out = torchrun(args, [str(Path(__file__).resolve()), "--worker", *common_args(args), "--seed", str(args.seed)])
    return printed(out, RESULT, "images_per_sec")


def run_repro(args: argparse.Namespace) -> float:
    compile_flag = ["--xla"] if args.compile else []
    command = ["-m", "repro.workloads.torch_cnn", *[a for a in common_args(args) if a != "--compile"], *compile_flag,
               "--inter-threads", "1", "--seed", str(args.seed)]
    out = torchrun(args, command)
    return repro_metric(out, "images_per_sec")


def main() -> int:
    """Interleaved repeats of both sides (or one side); print throughputs and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precision", default="fp32", choices=("fp32", "fp16", "bf16"))
    parser.add_argument("--data-format", default="NCHW", choices=("NCHW", "NHWC"))
    parser.add_argument("--compile", action="store_true", help="torch.compile (torch_cnn's --xla)")
    parser.add_argument("--warmup-steps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dist-backend", default="auto", choices=("auto", "gloo", "nccl", "mpi"))
    parser.add_argument("--intra-threads", type=int, default=0, help="per worker (0: cores / workers)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--side", default="both", choices=("both", "plain", "repro"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        plain_worker(args)
        return 0
    default_threads(args)

    print(f"model {args.model}, batch {args.batch_size}/worker x {args.workers} workers, {args.precision}, "
          f"{args.data_format}, compile {args.compile}, {args.warmup_steps} warm-up + {args.steps} steps, "
          f"{args.intra_threads} threads/worker, {args.repeats} repeats, sides: {args.side}; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    return run_pairs(args, {"plain": run_plain, "repro": run_repro}, "images_per_sec", "images/sec", RESULT)

if __name__ == "__main__":
    sys.exit(main())
