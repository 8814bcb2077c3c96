"""nccl-tests and rccl-tests result tables (NVIDIA/nccl-tests, ROCm/rccl-tests ``all_reduce_perf``) as
all-reduce ParsedRuns (pure): the same kind of record as repro's own all-reduce sweep.

What the program prints (rank 0)::

    # nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
    #  Rank  0 Group  0 Pid   6899 on host-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
               8             2     float     sum      -1    135.8    0.00    0.00      0    123.5 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 70.742

One table is one run: its rows (size in bytes, element count, type, reduction, root, then time in
microseconds, algbw and busbw in GB/s and #wrong, out-of-place then in-place), the ranks from the device
lines (workers, hosts, the GPU model), and the program's own ``Avg bus bandwidth`` (GB/s), the run's figure.
The collective comes from the command line (``all_reduce_perf``) or the ``Collective test concluded`` line;
only all-reduce tables become records (a table whose collective the log does not name needs
``--set collective=all_reduce``). Older tables without the ``root`` column are read too. Pastes that lost the
leading ``#`` of some lines (markdown) are read as printed. A table that ends in the program's own failure line
(``host: Test NCCL failure common.cu:392 'unhandled cuda error ...'``) before any row is a failed run, kept with
that line as its failure (its NCCL INFO lines, when present, say which path it was taking).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from repro.results.importers import split
from repro.results.importers.lines import Line, error
from repro.results.importers.runs import ParsedRun, Shown, tail_of

NCCL_TESTS = "nccl_tests"
EXAMPLE = "nccl-tests / rccl-tests all_reduce_perf tables ('#  size  count  type  redop  root  time  algbw  busbw')"
WORKLOAD = "allreduce"  # repro's own all-reduce sweep: the same kind of record, compared the same way
_HEADER = re.compile(r"^#?\s*size\s+count\s+type\s+redop\s+(?:root\s+)?time\s+algbw\s+busbw\s+(?:#wrong|error)", re.I)
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(?:(-?\d+)\s+)?([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
                  r"(?:\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+))?\s*$")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([\d.]+)")
_DEVICE = re.compile(r"^#?\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+"
                     r"\[[^\]]*\]\s+(.+?)\s*$")
_THREADS = re.compile(r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_COLLECTIVE = re.compile(r"\b(\w+?)_perf(?:_mpi)?\b")
_CONCLUDED = re.compile(r"Collective test concluded:\s*(\w+?)_perf")
# nccl-tests' common.cu: `<host>: Test NCCL failure <file>:<line> '<error>'` (also CUDA), then ` .. <host> pid N:
# Test failure <file>:<line>` for each frame
_FAILURE = re.compile(r"\bTest (?:NCCL|CUDA) failure\b.*$|\bTest failure\b.*$")
_VERSION = re.compile(r"^#?\s*(nccl-tests|rccl-tests)?.*?\b(NCCL|RCCL) version\s+([\d.]+)", re.I)
# nccl-tests' type names as repro's all-reduce workload names them
_DTYPES = {"float": "float32", "half": "float16", "double": "float64", "bfloat16": "bfloat16", "int32": "int32",
           "int": "int32", "int64": "int64", "int8": "int8", "uint8": "uint8"}


def run_indexes(lines: Sequence[Line]) -> list[int | None]:
    """A new run at each table header; its rows and the Avg line after it belong to it."""
    out: list[int | None] = []
    index = -1
    for line in lines:
        text = line.bare
        if _HEADER.match(text):
            index += 1
            out.append(index)
        elif index >= 0 and (_ROW.match(text) or _AVG.match(text)):
            out.append(index)
        else:
            out.append(None)
    return out


def groups(lines: Sequence[Line]) -> list[list[Line]]:
    """The lines of each table (with the lines before it: command, device lines) in a log's lines."""
    return split.groups(lines, run_indexes(lines))


def _collective(lines: Sequence[Line]) -> tuple[str | None, int | None]:
    """The collective the lines name (all_reduce, all_gather...), and the line naming it."""
    for line in lines:
        if m := _CONCLUDED.search(line.text):
            return m.group(1), line.number
    for line in lines:
        if "_perf" in line.text and (m := _COLLECTIVE.search(line.text)):
            return m.group(1), line.number
    return None, None


