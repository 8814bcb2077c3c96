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
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import WorkloadError, framing
from ._net import local_ipv4_addresses, prepare_gloo_environment
from .spec import ArgumentParser, Option  # noqa: F401 - ArgumentParser is part of this module's API

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



# --------------------------------------------------------------------------- arguments


# Options every workload takes besides its own (threads and seed), declared as the spec declares its own.
COMMON_OPTIONS = (
    Option("intra_threads", int, 0, "TensorFlow intra-op threads per worker (0: usable cores / workers on the host)",
           minimum=0, setting="threads", sweep=True),
    Option("inter_threads", int, 0, "TensorFlow inter-op threads per worker (0: min(2, intra-op threads))",
           minimum=0, bench=False),
    Option("seed", int, 1234, "random seed (rank r uses seed + r where it must differ)", bench=False),
)


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    """--output FILE: where rank 0 also writes the result JSON (not an option of the measurement)."""
    parser.add_argument("--output", default=None, help="also write the result JSON to this file (rank 0)")


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
    *,
    gather_with: Callable[[Any], list[Any]] | None = None,
    software_with: Callable[[], dict[str, str]] | None = None,
    world_extra: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """Gather the ranks' records; rank 0 prints the REPRO_RESULT line and writes `output`.

    `metrics` may be a function of the gathered rank records. Returns the result on rank 0. A framework other
    than Horovod's gives its own `gather_with` and `software_with`; `world_extra` adds to the result's world.
    """
    ranks = sorted((gather_with or gather)(record), key=lambda r: r["rank"])
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
            **(world_extra or {}),
        },
        "software": (software_with or software)(),
        "ranks": ranks,
        "metrics": metrics(ranks) if callable(metrics) else metrics,
    }
    line = result_line(result)
    if output:
        directory = os.path.dirname(os.path.abspath(output))
        os.makedirs(directory, exist_ok=True)
        with open(output, "w") as handle:
            handle.write(line[len(RESULT_PREFIX) :] + "\n")
    sys.stdout.write(framing.printed(line))
    sys.stdout.flush()
    return result


PROGRESS_PREFIX = "REPRO_PROGRESS "


def progress(message: str) -> None:
    """A line repro shows on its terminal while the point runs (stderr, prefixed; rank 0 only, by the caller)."""
    sys.stderr.write(PROGRESS_PREFIX + message.replace("\n", " ") + "\n")
    sys.stderr.flush()


STEP_LINE = re.compile(r"\s*\[(\d+)/(\d+)\]( step\b)?")


def step_of(line: str) -> tuple[int, int, bool] | None:
    """(k, N, a training step?) of a progress line '[k/N] ...' ('[k/N] step ...': one training step of N), else
    None: how repro reads how far a running point is (repro.pipeline.progress)."""
    m = STEP_LINE.match(line)
    if not m:
        return None
    k, n = int(m.group(1)), int(m.group(2))
    return (k, n, bool(m.group(3))) if 0 <= k <= n and n > 0 else None


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
