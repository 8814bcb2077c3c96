"""Time to accuracy with PyTorch (MLBench task 1a's recipe at a size that runs anywhere): a CIFAR ResNet
trained with synchronous SGD until the held-out top-1 reaches a target.

    torchrun --nproc-per-node 2 -m repro.workloads.torch_tta [--dataset digits|cifar10:DIR] [--model resnet20]
        [--target-accuracy 0.95] [--max-epochs N] [--max-seconds S] [--batch-size B] [--learning-rate LR]
    (or mpirun / srun: the rank variables are mapped, repro.workloads._torch)

The recipe, the data and the result are the TensorFlow `tta` workload's (repro.workloads.tta; the pure
schedule and bookkeeping of repro.workloads.tta_recipe): SGD with Nesterov momentum 0.9 and L2 weight decay on the
kernels; lr = base x k for k workers after a linear warm-up of log2 k epochs; decay by --decay-factor after
--plateau-patience epochs without a lower validation loss; each epoch a fresh disjoint equal shard per rank;
the whole held-out set validated every epoch (each rank a disjoint part, sums all-reduced). `digits` is
scikit-learn's bundled 8x8 digits (1797 images, stratified hold-out with a fixed seed; the grey channel is
repeated to the three the ResNets take), so the run needs no download; `cifar10:DIR` reads the python
pickle batches (MLBench's own task). Gradients are averaged with one explicit all_reduce of a flat buffer,
so compute (forward, backward, update) and communication are timed apart, each with the device
synchronized at its boundaries (repro.workloads.timing). Elapsed time counts from the first training step
and includes validation; the run stops at the end of the first epoch whose top-1 >= the target, or when
--max-epochs or --max-seconds (rank 0's clock, after each epoch) runs out.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from . import _common as common
from . import _torch, timing, tta
from . import torch_models as models
from ._common import WorkloadError, run_main
from .comm import resolve_backend
from .data import ArrayData, load_cifar10, load_digits
from .spec import ArgumentParser
from .tta_recipe import Plateau, check_shards, curve_entry, default_warmup_epochs, learning_rate, tta_metrics

DATASET_DEFAULTS: dict[str, dict[str, Any]] = {
    "digits": {"batch_size": 32, "learning_rate": 0.05, "target_accuracy": 0.95, "max_epochs": 40,
               "weight_decay": 1e-4},
    "cifar10": {"batch_size": 128, "learning_rate": 0.1, "target_accuracy": 0.80, "max_epochs": 164,
                "weight_decay": 1e-4},
}
_RECORD_SHARDS_UP_TO = 5000

# the tta family's PyTorch program, under the name records and scripts from before the family use
SPEC = tta.SPEC.program("pytorch").alias("torch_tta")
MODELS = SPEC.models


def build_parser() -> ArgumentParser:
    """The workload's flags (None means: the dataset's default), from its SPEC."""
    return SPEC.parser(common.add_output_argument)


def resolve_settings(args: Any) -> dict[str, Any]:
    """Flags with the dataset's defaults filled in (worker count still to come)."""
    name, _, directory = args.dataset.partition(":")
    if name not in DATASET_DEFAULTS or (name == "digits") == bool(directory):
        raise WorkloadError(f"--dataset {args.dataset}: use digits, or cifar10:DIR")
    defaults = DATASET_DEFAULTS[name]

    def pick(key: str) -> Any:
        value = getattr(args, key)
        return defaults[key] if value is None else value

    target = pick("target_accuracy")
    if target > 1:
        raise WorkloadError(f"--target-accuracy is a fraction (0..1], got {target}")
    return {"dataset": name, "data": directory or None, "model": args.model, "batch_per_worker": pick("batch_size"),
            "base_learning_rate": pick("learning_rate"), "momentum": args.momentum, "nesterov": True,
            "weight_decay": pick("weight_decay"), "decay_factor": args.decay_factor,
            "plateau_patience": args.plateau_patience, "target_accuracy": target, "max_epochs": pick("max_epochs"),
            "max_seconds": args.max_seconds, "seed": args.seed, "timing": timing.METHOD}


