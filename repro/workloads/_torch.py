"""PyTorch plumbing shared by the torch_* workloads: rank variables, process-group start-up, gather, software.

The torch_* programs run under torchrun (which sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT),
under mpirun (OMPI_COMM_WORLD_*; the launcher passes MASTER_ADDR and MASTER_PORT with -x) or under srun
(SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; the rendezvous is the node srun was started on, where rank 0 runs).
`rank_environment` maps whichever the process got to the variables `init_process_group("env://")` reads.
Nothing here imports torch at import time, so the mapping is unit-tested without it.
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from . import WorkloadError
from . import _common as common
from ._common import World, resolve_threads, usable_cpus
from ._net import interface_of, launcher_rank, local_ipv4_addresses

BACKENDS = ("gloo", "nccl", "mpi")
DEFAULT_PORT = 29500  # torch's own default MASTER_PORT
# where each launcher puts the rank on this host and the number of ranks on this host
_LOCAL_RANK = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID")
_LOCAL_SIZE = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")


@dataclass(frozen=True)
class RankEnv:
    """This process's place in the job as `torch.distributed` needs it, and which launcher said so."""

    rank: int
    size: int
    local_rank: int
    local_size: int
    master_addr: str
    master_port: int
    source: str  # torchrun, mpirun, pmix, srun, hydra or single

    def variables(self) -> dict[str, str]:
        """The environment `init_process_group(init_method="env://")` and DDP read."""
        return {"RANK": str(self.rank), "WORLD_SIZE": str(self.size), "LOCAL_RANK": str(self.local_rank),
                "LOCAL_WORLD_SIZE": str(self.local_size), "MASTER_ADDR": self.master_addr,
                "MASTER_PORT": str(self.master_port)}


def _digits(env: Mapping[str, str], name: str) -> int | None:
    value = env.get(name, "").strip()
    return int(value) if value.isdigit() else None


def slurm_local_size(env: Mapping[str, str]) -> int | None:
    """Tasks of this step on this node from SLURM_STEP_TASKS_PER_NODE ('2(x3),1') and SLURM_NODEID."""
    text = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE") or ""
    node = _digits(env, "SLURM_NODEID")
    if not text or node is None:
        return None
    counts: list[int] = []
    for part in text.split(","):
        count, _, repeat = part.partition("(x")
        if not count.strip().isdigit():
            return None
        counts += [int(count)] * (int(repeat.rstrip(")")) if repeat.rstrip(")").isdigit() else 1)
    return counts[node] if node < len(counts) else None


def mpirun_host(env: Mapping[str, str]) -> str | None:
    """The address of the host mpirun runs on (where it places rank 0), from the URI Open MPI gives every rank:
    OMPI_MCA_orte_hnp_uri = 'JOBID;tcp://A[,B...]:PORT;...'; its first address (the only one when mpirun was told
    `--mca oob_tcp_if_include IFACE`, as repro's launchers do). None without one."""
    uri = env.get("OMPI_MCA_orte_hnp_uri", "")
    for part in uri.split(";"):
        if part.startswith("tcp://"):
            first = part[len("tcp://"):].rsplit(":", 1)[0].split(",")[0]
            return first or None
    return None


def rank_environment(env: Mapping[str, str]) -> RankEnv:
    """Rank, world size, local rank and rendezvous from the launcher's variables (pure).

    torchrun's RANK/WORLD_SIZE come first (its workers also inherit OMPI_* when mpirun started torchrun),
    then the MPI launchers and srun (repro.workloads._net.launcher_rank). MASTER_ADDR: the environment's,
    else under srun the node srun ran on (SLURM_LAUNCH_NODE_IPADDR: the batch script's node, which holds
    rank 0), else under mpirun mpirun's own host (inside a Slurm job it cannot be named before the job starts),
    else 127.0.0.1 for a single process. MASTER_PORT: the environment's, else 29500 (under Slurm
    29500 + job id mod 1000, so two jobs sharing a node do not meet on one port)."""
    rank, size = _digits(env, "RANK"), _digits(env, "WORLD_SIZE")
    if rank is not None and size is not None:
        source = "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "env"
    else:
        found = launcher_rank(dict(env))
        if found is None:
            rank, size, source = 0, 1, "single"
        else:
            rank, size, source = found[0], found[1], found[2]
            if size is None:
                raise WorkloadError(f"the {source} launcher gave rank {rank} but no world size: set WORLD_SIZE")
    if rank >= size:
        raise WorkloadError(f"rank {rank} is not a rank of a world of {size} processes")
    local_rank = next((v for v in (_digits(env, n) for n in _LOCAL_RANK) if v is not None), None)
    local_size = next((v for v in (_digits(env, n) for n in _LOCAL_SIZE) if v is not None), None)
    if local_size is None and source in ("srun", "pmix"):
        local_size = slurm_local_size(env)
    if local_rank is None:
        local_rank = rank if size == 1 or source == "single" else 0
    addr = (env.get("MASTER_ADDR") or env.get("SLURM_LAUNCH_NODE_IPADDR") or mpirun_host(env)
            or ("127.0.0.1" if size == 1 else ""))
    if not addr:
        raise WorkloadError(f"MASTER_ADDR is not set: the {source} launcher must pass the address of rank 0's host "
                            "(mpirun -x MASTER_ADDR=HOST -x MASTER_PORT=PORT)")
    port = _digits(env, "MASTER_PORT")
    if port is None:
        job = _digits(env, "SLURM_JOB_ID")
        port = DEFAULT_PORT + (job % 1000 if job is not None else 0)
    return RankEnv(rank, size, local_rank, local_size or 1, addr, port, source)


