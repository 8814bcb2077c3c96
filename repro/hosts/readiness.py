"""Readiness of hosts for a stack: facts (+ optional stack and inventory) -> per-host checks (pure).

Every check is ok, warn or fail and says what to do about it, e.g.
"c4140-2: nvidia-peermem not loaded; NCCL will not use GPUDirect RDMA". `fail` means a benchmark with
this stack cannot run (or cannot run as the stack intends); `warn` means it runs, but a result may not
be what the stack describes. Cross-host differences (kernel, driver, OFED, GPU model) are checks of
the pseudo-host "*".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from repro.hosts.facts import HostFacts
from repro.hosts.inventory import Inventory
from repro.manifest.compat import table
from repro.manifest.frameworks import FRAMEWORKS
from repro.manifest.schema import Stack
from repro.manifest.software import Software, framework_found, mismatches
from repro.manifest.versions import parse_version

OK, WARN, FAIL = "ok", "warn", "fail"
_RANK = {OK: 0, WARN: 1, FAIL: 2}
CLUSTER = "*"


@dataclass(frozen=True)
class Check:
    """One finding about one host (or CLUSTER)."""

    host: str
    name: str
    status: str
    message: str

    def line(self) -> str:
        return f"{self.host}: {self.message}"


@dataclass(frozen=True)
class Readiness:
    """All checks, in host order."""

    checks: tuple[Check, ...]

    @property
    def hosts(self) -> list[str]:
        seen: list[str] = []
        for c in self.checks:
            if c.host not in seen:
                seen.append(c.host)
        return seen

    def status(self, host: str) -> str:
        """The worst status of a host's checks."""
        found = [c.status for c in self.checks if c.host == host]
        return max(found, key=_RANK.__getitem__) if found else OK

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL]

    @property
    def ok(self) -> bool:
        return not self.failed


# ------------------------------------------------------------------ version rules (from compat.yaml)


def cuda_min_driver(cuda: str) -> str | None:
    """The lowest driver that runs this CUDA release (compat table `cuda_drivers`), if known."""
    rows = table()["cuda_drivers"]
    want = parse_version(cuda)
    candidates = [r for r in rows if parse_version(r["cuda"])[: len(want)] == want]
    if not candidates:
        candidates = [r for r in rows if parse_version(r["cuda"])[:2] == want[:2] and parse_version(r["cuda"]) <= want]
    if not candidates:
        return None
    return min((r["driver"] for r in candidates), key=parse_version)


def peer_memory_module(driver: str | None) -> str:
    """GPUDirect RDMA kernel module for a driver: nv_peer_mem before R470, nvidia-peermem from R470."""
    g = table()["gpudirect"]
    if driver and parse_version(driver)[:1] >= parse_version(g["driver_switch"]):
        return g["after"]
    return g["before"]


def _gib(n: int | None) -> str:
    return f"{n / 2**30:.1f} GiB" if n else "? GiB"


# ------------------------------------------------------------------ per-host checks


def _host(f: HostFacts) -> Check:
    os_name = f.os.name or " ".join(x for x in (f.os.id, f.os.version) if x) or "unknown OS"
    cores = f.cpu.cores or f.cpu.threads
    text = f"{os_name}, kernel {f.kernel or '?'}, {f.cpu.model or 'unknown CPU'} ({cores or '?'} cores), " \
           f"{_gib(f.memory_bytes)}"
    return Check(f.host, "host", OK, text)


def _gpu(f: HostFacts, stack: Stack | None, expected: int) -> Iterable[Check]:
    gpu_stack = bool(stack and stack.gpu)
    if not f.gpus:
        if gpu_stack:
            need = cuda_min_driver(stack.cuda) if stack.cuda else None
            detail = f" (CUDA {stack.cuda} needs driver >= {need})" if need else f" (CUDA {stack.cuda})"
            found = " (an NVIDIA PCI device is there: is the driver loaded?)" if f.pci.nvidia else ""
            yield Check(f.host, "gpu", FAIL, f"no GPU found but the stack is a GPU stack{detail}{found}")
        elif expected:
            yield Check(f.host, "gpu", FAIL, f"the inventory says {expected} GPUs (repro_gpus) but none was found")
        else:
            yield Check(f.host, "gpu", OK, "no GPU; none needed" + (" (CPU stack)" if stack else ""))
        return
    names = sorted({g.name or "?" for g in f.gpus})
    clocks = sorted({g.max_sm_clock_mhz for g in f.gpus if g.max_sm_clock_mhz})
    text = f"{len(f.gpus)}x {', '.join(names)}" + (f" (max SM clock {clocks[-1]} MHz)" if clocks else "")
    if expected and len(f.gpus) != expected:
        status = FAIL if len(f.gpus) < expected else WARN
        yield Check(f.host, "gpu", status, f"{text}, but the inventory says {expected} (repro_gpus)")
    else:
        yield Check(f.host, "gpu", OK, text)


