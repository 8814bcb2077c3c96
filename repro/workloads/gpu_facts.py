"""What a GPU run ran on, from the driver's own tool: model, memory, driver, clocks, power limit, topology.

One rank per host (local rank 0) runs `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits` and
`nvidia-smi topo -m`; the torch workloads put the parsed facts in the result's `world["gpu_facts"]`, by host,
next to the NCCL and CUDA versions PyTorch reports (result `software`). The query's fields are those of
`repro prepare`'s facts (playbooks/library/repro_facts.py), so both read alike. Parsers are pure.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from collections.abc import Sequence
from typing import Any

QUERY = ("index", "name", "uuid", "pci.bus_id", "driver_version", "memory.total", "clocks.sm", "clocks.max.sm",
         "clocks.mem", "clocks.max.mem", "power.limit")
# result key, and how to read it (int, float or text)
_FIELDS = {"index": ("index", int), "name": ("name", str), "uuid": ("uuid", str), "pci.bus_id": ("pci_bus_id", str),
           "driver_version": ("driver", str), "memory.total": ("memory_mib", int), "clocks.sm": ("sm_clock_mhz", int),
           "clocks.max.sm": ("max_sm_clock_mhz", int), "clocks.mem": ("mem_clock_mhz", int),
           "clocks.max.mem": ("max_mem_clock_mhz", int), "power.limit": ("power_limit_w", float),
           # nvidia-smi's other names for the same fields
           "gpu_name": ("name", str), "gpu_uuid": ("uuid", str), "gpu_bus_id": ("pci_bus_id", str),
           "clocks.current.sm": ("sm_clock_mhz", int), "clocks.current.memory": ("mem_clock_mhz", int),
           "clocks.max.memory": ("max_mem_clock_mhz", int)}
_UNIT = re.compile(r"\s*(MiB|MHz|W|%)$")
_MISSING = {"", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]"}


def _value(text: str, kind: type) -> Any:
    text = _UNIT.sub("", text.strip())
    if text in _MISSING:
        return None
    if kind is str:
        return text
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if kind is int else number


def parse_query(text: str, fields: Sequence[str] = QUERY) -> list[dict[str, Any]]:
    """Rows of `nvidia-smi --query-gpu=<fields> --format=csv,noheader[,nounits]`, one dict per GPU (pure).

    Units (`81559 MiB`) and N/A markers are handled; a field of the query this module does not know keeps its
    text under its own name. Lines with another number of cells (warnings, blank lines) are skipped."""
    gpus = []
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if len(row) != len(fields):
            continue
        gpu: dict[str, Any] = {}
        for field, cell in zip(fields, row):  # noqa: B905 - lengths checked above
            key, kind = _FIELDS.get(field, (field, str))
            gpu[key] = _value(cell, kind)
        gpus.append(gpu)
    return gpus


def parse_topology(text: str) -> dict[str, Any]:
    """`nvidia-smi topo -m`: the GPU-to-GPU (and GPU-to-NIC) link matrix and each GPU's CPU affinity (pure).

    {"links": {"GPU0": {"GPU1": "NV18", "mlx5_0": "PIX"}, ...}, "cpu_affinity": {"GPU0": "0-47,96-143"},
    "kinds": ["NV18"]} (kinds: the GPU-to-GPU link kinds found). Columns are tab- or blank-separated."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line)), None)
    if header_at is None:
        return {"links": {}, "cpu_affinity": {}, "kinds": []}
    header = re.split(r"\t+|\s{2,}", lines[header_at].strip())
    devices = [h for h in header if not h.lower().endswith("affinity") and h != "GPU NUMA ID"]
    links: dict[str, dict[str, str]] = {}
    affinity: dict[str, str] = {}
    for line in lines[header_at + 1:]:
        if line.startswith("Legend") or not re.match(r"^(GPU\d+|\S+)\s", line):
            break
        cells = line.split()
        name, values = cells[0], cells[1:]
        if len(values) < len(devices):
            continue
        links[name] = {d: v for d, v in zip(devices, values) if d != name}  # noqa: B905 - affinity columns follow
        if name.startswith("GPU") and len(values) > len(devices):
            affinity[name] = values[len(devices)]
    kinds = sorted({v for n, row in links.items() if n.startswith("GPU") for d, v in row.items()
                    if d.startswith("GPU")})
    return {"links": links, "cpu_affinity": affinity, "kinds": kinds}


def _run(argv: list[str]) -> str | None:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout if res.returncode == 0 else None


def gather() -> dict[str, Any]:
    """This host's GPU facts (empty lists and None where nvidia-smi is absent or fails)."""
    query = _run(["nvidia-smi", f"--query-gpu={','.join(QUERY)}", "--format=csv,noheader,nounits"])
    topo = _run(["nvidia-smi", "topo", "-m"])
    gpus = parse_query(query) if query else []
    return {"gpus": gpus, "driver": next((g["driver"] for g in gpus if g.get("driver")), None),
            "topology": topo.strip() if topo else None, "topology_parsed": parse_topology(topo) if topo else None,
            "nvidia_smi": query is not None}
