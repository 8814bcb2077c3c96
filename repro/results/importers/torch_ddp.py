"""PyTorch's DistributedDataParallel benchmark (pytorch/pytorch benchmarks/distributed/ddp/benchmark.py) (pure).

What rank 0 prints: a header (``PyTorch distributed benchmark suite``, ``* PyTorch version: 1.4.0a0+05140f0``,
``* CUDA version: 10.0``, ``* Distributed backend: nccl``), ``nvidia-smi topo -m``, then for each torchvision
model ``Benchmark: resnet50 with batch size 32`` and one row per process group it measured::

       1 GPUs --   no ddp:  p50:  0.097s     329/s  p75:  0.097s     329/s  p90: ...  p95: ...
       8 GPUs --    1M/8G:  p50:  0.104s     307/s  ...
      16 GPUs --    2M/8G:  p50:  0.104s     306/s  ...

Each row is a run (but the ``warmup`` row early versions print: the program's warm-up): ``N GPUs`` ranks
(workers), ``1M/8G`` the machines and GPUs per machine of the group
(``no ddp``: the model alone, without DistributedDataParallel; a group whose machines x GPUs is not N is
kept as a setting, so that its row is never pooled with another of N GPUs), and the percentiles of the iteration time
with ``ex/sec`` = batch / that time, *per rank*. The run's figure is the job's examples/sec at the median:
N x the p50 ex/sec (the program prints no job total). The program trains in fp32 on synthetic data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of
from repro.workloads.tf_cnn_benchmarks import canonical_model

TORCH_DDP = "torch_ddp_benchmark"
EXAMPLE = "PyTorch's DDP benchmark ('1 GPUs --   no ddp:  p50: ...')"
_BENCHMARK = re.compile(r"^Benchmark:\s+(\S+)\s+with batch size\s+(\d+)")
_ROW = re.compile(r"^(\d+)\s+GPUs\s+--\s+(no ddp|warmup|(\d+)M/(\d+)G):\s+(p50:.*)$")
_PERCENTILE = re.compile(r"p(\d+):\s+([0-9.]+)s?\s+([0-9.]+)/s")  # early versions print '0.098', later '0.097s'
WARMUP = "warmup"  # early versions print their warm-up as a row: the program's own warm-up, never a run
_HEADER = {"pytorch": re.compile(r"^\* PyTorch version:\s+(\S+)"), "cuda": re.compile(r"^\* CUDA version:\s+(\S+)"),
           "backend": re.compile(r"^\* Distributed backend:\s+(\S+)"),
           "bucket": re.compile(r"^\* Maximum bucket size:\s+(\d+)MB")}


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """One group per result row; each carries the header lines and its Benchmark: line before it, where the
    log has them (a row pasted without them is still a row: its layout is the program's own)."""
    header = [line for line in lines if any(rx.match(line.bare) for rx in _HEADER.values())]
    out, benchmark = [], None
    for line in lines:
        if _BENCHMARK.match(line.bare):
            benchmark = line
        elif (m := _ROW.match(line.bare)) and m.group(2) != WARMUP:
            out.append([*header, *([benchmark] if benchmark else []), line])
    return out


def span(group: Sequence[Line]) -> tuple[int, int]:
    """A row's own line (its group also holds the header lines every row shares)."""
    return group[-1].number, group[-1].number


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One result row (with the header and Benchmark: lines before it) as a ParsedRun."""
    row = lines[-1]
    m = _ROW.match(row.bare)
    if m is None:
        raise error(file, row.number, "not a row of PyTorch's DDP benchmark", "'   8 GPUs --    1M/8G:  p50: ...'")
    bench_line = lines[-2] if len(lines) > 1 and _BENCHMARK.match(lines[-2].bare) else None
    bench = _BENCHMARK.match(bench_line.bare) if bench_line else None
    shown = Shown()
    gpus = int(m.group(1))
    shown.put("workload", TORCH_DDP, None)
    if bench and bench_line:  # without its Benchmark: line a row shows neither model nor batch: --set gives them
        batch = int(bench.group(2))
        shown.put("model", canonical_model(bench.group(1)), bench_line.number)
        shown.put("batch_per_worker", batch, bench_line.number)
        shown.put("global_batch", batch * gpus, row.number)
    shown.put("workers", gpus, row.number)
    shown.put("hosts", int(m.group(3)) if m.group(3) else 1, row.number)
    shown.put("extra.ddp", m.group(2) != "no ddp", row.number)
    machines, per_machine = (int(m.group(3)), int(m.group(4))) if m.group(3) else (1, gpus)
    if machines * per_machine != gpus:  # a group the row's GPU count does not describe: it stays apart
        shown.put("extra.group", m.group(2), row.number)
    shown.put("extra.framework", "pytorch", row.number)
    shown.put("comm_library", "torch.distributed", row.number)  # its backend is torch.distributed's, not Horovod's
    shown.put("extra.program", TORCH_DDP, row.number)
    shown.put("precision", "fp32", row.number)  # the program has no other precision
    shown.put("data", "synthetic", row.number)  # torch.rand inputs
    software: dict[str, str] = {}
    for line in lines[:-1]:
        for name, rx in _HEADER.items():
            if (h := rx.match(line.bare)) and name not in software:
                if name == "backend":
                    shown.put("backend", h.group(1), line.number)
                elif name == "bucket":
                    shown.put("extra.bucket_mb", int(h.group(1)), line.number)
                else:
                    software[name] = h.group(1)
    for name, value in (given or {}).items():
        shown.put(name, value, None)
    percentiles = {f"p{p}": {"sec_per_iter": float(t), "ex_per_sec": float(x)}
                   for p, t, x in _PERCENTILE.findall(m.group(5))}
    if "p50" not in percentiles:
        raise error(file, row.number, "the row has no p50 figure", "'p50:  0.097s     329/s'", row.bare)
    figure = round(percentiles["p50"]["ex_per_sec"] * gpus, 3)
    metrics = {"format": TORCH_DDP, "program": TORCH_DDP, "percentiles": percentiles,
               "ex_per_sec_per_rank_p50": percentiles["p50"]["ex_per_sec"],
               "stated": ["percentiles (sec/iter, ex/sec per rank)"],
               "derived": {"images_per_sec": "workers x the p50 ex/sec per rank"}}
    warnings = ("the program prints percentiles of the iteration time, not each iteration: the figure "
                "(N x the median ex/sec) has no interval",)
    return ParsedRun(format=TORCH_DDP, file=file, first_line=row.number, last_line=row.number,
                     settings=shown.values, where=shown.where, figure=figure, figure_line=row.number,
                     metrics=metrics, software=software, warnings=warnings,
                     tail=tail_of([line.text for line in lines]))


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every result row of PyTorch's DDP benchmark in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