def _driver(f: HostFacts, stack: Stack | None) -> Iterable[Check]:
    gpu_stack = bool(stack and stack.gpu)
    if not f.gpus and not f.pci.nvidia and not gpu_stack:
        return
    driver = f.nvidia.driver
    if driver is None:
        if f.pci.nvidia or f.gpus:
            yield Check(f.host, "driver", FAIL, "NVIDIA GPU present but no driver loaded (no "
                        "/proc/driver/nvidia/version); install it (repro prepare --tags nvidia with nvidia_manage)")
        return
    if stack and stack.driver and parse_version(driver) < parse_version(stack.driver):
        yield Check(f.host, "driver", FAIL, f"driver {driver} older than the stack's minimum {stack.driver}")
        return
    need = cuda_min_driver(stack.cuda) if stack and stack.cuda else None
    if need and parse_version(driver) < parse_version(need):
        yield Check(f.host, "driver", FAIL, f"driver {driver} older than CUDA {stack.cuda} needs (>= {need})")
        return
    suffix = f" (>= {stack.driver})" if stack and stack.driver else ""
    cuda = f", supports CUDA <= {f.nvidia.cuda}" if f.nvidia.cuda else ""
    yield Check(f.host, "driver", OK, f"driver {driver}{suffix}{cuda}")


def _ofed(f: HostFacts, stack: Stack | None) -> Iterable[Check]:
    want = stack.ofed if stack else None
    if not f.pci.mellanox:
        if want:
            yield Check(f.host, "ofed", WARN, f"no Mellanox HCA: inter-node traffic will use TCP, not RDMA "
                        f"(the stack's image carries MLNX_OFED {want})")
        else:
            yield Check(f.host, "ofed", OK, "no Mellanox HCA; TCP only")
        return
    have = f.infiniband.ofed
    if have is None:
        status = FAIL if want else WARN
        extra = f"; the stack's image carries MLNX_OFED {want} user space" if want else ""
        yield Check(f.host, "ofed", status, f"Mellanox HCA present but MLNX_OFED is not installed (ofed_info "
                    f"missing){extra}; run repro prepare --tags ofed")
    elif want and parse_version(have)[:2] != parse_version(want)[:2]:
        yield Check(f.host, "ofed", WARN, f"host MLNX_OFED {have} differs from the image's {want}; kernel "
                    "drivers and user-space verbs should come from the same release")
    else:
        yield Check(f.host, "ofed", OK, f"MLNX_OFED {have}" + (f" (image: {want})" if want else ""))
    active = [p for p in f.infiniband.ports if p.state == "ACTIVE"]
    if f.infiniband.ports and not active:
        states = ", ".join(f"{p.device}/{p.port} {p.state}" for p in f.infiniband.ports)
        yield Check(f.host, "ib-port", FAIL, f"no InfiniBand port is ACTIVE ({states}); check cables and the "
                    "subnet manager (ibstat)")


def _gpudirect(f: HostFacts, stack: Stack | None) -> Iterable[Check]:
    if not f.pci.mellanox or not (f.gpus or f.pci.nvidia):
        return
    module = peer_memory_module(f.nvidia.driver)
    if not f.kernel_modules_readable:
        yield Check(f.host, "gpudirect", WARN, f"cannot read /proc/modules: whether {module} is loaded (GPUDirect "
                    "RDMA) is unknown")
        return
    if module.replace("-", "_") in f.peer_memory:
        yield Check(f.host, "gpudirect", OK, f"{module} loaded (GPUDirect RDMA)")
        return
    gdr = stack.env.get("NCCL_NET_GDR_LEVEL") if stack else None
    extra = f" although the stack sets NCCL_NET_GDR_LEVEL={gdr}" if gdr else ""
    yield Check(f.host, "gpudirect", WARN, f"{module} not loaded; NCCL will not use GPUDirect RDMA{extra} "
                "(repro prepare --tags gpudirect)")