def route_interface(address: str) -> str | None:
    """The interface this host reaches `address` through (a UDP connect sends nothing), or None."""
    if address in local_ipv4_addresses(include_loopback=True):
        return interface_of(address)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((address, 9))
            return interface_of(probe.getsockname()[0])
    except OSError:
        return None


def start(backend: str, intra_threads: int, inter_threads: int, *, gpu: bool | None = None) -> tuple[World, Any]:
    """Map the launcher's rank variables, set threads, pin one GPU per local rank, start the process group.

    `gpu`: None uses a GPU when there is one. Returns this rank's World and its torch.device."""
    ranks = rank_environment(os.environ)
    os.environ.update(ranks.variables())
    if ranks.size > 1 and "GLOO_SOCKET_IFNAME" not in os.environ:
        # Gloo otherwise binds to what the hostname resolves to, often 127.0.1.1 on a multi-host run
        iface = route_interface(ranks.master_addr)
        if iface:
            os.environ["GLOO_SOCKET_IFNAME"] = iface
    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available() if gpu is None else gpu
    if backend not in BACKENDS:
        raise WorkloadError(f"unknown backend {backend!r}: choose from {', '.join(BACKENDS)}")
    if backend == "nccl" and not cuda:
        raise WorkloadError("the nccl backend needs a GPU (CUDA) on every rank; use gloo on CPUs")
    if backend == "mpi" and not dist.is_mpi_available():
        raise WorkloadError(f"this PyTorch ({torch.__version__}) was built without MPI (the PyPI wheels are), so the "
                            "mpi backend is not available; use gloo, or a PyTorch built from source with MPI")
    cpus = usable_cpus()
    intra, inter = resolve_threads(intra_threads, inter_threads, ranks.local_size, cpus)
    torch.set_num_threads(intra)
    with contextlib.suppress(RuntimeError):  # already set (a second start in one process)
        torch.set_num_interop_threads(inter)
    if cuda:
        index = ranks.local_rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
        name = f"GPU:{index} {torch.cuda.get_device_name(index)}"
    else:
        device, name = torch.device("cpu"), "CPU"
    if backend == "mpi":
        dist.init_process_group("mpi")
    else:
        dist.init_process_group(backend, init_method="env://", rank=ranks.rank, world_size=ranks.size)
    world = World(rank=dist.get_rank(), size=dist.get_world_size(), local_rank=ranks.local_rank,
                  local_size=ranks.local_size, controller=backend, cpu_operations=backend, gpu=cuda, device=name,
                  hostname=socket.gethostname(), addresses=tuple(local_ipv4_addresses()), intra_threads=intra,
                  inter_threads=inter, usable_cpus=cpus)
    return world, device


def gather(value: Any) -> list[Any]:
    """Every rank's `value`, in rank order, on every rank."""
    import torch.distributed as dist

    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def gathered_gpu_facts(world: World) -> dict[str, Any]:
    """{"gpu_facts": {hostname: nvidia-smi facts}} of every host of a GPU run, from each host's first rank, for the
    result's world; {} on CPU runs (every rank must call it: it gathers)."""
    if not world.gpu:
        return {}
    from . import gpu_facts

    found = gather([world.hostname, gpu_facts.gather() if world.local_rank == 0 else None])
    return {"gpu_facts": {host: facts for host, facts in found if facts is not None}}


def exit_process(code: int) -> NoReturn:
    """End a torch workload's process with `code`, its output flushed, without the interpreter's teardown.

    Gloo runs each collective on a worker thread of its own, which drops its last reference to the work (and
    to the Python tensors it holds) just after the caller's wait has returned. A rank that leaves right after
    its last collective (rank 1 at the end of a run) can reach the interpreter's teardown first; the worker
    thread then needs the GIL to free those tensors, is ended by the finalizing interpreter, and the process
    aborts ("terminate called without an active exception", SIGABRT) after a complete, correct run: seen once
    in about 60 runs on 2 busy cores, in gloo's `ProcessGroupGloo::runLoop` -> `~AsyncAllgatherWork` -> the
    GIL. Everything the run writes is written and flushed before this; nothing else needs the teardown."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def stop() -> None:
    """End the process group (a clean exit: NCCL warns about one left open)."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def software() -> dict[str, str]:
    """Versions of what the measurement ran on: Python, PyTorch, its CUDA, cuDNN and NCCL, numpy."""
    import torch
    import torch.distributed as dist

    out = {"python": platform.python_version(), "torch": torch.__version__,
           "torch_backends": ",".join(b for b, ok in (("gloo", dist.is_gloo_available()),
                                                      ("nccl", dist.is_nccl_available()),
                                                      ("mpi", dist.is_mpi_available())) if ok)}
    if torch.version.cuda:
        out["cuda"] = str(torch.version.cuda)
    if torch.cuda.is_available():
        cudnn = torch.backends.cudnn.version()
        if cudnn:
            out["cudnn"] = str(cudnn)
        with contextlib.suppress(AttributeError, RuntimeError, TypeError):
            out["nccl"] = ".".join(str(p) for p in torch.cuda.nccl.version())
    try:
        import numpy

        out["numpy"] = numpy.__version__
    except ImportError:
        pass
    return out


def finish(workload: str, world: World, settings: dict[str, Any], record: dict[str, Any], metrics: Any,
           output: str | None) -> dict[str, Any] | None:
    """The result document of a torch workload (common.finish with torch's gather, software and each host's GPU
    facts), then the process group stopped: every torch workload ends so."""
    result = common.finish(workload, world, settings, record, metrics, output, gather_with=gather,
                           software_with=software, world_extra=gathered_gpu_facts(world))
    stop()
    return result