def to_tensors(torch: Any, device: Any, batches: Iterator[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """NHWC numpy batches as NCHW tensors on `device`, a grey channel repeated to three."""
    for x, y in batches:
        images = torch.from_numpy(x).permute(0, 3, 1, 2)
        if images.shape[1] == 1:
            images = images.expand(-1, 3, -1, -1)
        yield images.contiguous().to(device), torch.from_numpy(y).long().to(device)


class Trainer:
    """The model, its optimizer, and the timed compute / communicate / update steps of one epoch."""

    def __init__(self, torch: Any, model: Any, settings: dict[str, Any], device: Any, world_size: int) -> None:
        self.torch, self.model, self.device, self.size = torch, model, device, world_size
        self.sync = timing.device_of(torch, device)
        params = [p for p in model.parameters() if p.requires_grad]
        self.params = params
        self.decays = [p.dim() > 1 for p in params]  # kernels; not biases or batch-norm scales
        self.weight_decay = settings["weight_decay"]
        self.optimizer = torch.optim.SGD(params, lr=settings["base_learning_rate"], momentum=settings["momentum"],
                                         nesterov=True)

    def _compute(self, x: Any, y: Any) -> float:
        import torch.nn.functional as F

        self.optimizer.zero_grad(set_to_none=False)
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return float(loss.item())

    def _communicate(self) -> None:
        import torch.distributed as dist

        flat = self.torch.cat([p.grad.reshape(-1) for p in self.params])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= self.size
        offset = 0
        for p in self.params:
            n = p.grad.numel()
            p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
            offset += n

    def _update(self) -> None:
        if self.weight_decay:
            for p, decay in zip(self.params, self.decays):  # noqa: B905
                if decay:
                    p.grad.add_(p.detach(), alpha=self.weight_decay)
        self.optimizer.step()

    def train_epoch(self, batches: Iterator[tuple[Any, Any]], rates: Sequence[float]) -> dict[str, Any]:
        """One step per rate; loss sum, examples, step times and the time split of the epoch."""
        self.model.train()
        out: dict[str, Any] = {"loss_sum": 0.0, "seen": 0, "compute_s": 0.0, "comm_s": 0.0, "data_s": 0.0,
                               "step_times": []}
        for rate in rates:
            for group in self.optimizer.param_groups:
                group["lr"] = rate
            (x, y), data_s = timing.time_step(lambda: next(batches), self.sync)
            loss, compute_s = timing.time_step(lambda x=x, y=y: self._compute(x, y), self.sync)
            _, comm_s = timing.time_step(self._communicate, self.sync)
            _, update_s = timing.time_step(self._update, self.sync)
            out["data_s"] += data_s
            out["compute_s"] += compute_s + update_s
            out["comm_s"] += comm_s
            out["step_times"].append(data_s + compute_s + comm_s + update_s)
            out["loss_sum"] += loss * len(y)
            out["seen"] += len(y)
        return out

    def validate(self, batches: Iterator[tuple[Any, Any]], num_classes: int) -> list[float]:
        """[loss sum, top-1 hits, top-5 hits, examples] over this rank's part of the held-out set."""
        import torch.nn.functional as F

        torch = self.torch
        totals = [0.0, 0.0, 0.0, 0.0]
        self.model.eval()
        with torch.no_grad():
            for x, y in batches:
                logits = self.model(x).float()
                top = logits.topk(min(5, num_classes), dim=1).indices
                totals[0] += float(F.cross_entropy(logits, y, reduction="sum").item())
                totals[1] += float((top[:, 0] == y).sum().item())
                totals[2] += float((top == y[:, None]).any(dim=1).sum().item())
                totals[3] += len(y)
        return totals


def load_data(settings: dict[str, Any], args: Any) -> ArrayData:
    """The dataset named in settings."""
    if settings["dataset"] == "digits":
        return load_digits(args.validation_fraction, args.split_seed)
    return load_cifar10(settings["data"])


def run(argv: Sequence[str] | None = None) -> dict[str, Any] | None:
    """Parse flags, train until the target or a limit, emit the result (rank 0).

    One function on purpose: the program reads top to bottom, as tta's does."""
    args = build_parser().parse_args(argv)
    settings = resolve_settings(args)
    import torch

    backend = resolve_backend(args.dist_backend, torch.cuda.is_available())
    world, device = _torch.start(backend, args.intra_threads, args.inter_threads)
    import numpy as np
    import torch.distributed as dist

    k = world.size
    warmup_epochs = default_warmup_epochs(k) if args.warmup_epochs is None else args.warmup_epochs
    base, batch = settings["base_learning_rate"], settings["batch_per_worker"]
    settings.update(workers=k, global_batch=batch * k, peak_learning_rate=base * k, warmup_epochs=warmup_epochs,
                    dist_backend=backend, **common.runtime_settings(world))
    data = load_data(settings, args)
    num_classes = int(np.max(data.y_train)) + 1
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = models.build(args.model, num_classes).to(device)
    for tensor in model.state_dict().values():  # and rank 0's, should a rank's generator differ
        dist.broadcast(tensor, 0)
    trainer = Trainer(torch, model, settings, device, k)

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
        if epoch == 0:
            shards = _torch.gather([int(i) for i in data.shard(epoch, args.seed, world.rank, k)])
            shard_record = check_shards(shards, data.train_size)
            if data.train_size <= _RECORD_SHARDS_UP_TO:
                shard_record["positions"] = shards
        rates = [learning_rate(epoch + s / steps, base, k, warmup_epochs, plateau.multiplier) for s in range(steps)]
        batches = to_tensors(torch, device, data.train_batches(epoch, args.seed, world.rank, k, batch))
        trained = trainer.train_epoch(batches, rates)
        step_times += trained["step_times"]
        val_start = time.perf_counter()
        totals = trainer.validate(to_tensors(torch, device, data.validation_batches(world.rank, k, max(batch, 256))),
                                  num_classes)
        validation_s = time.perf_counter() - val_start
        local = [*totals, trained["loss_sum"], trained["seen"], trained["compute_s"], trained["comm_s"],
                 trained["data_s"], validation_s]
        sums_tensor = torch.tensor(local, dtype=torch.float64, device=device)
        dist.all_reduce(sums_tensor, op=dist.ReduceOp.SUM)
        sums = sums_tensor.cpu().tolist()
        epoch += 1
        elapsed = time.perf_counter() - began
        entry = curve_entry(epoch, elapsed, rates[-1], sums, k)
        curve.append(entry)
        if epoch > warmup_epochs and entry["val_loss"] is not None:
            plateau.update(entry["val_loss"])
        reached = entry["val_top1"] >= settings["target_accuracy"]
        if reached:
            reached_at = elapsed
        limit = epoch >= settings["max_epochs"] or elapsed >= settings["max_seconds"]
        decision = [reached or limit]
        dist.broadcast_object_list(decision, src=0)  # rank 0's clock decides the time limit for everyone
        stop = bool(decision[0])
        if world.rank == 0:
            common.log(f"torch_tta: epoch {epoch} top1 {entry['val_top1']:.4f} val_loss {entry['val_loss']:.4f} "
                       f"lr {rates[-1]:.4f} elapsed {elapsed:.1f}s")

    settings.update(steps_per_epoch=steps, num_classes=num_classes, params=sum(p.numel() for p in model.parameters()))
    metrics = tta_metrics(settings["target_accuracy"], reached_at, epoch, curve, data, shard_record)
    record = common.rank_record(world, [], step_times, batch)
    return _torch.finish("torch_tta", world, settings, record, metrics, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    return run_main(run, argv)


if __name__ == "__main__":
    _torch.exit_process(main())
