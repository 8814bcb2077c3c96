"""What an lm (transformer training) run states beyond its step times, as a typed model, and the figures derived
from it over runs (pure): TFLOP/s and MFU per device, peak memory per rank, losses.

tokens/sec is the one throughput figure of repro.results.metrics (a rank's items per step are its tokens per
step), so its interval, verdicts, `--warmup auto` and `--until-verdict` are those of images/sec. MFU is derived
from it, never stored apart from it: tokens/sec / workers x the record's model FLOPs per token / the peak FLOP/s
the workload found for its device and precision (repro.workloads.lm_model; none on CPUs, none at fp32).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from repro.compare.model import KindMetrics, Number
from repro.results.record import RunRecord

GIB = 1024**3
UNIT = "tokens/sec"


class LmMetrics(KindMetrics):
    """An lm run's own figures (None: the run did not state it)."""

    flops_per_token: Number = None  # model FLOPs per token, 6N + 12·L·H·Q·T (docs/lm.md)
    peak_flops: Number = None  # the device's sourced peak FLOP/s at the run's precision (None: none known)
    peak_memory_bytes: Number = None  # the largest peak memory of the run's ranks
    loss_first: Number = None  # rank 0's
    loss_last: Number = None
    # stated by imported logs only (never derived from figures a log does not give)
    tflops_per_gpu: Number = None  # Megatron's `throughput per GPU (TFLOP/s/GPU)`, torchtitan's `tflops`
    mfu: Number = None  # torchtitan's `mfu`, a fraction
    items: str | None = None  # what the log's figure counts: "tokens" or "samples"


def read(records: Sequence[RunRecord]) -> list[LmMetrics]:
    """The figures of the successful records (a failed run states none worth averaging)."""
    return [LmMetrics.model_validate(r.metrics) for r in records if r.status == "ok"]


def _floats(values: Iterable[int | float | None]) -> list[float | None]:
    # as floats: a figure in bytes or FLOPs is written as 2147483648.0 in JSON whatever type the workload wrote
    return [None if v is None else float(v) for v in values]


def _common(values: Iterable[int | float | None]) -> float | None:
    """The value every successful record holds (None when one lacks it or they differ)."""
    distinct = set(_floats(values))
    return distinct.pop() if len(distinct) == 1 else None


def mean(values: Iterable[int | float | None]) -> float | None:
    """The mean of the values that are numbers (None without any)."""
    numbers = [v for v in _floats(values) if v is not None]
    return sum(numbers) / len(numbers) if numbers else None


def flops_per_token(records: Sequence[RunRecord]) -> float | None:
    """The model FLOPs per token every successful record states (None where they differ or one lacks it)."""
    return _common(m.flops_per_token for m in read(records))


def tflops_per_device(tokens_per_sec: float | None, records: Sequence[RunRecord], workers: int) -> float | None:
    """Model TFLOP/s per device at `tokens_per_sec` (the whole job's); for imported logs that state it instead of
    the FLOPs per token (Megatron's `throughput per GPU (TFLOP/s/GPU)`, torchtitan's `tflops`), the stated mean."""
    flops = flops_per_token(records)
    if flops is None:
        return stated(records, "tflops_per_gpu")
    return tokens_per_sec / workers * flops / 1e12 if tokens_per_sec and flops else None


def mfu(tokens_per_sec: float | None, records: Sequence[RunRecord], workers: int) -> float | None:
    """Model FLOPs utilisation at `tokens_per_sec`, where the records name the device's sourced peak; for imported
    logs that state it (torchtitan's `mfu`), the stated mean (never derived from figures the log does not give)."""
    peak = _common(m.peak_flops for m in read(records))
    if peak is None and flops_per_token(records) is None:
        return stated(records, "mfu")
    tflops = tflops_per_device(tokens_per_sec, records, workers)
    return tflops * 1e12 / peak if tflops and peak else None


def stated(records: Sequence[RunRecord], name: str) -> float | None:
    """The mean of a figure imported logs state (`tflops_per_gpu`, `mfu`), over the records whose log states it."""
    return mean(getattr(m, name) for m in read([r for r in records if r.origin == "import"]))


def unit(records: Sequence[RunRecord]) -> str:
    """What the records' figure counts: samples/sec where every imported log states samples (Megatron without
    tokens, the Hugging Face Trainer), else tokens/sec."""
    return "samples/sec" if {m.items for m in read(records)} == {"samples"} else UNIT


def peak_memory(records: Sequence[RunRecord]) -> float | None:
    """The largest peak memory of any rank of any successful run, in bytes."""
    return max((v for v in _floats(m.peak_memory_bytes for m in read(records)) if v is not None), default=None)


def losses(records: Sequence[RunRecord]) -> tuple[float | None, float | None]:
    """The mean first and last loss over the successful records that state them."""
    runs = read(records)
    return mean(m.loss_first for m in runs), mean(m.loss_last for m in runs)


def memory_text(value: float | None) -> str:
    """Bytes as GiB with two decimals ('-' for none)."""
    return f"{value / GIB:.2f} GiB" if value else "-"
