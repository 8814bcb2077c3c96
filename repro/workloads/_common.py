"""Plumbing shared by the workloads: arguments, Horovod start-up, addresses, timing and the result line.

The module imports no TensorFlow or Horovod at import time; `start()` does, so the pure helpers
(address parsing, Gloo slot computation, thread defaults, statistics) are testable without them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import socket
import struct
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

FORMAT = "repro.workload/1"
RESULT_PREFIX = "REPRO_RESULT "
ERROR_PREFIX = "repro-workload error: "

# Environment variables recorded in a result's settings: they change what is measured. Per-rank
# values and the random rendezvous port would only make equal runs look different.
_RECORDED_ENV = re.compile(r"^(HOROVOD_|NCCL_|OMP_|KMP_|TF_ENABLE_ONEDNN_OPTS$|TF_XLA_FLAGS$|REPRO_GLOO_HOSTS$)")
_UNRECORDED_ENV = frozenset(
    {
        "HOROVOD_RANK",
        "HOROVOD_LOCAL_RANK",
        "HOROVOD_CROSS_RANK",
        "HOROVOD_HOSTNAME",
        "HOROVOD_GLOO_RENDEZVOUS_PORT",
        "HOROVOD_GLOO_RENDEZVOUS_ADDR",
        # set per process by prepare_gloo_environment; the result's `world` has them
        "HOROVOD_SIZE",
        "HOROVOD_LOCAL_SIZE",
        "HOROVOD_CROSS_SIZE",
    }
)


class WorkloadError(Exception):
    """A bad setting or an unusable environment: reported as one `repro-workload error:` line."""


# --------------------------------------------------------------------------- arguments


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises WorkloadError instead of printing usage, so every failure is one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise WorkloadError(f"{self.prog}: {message}")


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite float > 0."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags every workload takes: thread counts, seed, output file."""
    parser.add_argument(
        "--intra-threads",
        type=non_negative_int,
        default=0,
        help="TensorFlow intra-op threads per worker (0: usable cores / workers on the host)",
    )
    parser.add_argument(
        "--inter-threads",
        type=non_negative_int,
        default=0,
        help="TensorFlow inter-op threads per worker (0: min(2, intra-op threads))",
    )
    parser.add_argument(
        "--seed", type=int, default=1234, help="random seed (rank r uses seed + r where it must differ)"
    )
    parser.add_argument("--output", default=None, help="also write the result JSON to this file (rank 0)")


# --------------------------------------------------------------------------- addresses

