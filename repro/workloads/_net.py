"""Where a worker runs: its IPv4 addresses (hosts on one machine share a hostname), its rank as the
launcher that started it says, and its Gloo slot.

Pure helpers, no TensorFlow or Horovod: parsing /proc/net/fib_trie and interface lists, the rank and
world size from the launcher's environment (mpirun, srun, PMIx, MPICH's hydra), and the rank layout
Horovod's Gloo rendezvous expects when mpirun, not horovodrun, starts the processes.
"""

from __future__ import annotations

import os
import re
import socket
import struct
from collections.abc import Sequence
from typing import Any

from . import WorkloadError

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


# --------------------------------------------------------------------------- rank and size

# Where each launcher puts a process's rank and the world size, most specific first: Open MPI's mpirun (also
# inside a Slurm allocation, where its daemons are Slurm tasks whose SLURM_PROCID is not the rank), then a
# PMIx launch (srun --mpi=pmix: PMIX_RANK, the size from Slurm), Slurm itself (srun without MPI), and
# MPICH/Intel MPI's hydra.
RANK_SOURCES = (
    ("mpirun", "OMPI_COMM_WORLD_RANK", ("OMPI_COMM_WORLD_SIZE",)),
    ("pmix", "PMIX_RANK", ("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "PMIX_SIZE")),
    ("srun", "SLURM_PROCID", ("SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")),
    ("hydra", "PMI_RANK", ("PMI_SIZE",)),
)


def launcher_rank(environ: dict[str, str] | None = None) -> tuple[int, int | None, str] | None:
    """(rank, world size or None, launcher) as the launcher that started this process set them, or None."""
    env = os.environ if environ is None else environ
    for launcher, rank_name, size_names in RANK_SOURCES:
        rank = env.get(rank_name, "").strip()
        if not rank.isdigit():
            continue
        size = next((int(env[n]) for n in size_names if env.get(n, "").strip().isdigit()), None)
        if size is not None and int(rank) >= size:
            raise WorkloadError(f"{rank_name}={rank} is not a rank of a world of {size} processes")
        return int(rank), size, launcher
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


def check_hostname_resolves(hostname: str | None = None) -> None:
    """Gloo across hosts needs this host's name to resolve to a routable address.

    Horovod 0.28's process-set Gloo contexts ignore HOROVOD_GLOO_IFACE (gloo_iface_ is not copied
    from the global context) and bind to the address of the host's name; a name that resolves to
    127.x makes peers dial loopback and the job abort with a gloo::IoException.
    """
    name = hostname or socket.gethostname()
    try:
        address = socket.gethostbyname(name)
    except OSError as exc:
        raise WorkloadError(f"Gloo across hosts: this host's name {name!r} does not resolve ({exc}); "
                            "add it to /etc/hosts or DNS with the address on the Gloo interface") from None
    if is_loopback(address):
        raise WorkloadError(f"Gloo across hosts: this host's name {name!r} resolves to {address}, a loopback "
                            "address, and Horovod's Gloo process sets bind to it (they ignore HOROVOD_GLOO_IFACE); "
                            "map the name to the address on the Gloo interface in /etc/hosts or DNS, "
                            "or use the MPI backend")


def prepare_gloo_environment(environ: dict[str, str] | None = None) -> bool:
    """Under `repro.workloads.gloo`, give this process the slot variables Horovod's Gloo needs.

    mpirun only starts the processes here; Horovod's rendezvous assigns ranks from HOROVOD_RANK etc.,
    which horovodrun would set and mpirun does not. Returns True when it set them.
    """
    env = os.environ if environ is None else environ
    if env.get("HOROVOD_CONTROLLER", "").lower() != "gloo" or "HOROVOD_RANK" in env:
        return False
    hosts = env.get("REPRO_GLOO_HOSTS")
    found = launcher_rank(env)
    if not hosts or found is None:
        raise WorkloadError(
            "HOROVOD_CONTROLLER=gloo under a plain launcher (mpirun, srun) gives every rank size 1; "
            "launch with `python -m repro.workloads.gloo --hosts ADDR:SLOTS,... -- mpirun ...`"
        )
    rank, size, launcher = found
    expected = env.get("REPRO_GLOO_NP")
    if expected and size is not None and int(expected) != size:
        raise WorkloadError(f"{launcher} started {size} processes but the Gloo rendezvous expects {expected}")
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
    if len(parse_host_slots(hosts)) > 1:
        check_hostname_resolves()
    env.update(slot)
    return True