def _interface(f: HostFacts) -> Iterable[Check]:
    link = f.interface
    if not link.present:
        yield Check(f.host, "interface", FAIL, f"interface {link.name} not found; MPI/NCCL traffic is set to use "
                    "it (repro_interface)")
        return
    v4 = [a for a in link.addresses if ":" not in a]
    if not link.up:
        yield Check(f.host, "interface", FAIL, f"interface {link.name} is down")
    elif not v4:
        yield Check(f.host, "interface", FAIL, f"interface {link.name} has no IPv4 address")
    elif link.kind == "loopback":
        yield Check(f.host, "interface", OK, f"{link.name} (loopback): this host only, no network between hosts")
    elif link.link_gbps is None:
        yield Check(f.host, "interface", WARN, f"{link.name} up, {', '.join(v4)}, MTU {link.mtu}; link speed "
                    "unknown (set repro_link_gbps in the inventory)")
    else:
        yield Check(f.host, "interface", OK, f"{link.name} up, {', '.join(v4)}, MTU {link.mtu}, "
                    f"{link.link_gbps:g} Gb/s ({link.link_gbps_source})")


def _docker(f: HostFacts, stack: Stack | None) -> Iterable[Check]:
    d = f.docker
    if not d.installed:
        yield Check(f.host, "docker", FAIL, "docker: not installed (repro prepare --tags docker)")
    elif not d.reachable:
        yield Check(f.host, "docker", FAIL, f"docker: engine not answering ({d.error or 'no reason given'}); check "
                    "repro_docker_host and that dockerd runs")
    elif stack and stack.gpu and f.gpus and "nvidia" not in d.runtimes:
        yield Check(f.host, "docker", FAIL, "docker: no nvidia runtime; containers will not see the GPUs "
                    "(repro prepare --tags docker installs nvidia-container-toolkit)")
    else:
        default = f", default {d.default_runtime}" if d.default_runtime else ""
        yield Check(f.host, "docker", OK, f"docker {d.server} (runtimes: {', '.join(d.runtimes) or '-'}{default})")


def _dataset(f: HostFacts) -> Iterable[Check]:
    ds = f.dataset
    if ds is None:
        return
    if not ds.exists:
        yield Check(f.host, "dataset", FAIL, f"dataset directory {ds.path} does not exist (repro_dataset_dir; "
                    "repro prepare --tags nfs_dataset mounts it)")
        return
    where = f"{ds.fstype} from {ds.source}" if ds.fstype else "not a mount point"
    if ds.fstype and ds.fstype.startswith("nfs") and not ds.read_only:
        yield Check(f.host, "dataset", WARN, f"{ds.path}: {where}, mounted read-write (repro mounts it read-only "
                    "into containers; the nfs_dataset role mounts it ro)")
    else:
        yield Check(f.host, "dataset", OK, f"{ds.path}: {where}" + (" (read-only)" if ds.read_only else ""))


def _config_check(f: HostFacts) -> Iterable[Check]:
    if not f.checks:
        return
    ran = [k for k, c in f.checks.items() if c.status == "ok"]
    absent = [k.split()[0] for k, c in f.checks.items() if c.status == "absent"]
    broken = [f"{k} ({c.status})" for k, c in f.checks.items() if c.status in ("error", "timeout")]
    text = f"configuration check: {len(ran)}/{len(f.checks)} ran"
    if absent:
        text += f"; absent: {', '.join(absent)}"
    if broken:
        text += f"; failed: {', '.join(broken)}"
    yield Check(f.host, "config-check", OK, text)


def _hostname(f: HostFacts) -> Iterable[Check]:
    address = f.hostname_address
    if f.hostname is None or address is None:
        yield Check(f.host, "hostname", WARN, f"hostname {f.hostname or '?'} does not resolve on the host; Horovod's "
                    "Gloo across hosts needs it to (map it in /etc/hosts or DNS)")
    elif address.startswith("127."):
        yield Check(f.host, "hostname", WARN, f"hostname {f.hostname} resolves to {address} (loopback): Horovod's Gloo "
                    "across hosts will fail (its process sets bind to the hostname's address, ignoring "
                    "HOROVOD_GLOO_IFACE); map it to the interface's address in /etc/hosts, or use the MPI backend")
    else:
        yield Check(f.host, "hostname", OK, f"{f.hostname} resolves to {address}")


