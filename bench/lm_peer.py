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
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULT = "PEER_RESULT "


def plain_worker(args: argparse.Namespace) -> None:
    """One rank of the bare loop (run by torchrun); rank 0 prints PEER_RESULT."""
    sys.path.insert(0, str(REPO))
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    from repro.workloads import lm_model, lm_net

    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.set_num_threads(args.intra_threads)
    if cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    dist.init_process_group(args.dist_backend if args.dist_backend != "auto" else ("nccl" if cuda else "gloo"))
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

    for _ in range(args.warmup_steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    began = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    loss.item()
    if cuda:
        torch.cuda.synchronize()
    elapsed = torch.tensor([time.perf_counter() - began], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    if rank == 0:
        tps = args.batch_size * args.seq_len * world * args.steps / float(elapsed.item())
        print(RESULT + json.dumps({"tokens_per_sec": tps, "workers": world,
                                   "device": torch.cuda.get_device_name(0) if cuda else "CPU"}), flush=True)
    dist.destroy_process_group()


def common_args(args: argparse.Namespace) -> list[str]:
    out = ["--model", args.model, "--batch-size", str(args.batch_size), "--seq-len", str(args.seq_len),
           "--parallelism", args.parallelism, "--warmup-steps", str(args.warmup_steps), "--steps", str(args.steps),
           "--dist-backend", args.dist_backend, "--intra-threads", str(args.intra_threads), "--seed", str(args.seed)]
    out += ["--precision", args.precision] if args.precision else []
    return out + (["--activation-checkpointing"] if args.activation_checkpointing else [])


def torchrun(args: argparse.Namespace, command: list[str]) -> str:
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            f"--nproc-per-node={args.workers}", "--no-python", sys.executable, *command]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


def run_plain(args: argparse.Namespace) -> float:
    extra = ["--compile"] if args.compile else []
    out = torchrun(args, [str(Path(__file__).resolve()), "--worker", *common_args(args), *extra])
    line = [x for x in out.splitlines() if x.startswith(RESULT)][-1]
    return float(json.loads(line[len(RESULT):])["tokens_per_sec"])


def run_repro(args: argparse.Namespace) -> float:
    extra = ["--xla"] if args.compile else []
    out = torchrun(args, ["-m", "repro.workloads.lm", *common_args(args), *extra, "--inter-threads", "1"])
    sys.path.insert(0, str(REPO))
    from repro.launch.workloads import find_result  # the result line whole again, printed in parts or not

    return float(find_result(out)["metrics"]["tokens_per_sec"])


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
    if not args.intra_threads:  # both sides get the same explicit value (torchrun would set OMP_NUM_THREADS=1)
        args.intra_threads = max(1, len(os.sched_getaffinity(0)) // args.workers)

    print(f"lm {args.model}, {args.batch_size} x {args.seq_len} tokens/worker x {args.workers} workers, "
          f"{args.parallelism}, {args.precision or 'auto'}, checkpointing {args.activation_checkpointing}, compile "
          f"{args.compile}, {args.warmup_steps} warm-up + {args.steps} steps, {args.intra_threads} threads/worker, "
          f"{args.repeats} pairs; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    sides = {"plain": run_plain, "repro": run_repro}
    names = list(sides) if args.side == "both" else [args.side]
    found: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(args.repeats):
        order = names if repeat % 2 == 0 else list(reversed(names))
        for name in order:
            found[name].append(sides[name](args))
        print(f"  pair {repeat + 1} ({' then '.join(order)}): "
              + ", ".join(f"{n} {found[n][-1]:.1f}" for n in names) + " tokens/sec", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f} (1 min), {os.getloadavg()[1]:.2f} (5 min): a ratio "
          "measured beside other work is noise, whatever its interval", flush=True)
    if args.side != "both":
        value = statistics.median(found[args.side])
        print(RESULT + json.dumps({"side": args.side, "tokens_per_sec": value, "runs": found[args.side]}))
        return 0
    sys.path.insert(0, str(REPO))
    from repro.results import stats

    pairs = list(zip(found["plain"], found["repro"], strict=True))
    result = stats.compare_pairs(pairs, confidence=0.95, threshold=0.02)
    for name in names:
        print(f"{name:5s} median {statistics.median(found[name]):10.1f} tokens/sec")
    interval = f"[{result.low:.4f}, {result.high:.4f}]" if result.low is not None else "(too few pairs)"
    print(f"repro/plain: geometric mean of {len(pairs)} pair ratios {result.ratio:.4f}, 95% interval {interval} "
          f"(goal >= 0.98); per pair: {', '.join(f'{r / p:.3f}' for p, r in pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
