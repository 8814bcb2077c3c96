"""Step times that are right on a GPU (pure, standard library only).

A GPU runs work asynchronously: `loss.backward(); optimizer.step()` returns once the kernels are queued, so a
host clock read right after measures launches, not the step. The rule here: drain the device before the
clock is read at each step boundary, so a step's time is from the moment the device had finished everything
before it to the moment it has finished everything the step queued (all-reduces included). On a CPU the
device's `synchronize` does nothing and the rule costs nothing.

A device is anything with `synchronize()`: `torch.cuda` (or `CPU_DEVICE`), or a fake one in tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

METHOD = "host clock (time.perf_counter) read after the device is synchronized at both step boundaries"


class Device(Protocol):
    def synchronize(self) -> None:
        """Return once every operation queued on the device has finished."""
        ...


class _Cpu:
    """The CPU: operations have finished when they return."""

    def synchronize(self) -> None:
        return None


CPU_DEVICE: Device = _Cpu()


def time_step(step: Callable[[], T], device: Device, clock: Callable[[], float] = time.perf_counter) -> tuple[T, float]:
    """(what `step` returned, its duration in seconds), the device drained before and after.

    Draining before keeps work queued by earlier code (a previous step, a broadcast) out of this step; draining
    after puts the work this step queued and has not finished into it."""
    device.synchronize()
    began = clock()
    out = step()
    device.synchronize()
    return out, clock() - began


def device_of(torch: Any, device: Any) -> Device:
    """The synchronizable device for a torch.device: torch.cuda for a CUDA device, else the CPU."""
    return torch.cuda if getattr(device, "type", "cpu") == "cuda" else CPU_DEVICE


@dataclass(frozen=True)
class Steps:
    """What a training loop measured: warm-up and measured step times (seconds) and every step's loss."""

    warmup_times: list[float]
    step_times: list[float]
    losses: list[float]


def run_steps(train_step: Callable[[int], float], device: Device, warmup: int, steps: int, *,
              after: Callable[[int, int, float, float], None] | None = None,
              clock: Callable[[], float] = time.perf_counter) -> Steps:
    """`warmup` then `steps` calls of train_step(index) (it returns the loss), each timed by `time_step`;
    `after(number, total, loss, seconds)` sees each step once it is done (to check the loss or log progress)."""
    out = Steps([], [], [])
    total = warmup + steps
    for index in range(total):
        loss, elapsed = time_step(lambda i=index: train_step(i), device, clock)
        if after is not None:
            after(index + 1, total, loss, elapsed)
        (out.warmup_times if index < warmup else out.step_times).append(elapsed)
        out.losses.append(loss)
    return out