def _consistency(facts: list[HostFacts]) -> Iterable[Check]:
    if len(facts) < 2:
        return
    names = [f.hostname for f in facts if f.hostname]
    if len(set(names)) < len(names):
        yield Check(CLUSTER, "consistency", WARN, f"hosts share a hostname ({', '.join(names)}): MPI and Horovod "
                    "group ranks by hostname and would take them for one node")
    aspects = {
        "kernel": lambda f: f.kernel,
        "OS": lambda f: f.os.name,
        "NVIDIA driver": lambda f: f.nvidia.driver,
        "MLNX_OFED": lambda f: f.infiniband.ofed,
        "GPU model": lambda f: ",".join(sorted({g.name or "?" for g in f.gpus})) or None,
        "GPU count": lambda f: str(len(f.gpus)),
        "docker": lambda f: f.docker.server,
        "interface MTU": lambda f: str(f.interface.mtu) if f.interface.mtu else None,
    }
    for label, get in aspects.items():
        values = {f.host: get(f) for f in facts}
        if len(set(values.values())) > 1:
            listing = ", ".join(f"{h} {v or 'none'}" for h, v in values.items())
            yield Check(CLUSTER, "consistency", WARN, f"{label} differs across hosts: {listing}")


def _software(host: str, found: Software | str | None, stack: Stack | None, backend: str) -> Iterable[Check]:
    """The host runtime's needs: the hosts' own Python, framework (TensorFlow and Horovod, or PyTorch) and MPI, as
    the stack pins them, with the controller or torch.distributed backend `backend` its workload uses."""
    if found is None:
        return
    if isinstance(found, str):
        yield Check(host, "software", FAIL, f"host runtime: cannot check the installed software: {found}")
        return
    if stack is None:
        frameworks = ", ".join(f"{name} {version or 'none'}" for name, version in framework_found(found).items())
        yield Check(host, "software", OK, f"python {found.python or '?'}, {frameworks}, "
                    f"horovod {found.horovod or 'none'}, {found.mpi or 'no MPI'} (no stack to check them against)")
        return
    problems = mismatches(stack, found, where="host", backend=backend)
    for problem in problems:
        yield Check(host, "software", FAIL, f"host runtime: {problem} (the stack's versions must be installed "
                    "on the host: scripts/setup.sh does for the CPU stacks; or use --runtime docker)")
    if not problems:
        name = stack.framework
        said = f"python {found.python}, {name} {found.framework(name).version}" + (
            f", horovod {found.horovod}" if stack.horovod else "")
        library = FRAMEWORKS.get(name).comm_library
        said += f", {library} {backend}" if backend and library and library != "horovod" else ""
        yield Check(host, "software", OK, f"{said}, {found.mpi}: as stack {stack.name} pins (host runtime)")


def evaluate(facts: Mapping[str, HostFacts], stack: Stack | None = None, inventory: Inventory | None = None,
             missing: Mapping[str, str] | None = None, *, runtime: str | None = None,
             software: Mapping[str, Software | str] | None = None, backend: str = "mpi") -> Readiness:
    """Checks for every host (inventory order when given) plus cross-host consistency.

    `missing` maps hosts without facts to the reason (e.g. "unreachable: ssh: connect to host ... refused").
    `runtime`: what the benchmark will run with; only its needs are checked (the Docker engine for docker,
    the hosts' own software for host: `software` is what the host runtime's probe found, or why it failed).
    None checks every runtime's needs that facts show (the Docker engine).
    """
    missing = dict(missing or {})
    order = [h.name for h in inventory.hosts] if inventory else []
    order += [h for h in [*facts, *missing] if h not in order]
    expected = {h.name: h.gpus for h in inventory.hosts} if inventory else {}
    checks: list[Check] = []
    for host in order:
        f = facts.get(host)
        if f is None:
            if host in missing:  # hosts left out (--limit) have neither facts nor a reason
                checks.append(Check(host, "reach", FAIL, missing[host]))
            continue
        checks.append(_host(f))
        checks += _hostname(f)
        checks += _gpu(f, stack, expected.get(host, 0))
        checks += _driver(f, stack)
        checks += _ofed(f, stack)
        checks += _gpudirect(f, stack)
        checks += _interface(f)
        if runtime in (None, "docker"):  # the engine matters to the runtime that runs containers through it
            checks += _docker(f, stack)
        checks += _software(host, (software or {}).get(host), stack, backend)
        checks += _dataset(f)
        checks += _config_check(f)
    checks += _consistency([facts[h] for h in order if h in facts])
    return Readiness(tuple(checks))