_FIB_LEAF = re.compile(r"^\s*\|--\s+(\d{1,3}(?:\.\d{1,3}){3})\s*$")
_FIB_HOST_LOCAL = re.compile(r"^\s*/32\s+host\s+LOCAL\b")


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8."""
    return address.startswith("127.")


def parse_fib_trie(text: str, include_loopback: bool = False) -> list[str]:
    """Local IPv4 addresses from the text of /proc/net/fib_trie, in order of appearance, deduplicated.

    A local address is a leaf (`|-- A.B.C.D`) followed by a `/32 host LOCAL` line; the table lists
    each one in both its Main and Local sections.
    """
    found: list[str] = []
    leaf: str | None = None
    for line in text.splitlines():
        match = _FIB_LEAF.match(line)
        if match:
            leaf = match.group(1)
            continue
        if leaf is None:
            continue
        if line.strip().startswith("/"):
            if _FIB_HOST_LOCAL.match(line) and leaf not in found and (include_loopback or not is_loopback(leaf)):
                found.append(leaf)
        else:
            leaf = None
    return found


def interface_addresses() -> list[tuple[str, str]]:
    """(interface, IPv4 address) pairs of this network namespace, from the SIOCGIFCONF ioctl."""
    import array
    import fcntl

    siocgifconf = 0x8912
    record = 40  # sizeof(struct ifreq) on 64-bit Linux
    max_records = 256
    buffer = array.array("B", b"\0" * (record * max_records))
    address, _ = buffer.buffer_info()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("iL", record * max_records, address)
        length = struct.unpack("iL", fcntl.ioctl(sock.fileno(), siocgifconf, request))[0]
    data = buffer.tobytes()[:length]
    pairs = []
    for offset in range(0, length, record):
        name = data[offset : offset + 16].split(b"\0", 1)[0].decode()
        ip = socket.inet_ntoa(data[offset + 20 : offset + 24])
        pairs.append((name, ip))
    return pairs


def local_ipv4_addresses(include_loopback: bool = False) -> list[str]:
    """Every IPv4 address of this network namespace (without 127/8 unless asked)."""
    try:
        with open("/proc/net/fib_trie") as handle:
            return parse_fib_trie(handle.read(), include_loopback)
    except OSError:
        pass
    try:
        pairs = interface_addresses()
    except OSError:
        return []
    out: list[str] = []
    for _, ip in pairs:
        if ip not in out and (include_loopback or not is_loopback(ip)):
            out.append(ip)
    return out


def interface_of(address: str) -> str | None:
    """The interface that holds `address` in this namespace, or None."""
    try:
        pairs = interface_addresses()
    except OSError:
        return None
    for name, ip in pairs:
        if ip == address:
            return name
    if is_loopback(address):
        return next((name for name, ip in pairs if is_loopback(ip)), None)
    return None


# --------------------------------------------------------------------------- Gloo slots

_HOST_SLOTS = re.compile(r"^([\w.-]+):([0-9]+)$")


def parse_host_slots(hosts: str) -> list[tuple[str, int]]:
    """'10.0.0.1:2,10.0.0.2:2' -> [('10.0.0.1', 2), ('10.0.0.2', 2)]; names must be unique."""
    out: list[tuple[str, int]] = []
    for item in hosts.split(","):
        match = _HOST_SLOTS.match(item.strip())
        if not match:
            raise WorkloadError(f"bad host '{item}' in '{hosts}': expected ADDR:SLOTS,ADDR:SLOTS")
        host, slots = match.group(1), int(match.group(2))
        if slots < 1:
            raise WorkloadError(f"host '{host}' has {slots} slots; it needs at least 1")
        if any(host == seen for seen, _ in out):
            raise WorkloadError(f"host '{host}' appears twice in '{hosts}'")
        out.append((host, slots))
    return out


def slot_assignments(hosts: Sequence[tuple[str, int]], world_size: int | None = None) -> list[dict[str, Any]]:
    """Rank placement when hosts are filled in order (mpirun --map-by slot), as Horovod's
    get_host_assignments computes it: one dict per rank with hostname, rank, size, local_rank,
    local_size, cross_rank, cross_size."""
    capacity = sum(slots for _, slots in hosts)
    size = capacity if world_size is None else world_size
    if size > capacity:
        raise WorkloadError(f"{size} processes requested but the hosts have only {capacity} slots")
    placed: list[tuple[str, int]] = []  # (host, local_rank) per rank
    local_sizes: dict[str, int] = {}
    for host, slots in hosts:
        for local_rank in range(slots):
            if len(placed) == size:
                break
            placed.append((host, local_rank))
            local_sizes[host] = local_rank + 1
    # cross communicator: the ranks that share a local_rank, one per host, in host order
    cross: dict[int, list[str]] = {}
    for host, local_rank in placed:
        cross.setdefault(local_rank, []).append(host)
    return [
        {
            "hostname": host,
            "rank": rank,
            "size": size,
            "local_rank": local_rank,
            "local_size": local_sizes[host],
            "cross_rank": cross[local_rank].index(host),
            "cross_size": len(cross[local_rank]),
        }
        for rank, (host, local_rank) in enumerate(placed)
    ]


def gloo_slot_env(hosts: str, rank: int, world_size: int | None = None) -> dict[str, str]:
    """The HOROVOD_* variables horovodrun would give rank `rank` of `world_size` (default: every
    slot) on `hosts`."""
    plan = slot_assignments(parse_host_slots(hosts), world_size)
    if not 0 <= rank < len(plan):
        raise WorkloadError(f"rank {rank} is outside the {len(plan)} slots of '{hosts}'")
    slot = plan[rank]
    return {
        "HOROVOD_HOSTNAME": str(slot["hostname"]),
        "HOROVOD_RANK": str(slot["rank"]),
        "HOROVOD_SIZE": str(slot["size"]),
        "HOROVOD_LOCAL_RANK": str(slot["local_rank"]),
        "HOROVOD_LOCAL_SIZE": str(slot["local_size"]),
        "HOROVOD_CROSS_RANK": str(slot["cross_rank"]),
        "HOROVOD_CROSS_SIZE": str(slot["cross_size"]),
    }


def prepare_gloo_environment(environ: dict[str, str] | None = None) -> bool:
    """Under `repro.workloads.gloo`, give this process the slot variables Horovod's Gloo needs.

    mpirun only starts the processes here; Horovod's rendezvous assigns ranks from HOROVOD_RANK etc.,
    which horovodrun would set and mpirun does not. Returns True when it set them.
    """
    env = os.environ if environ is None else environ
    if env.get("HOROVOD_CONTROLLER", "").lower() != "gloo" or "HOROVOD_RANK" in env:
        return False
    hosts = env.get("REPRO_GLOO_HOSTS")
    if not hosts or "OMPI_COMM_WORLD_RANK" not in env:
        raise WorkloadError(
            "HOROVOD_CONTROLLER=gloo under plain mpirun gives every rank size 1; "
            "launch with `python -m repro.workloads.gloo --hosts ADDR:SLOTS,... -- mpirun ...`"
        )
    rank = int(env["OMPI_COMM_WORLD_RANK"])
    size = int(env.get("OMPI_COMM_WORLD_SIZE", "0")) or None
    expected = env.get("REPRO_GLOO_NP")
    if expected and size is not None and int(expected) != size:
        raise WorkloadError(f"mpirun started {size} processes but the Gloo rendezvous expects {expected}")
    if size is None and expected:
        size = int(expected)
    slot = gloo_slot_env(hosts, rank, size)
    host = slot["HOROVOD_HOSTNAME"]
    if re.match(r"^\d{1,3}(\.\d{1,3}){3}$", host) and not is_loopback(host):
        mine = local_ipv4_addresses()
        if mine and host not in mine:
            raise WorkloadError(
                f"rank {rank} was placed on {host} by REPRO_GLOO_HOSTS but runs on {', '.join(mine)}; "
                "fill hosts in order (mpirun --map-by slot) with the same host list"
            )
    env.update(slot)
    return True


# --------------------------------------------------------------------------- threads and stats


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which mpirun's binding narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def resolve_threads(intra: int, inter: int, local_size: int, cpus: int) -> tuple[int, int]:
    """Thread counts with 0 meaning 'auto': usable cores shared among the host's workers."""
    resolved_intra = intra or max(1, cpus // max(1, local_size))
    resolved_inter = inter or min(2, resolved_intra)
    return resolved_intra, resolved_inter


def median(values: Sequence[float]) -> float | None:
    """Median, or None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, or None for no values."""
    return sum(values) / len(values) if values else None


def recorded_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The launch-time environment variables that change what a workload measures."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(env) if _RECORDED_ENV.match(k) and k not in _UNRECORDED_ENV}


def json_safe(value: Any) -> Any:
    """Replace NaN and infinities by None (JSON has neither) and numpy scalars by Python ones."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return json_safe(value.item())
    return value


def result_line(result: dict[str, Any]) -> str:
    """The one stdout line a workload's rank 0 prints."""
    return RESULT_PREFIX + json.dumps(json_safe(result), allow_nan=False, separators=(",", ":"))


# --------------------------------------------------------------------------- runtime (TF + Horovod)


@dataclass(frozen=True)
class World:
    """This process's place in the job, and the resolved runtime settings."""

    rank: int
    size: int
    local_rank: int
    local_size: int
    controller: str
    cpu_operations: str
    gpu: bool
    device: str
    hostname: str
    addresses: tuple[str, ...]
    intra_threads: int
    inter_threads: int
    usable_cpus: int


def quiet_tensorflow() -> None:
    """Silence TensorFlow's C++ and Python start-up chatter (must run before it is imported)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def start(intra_threads: int, inter_threads: int) -> World:
    """Initialise Horovod, set thread counts, pin one GPU per local rank; returns this rank's World."""
    quiet_tensorflow()
    prepare_gloo_environment()
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    import horovod.tensorflow as hvd

    hvd.init()
    cpus = usable_cpus()
    intra, inter = resolve_threads(intra_threads, inter_threads, hvd.local_size(), cpus)
    # Must happen before TensorFlow's runtime starts: nothing above has run an op.
    tf.config.threading.set_intra_op_parallelism_threads(intra)
    tf.config.threading.set_inter_op_parallelism_threads(inter)

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        gpu = gpus[hvd.local_rank() % len(gpus)]
        tf.config.set_visible_devices(gpu, "GPU")
        tf.config.experimental.set_memory_growth(gpu, True)
        details = tf.config.experimental.get_device_details(gpu)
        device = f"GPU:{hvd.local_rank() % len(gpus)} {details.get('device_name', 'unknown')}"
    else:
        device = "CPU"

    if hvd.gloo_enabled():
        controller = "gloo"
    elif hvd.mpi_enabled():
        controller = "mpi"
    else:
        controller = "unknown"
    cpu_operations = os.environ.get("HOROVOD_CPU_OPERATIONS", "").lower() or controller
    return World(
        rank=hvd.rank(),
        size=hvd.size(),
        local_rank=hvd.local_rank(),
        local_size=hvd.local_size(),
        controller=controller,
        cpu_operations=cpu_operations,
        gpu=bool(gpus),
        device=device,
        hostname=socket.gethostname(),
        addresses=tuple(local_ipv4_addresses()),
        intra_threads=intra,
        inter_threads=inter,
        usable_cpus=cpus,
    )


def runtime_settings(world: World) -> dict[str, Any]:
    """Settings every workload records: threads, CPUs, launch environment."""
    return {
        "intra_threads": world.intra_threads,
        "inter_threads": world.inter_threads,
        "usable_cpus": world.usable_cpus,
        "env": recorded_env(),
    }


def software() -> dict[str, str]:
    """Versions of what the measurement ran on."""
    import horovod
    import numpy
    import tensorflow as tf

    return {
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "horovod": horovod.__version__,
        "numpy": numpy.__version__,
    }


def rank_record(
    world: World, warmup_times: Sequence[float], step_times: Sequence[float], items_per_step: int
) -> dict[str, Any]:
    """This rank's entry of the result's `ranks` list."""
    return {
        "rank": world.rank,
        "local_rank": world.local_rank,
        "hostname": world.hostname,
        "addresses": list(world.addresses),
        "device": world.device,
        "warmup_times": [float(t) for t in warmup_times],
        "step_times": [float(t) for t in step_times],
        "items_per_step": int(items_per_step),
    }


def gather(value: Any) -> list[Any]:
    """Every rank's `value`, in rank order, on every rank."""
    import horovod.tensorflow as hvd

    return list(hvd.allgather_object(value))


def finish(
    workload: str,
    world: World,
    settings: dict[str, Any],
    record: dict[str, Any],
    metrics: dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]],
    output: str | None,
) -> dict[str, Any] | None:
    """Gather the ranks' records; rank 0 prints the REPRO_RESULT line and writes `output`.

    `metrics` may be a function of the gathered rank records. Returns the result on rank 0.
    """
    ranks = sorted(gather(record), key=lambda r: r["rank"])
    if world.rank != 0:
        return None
    result = {
        "format": FORMAT,
        "workload": workload,
        "settings": settings,
        "world": {
            "size": world.size,
            "controller": world.controller,
            "cpu_operations": world.cpu_operations,
            "gpu": world.gpu,
        },
        "software": software(),
        "ranks": ranks,
        "metrics": metrics(ranks) if callable(metrics) else metrics,
    }
    line = result_line(result)
    if output:
        directory = os.path.dirname(os.path.abspath(output))
        os.makedirs(directory, exist_ok=True)
        with open(output, "w") as handle:
            handle.write(line[len(RESULT_PREFIX) :] + "\n")
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return result


def log(message: str) -> None:
    """Progress output: stderr, so stdout holds only the result line."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def run_main(body: Callable[[Sequence[str] | None], Any], argv: Sequence[str] | None = None) -> int:
    """Run a workload's body; a WorkloadError becomes one `repro-workload error:` line and exit 2."""
    try:
        body(argv)
    except WorkloadError as error:
        sys.stderr.write(ERROR_PREFIX + str(error) + "\n")
        sys.stderr.flush()
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # report anything else in the same greppable form, after the traceback
        traceback.print_exc()
        sys.stderr.write(f"{ERROR_PREFIX}{type(error).__name__}: {error}\n")
        sys.stderr.flush()
        return 1
    return 0
