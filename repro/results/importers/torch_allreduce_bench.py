"""torch.distributed all-reduce benchmark lines (the all_reduce_bench.py of stas00/ml-engineering and its copies)
as all-reduce ParsedRuns (pure): the same kind of record as repro's own sweep and nccl-tests tables.

What rank 0 prints at the end (often behind a launcher's prefix, ``[host:0]:``)::

    The average bandwidth of all_reduce with a 4.0GB payload (20 trials, 4 ranks):
     algbw: 218.635 GBps (1749.1 Gbps)
     busbw: 327.952 GBps (2623.6 Gbps)

(some copies add ``(std: 0.013)`` after algbw). One such block is one run: one size (the payload, in GB of
1e9 bytes), the ranks (workers), the trials, algbw and busbw as stated. The run's figure is its busbw (kept as
``avg_busbw_GBps``, as nccl-tests' ``# Avg bus bandwidth``). The time of one all-reduce is derived: the payload over
the stated algbw (the program computes algbw as payload / time). The element type and the backend are not printed
(the program allocates float32 and uses NCCL by default, but the log does not say): they stay unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of

TORCH_ALLREDUCE = "torch_allreduce_bench"
EXAMPLE = ("torch.distributed all-reduce benchmark lines ('The average bandwidth of all_reduce with a 4.0GB payload "
           "(20 trials, 4 ranks):', ' algbw: 218.635 GBps (1749.1 Gbps)', ' busbw: ...')")
WORKLOAD = "allreduce"
_HEADER = re.compile(r"The average bandwidth of all_reduce with a (?P<gb>[\d.]+)\s*GB payload "
                     r"\((?P<trials>\d+) trials, (?P<ranks>\d+) ranks\)")
_BW = re.compile(r"\b(?P<name>algbw|busbw): (?P<gbps>[\d.]+) GBps(?: \(std: (?P<std>[\d.]+)\))?")


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """A new run at each header; its algbw and busbw lines belong to it."""
    out: list[int | None] = []
    index = -1
    for line in lines:
        if _HEADER.search(line.text):
            index += 1
            out.append(index)
        elif index >= 0 and _BW.search(line.text):
            out.append(index)
        else:
            out.append(None)
    return out


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each benchmark block (with the lines before it) in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One block as an all-reduce run of one size; InputError when algbw or busbw is missing."""
    header = next(((line, m) for line in lines if (m := _HEADER.search(line.text))), None)
    if header is None:
        raise error(file, lines[0].number, "no all_reduce benchmark header", EXAMPLE)
    after = [(line, m) for line in lines if line.number > header[0].number for m in _BW.finditer(line.text)]
    stated = {m["name"]: (line, m) for line, m in reversed(after)}  # the first of each after the header
    if "algbw" not in stated or "busbw" not in stated:
        raise error(file, header[0].number, "the benchmark's result lacks its algbw or busbw line (log cut?)",
                    "' algbw: 218.635 GBps (1749.1 Gbps)' and ' busbw: 327.952 GBps (2623.6 Gbps)'")
    m = header[1]
    shown = Shown()
    shown.put("workload", WORKLOAD, None)
    shown.put("extra.program", "torch-all-reduce-bench", header[0].number)
    shown.put("extra.collective", "all_reduce", header[0].number)
    shown.put("workers", int(m["ranks"]), header[0].number)
    for name, value in (given or {}).items():
        shown.put(name, value, None)
    nbytes = round(float(m["gb"]) * 1e9)
    algbw, busbw = (float(stated[k][1]["gbps"]) * 1e9 for k in ("algbw", "busbw"))
    seconds = nbytes / algbw if algbw else None
    row: dict[str, Any] = {"dtype": None, "bytes": nbytes, "redop": "sum", "algbw_stated": algbw,
                           "busbw_stated": busbw, "latencies": [seconds] if seconds else [],
                           "latency_median": seconds, "trials": int(m["trials"])}
    if stated["algbw"][1]["std"]:
        row["algbw_std_stated"] = float(stated["algbw"][1]["std"]) * 1e9
    workers = int(m["ranks"])
    metrics = {
        "format": TORCH_ALLREDUCE, "program": "torch-all-reduce-bench", "results": [row],
        "avg_busbw_GBps": busbw / 1e9, "raw_backend": None, "raw_missing": "the benchmark measures one path",
        "bus_factor": 2.0 * (workers - 1) / workers if workers > 0 else None,
        "latency_aggregation": "the payload over the stated algbw (the benchmark's mean over its trials)",
        "stated": ["algbw", "busbw", "payload", "trials", "ranks"],
        "derived": {"latency_median": "the stated payload over the stated algbw"},
    }
    return ParsedRun(format=TORCH_ALLREDUCE, file=file, first_line=lines[0].number, last_line=lines[-1].number,
                     settings=shown.values, where=shown.where, metrics=metrics,
                     figure_line=stated["busbw"][0].number, tail=tail_of([line.text for line in lines]))


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every all-reduce benchmark block in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