def read_run(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> ParsedRun:
    """One table as an all-reduce run; InputError when it is not an all-reduce table or has no rows."""
    given = dict(given or {})
    header = next((line for line in lines if _HEADER.match(line.bare)), None)
    rows = [(line, m) for line in lines if header and line.number > header.number and (m := _ROW.match(line.bare))]
    failure = next((m.group(0) for line in lines if header and line.number > header.number
                    and (m := _FAILURE.search(line.bare))), None)
    if header is None or (not rows and failure is None):
        raise error(file, (header or lines[0]).number, "an nccl-tests table without result rows (log cut?)",
                    "'   8   2   float   sum   -1   36.47   0.00   0.00   0 ...'")
    collective, where = _collective(lines)
    collective = collective or given.pop("extra.collective", None)
    if collective is None:
        raise error(file, header.number, "the log does not name the collective of this table",
                    f"the command (all_reduce_perf) or --set '{file.rsplit('/', 1)[-1]}:collective=all_reduce'")
    if collective != "all_reduce":
        raise error(file, header.number, f"a {collective} table: only all_reduce tables are all-reduce records",
                    "an all_reduce_perf table", collective)
    shown = Shown()
    shown.put("workload", WORKLOAD, None)
    shown.put("extra.program", "nccl-tests", header.number)
    shown.put("extra.collective", collective, where)
    devices = [(line, m) for line in lines if (m := _DEVICE.match(line.bare))]
    if devices:
        shown.put("workers", len({m.group(1) for _, m in devices}), devices[0][0].number)
        shown.put("hosts", len({m.group(2) for _, m in devices}), devices[0][0].number)
    threads = next(((line, m) for line in lines if (m := _THREADS.match(line.bare))), None)
    if threads:
        shown.put("extra.threads_per_process", int(threads[1].group(1)), threads[0].number)
        shown.put("extra.gpus_per_thread", int(threads[1].group(2)), threads[0].number)
    shown.put("backend", "rccl" if any("rccl" in line.text.lower() for line in lines) else "nccl", header.number)
    for name, value in given.items():
        shown.put(name, value, None)
    results = [_row(m) for _, m in rows]
    avg = next(((line, float(m.group(1))) for line in lines if (m := _AVG.match(line.bare))), None)
    software = {}
    for line in lines:
        if (m := _VERSION.match(line.bare)) and m.group(2).lower() not in software:
            software[m.group(2).lower()] = m.group(3)
    workers = shown.get("workers")
    metrics = {
        "format": NCCL_TESTS, "program": "nccl-tests", "backend": shown.get("backend"),
        "path": f"{'rccl' if shown.get('backend') == 'rccl' else 'nccl'}-tests {collective}_perf, out-of-place",
        "raw_backend": None, "raw_missing": "nccl-tests measures one path",
        "bus_factor": 2.0 * (workers - 1) / workers if isinstance(workers, int) and workers > 0 else None,
        "latency_aggregation": "nccl-tests' mean time over its iterations", "results": results,
        "avg_busbw_GBps": avg[1] if avg else None,
        "stated": ["time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong", *(["Avg bus bandwidth"] if avg else [])],
        "derived": {"latency_median": "the stated time in seconds (one figure per size: nccl-tests' mean)"},
    }
    warnings = () if avg or failure else (
        "no '# Avg bus bandwidth' line: the table's figure is unknown (log cut?)",)
    return ParsedRun(format=NCCL_TESTS, file=file, first_line=lines[0].number, last_line=lines[-1].number,
                     settings=shown.values, where=shown.where, metrics=metrics, software=software,
                     devices=tuple(dict.fromkeys(m.group(3) for _, m in devices)), warnings=warnings,
                     figure_line=avg[0].number if avg else None, tail=tail_of([line.text for line in lines]),
                     failure=failure if not rows else None)


def _row(m: re.Match[str]) -> dict[str, Any]:
    """One size: the out-of-place figures as the row states them (bytes/s and seconds), in-place beside them."""
    size, count, seconds = int(m.group(1)), int(m.group(2)), float(m.group(6)) / 1e6
    row: dict[str, Any] = {
        "dtype": _DTYPES.get(m.group(3), m.group(3)), "elements": count, "bytes": size, "redop": m.group(4),
        "latencies": [seconds], "latency_median": seconds,
        "algbw_stated": float(m.group(7)) * 1e9, "busbw_stated": float(m.group(8)) * 1e9,
        "wrong": int(m.group(9)) if m.group(9).isdigit() else None,
    }
    if m.group(10):
        row["in_place"] = {"latency_s": float(m.group(10)) / 1e6, "algbw": float(m.group(11)) * 1e9,
                           "busbw": float(m.group(12)) * 1e9,
                           "wrong": int(m.group(13)) if m.group(13).isdigit() else None}
    return row


def read(lines: Sequence[Line], file: str, given: Mapping[str, Any] | None = None) -> list[ParsedRun]:
    """Every nccl-tests table in a log's lines."""
    return [read_run(group, file, given) for group in groups(lines)]
