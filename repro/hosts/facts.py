"""Host facts: what `repro prepare` finds on each host, parsed and normalised (pure).

The module `playbooks/library/repro_facts.py` runs on the host and returns raw facts (format
`repro.facts.raw/1`: sysfs readings and command outputs, each tool optional). `normalise` turns them,
with the host's inventory variables, into `HostFacts`; that is what the store keeps
(`facts/<inventory-key>/<host>.json`, via `Store.put_facts`) and what `repro bench` records with each
run. The stored JSON (format `repro.facts/1`)::

    {
      "format": "repro.facts/1",
      "host": "c4140-1",                     # inventory name
      "address": "192.168.11.1",             # ansible_host
      "gathered_at": "2020-01-15T10:00:00Z",
      "hostname": "c4140-1",
      "hostname_address": "192.168.11.1",
      "os": {"id": "ubuntu", "version": "18.04", "name": "Ubuntu 18.04.3 LTS"},
      "kernel": "4.15.0-69-generic",
      "arch": "x86_64",
      "cpu": {"model": "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "sockets": 2, "cores": 40, "threads": 80},
      "memory_bytes": 404000000000,
      "interfaces": [                        # every NIC of /sys/class/net with its addresses
        {"name": "ib0", "kind": "infiniband", "driver_kind": null, "mac": "...", "mtu": 2044, "state": "up",
         "up": true, "speed_mbps": 100000, "mode": "datagram", "addresses": ["192.168.11.1/24"]}
      ],
      "interface": {                         # the host's repro_interface, for MPI/NCCL/Gloo traffic
        "name": "ib0", "present": true, "kind": "infiniband", "state": "up", "up": true, "mtu": 2044,
        "addresses": ["192.168.11.1/24"],
        "link_gbps": 100.0, "link_gbps_source": "sysfs"   # sysfs | infiniband | inventory | null
      },
      "pci": {"mellanox": ["0000:3b:00.0"], "nvidia": ["0000:1a:00.0", "..."]},
      "gpus": [{"index": 0, "name": "Tesla V100-SXM2-16GB", "uuid": "GPU-...", "pci_bus_id": "00000000:1A:00.0",
                "memory_mib": 16160, "sm_clock_mhz": 1530, "max_sm_clock_mhz": 1530, "mem_clock_mhz": 877,
                "max_mem_clock_mhz": 877, "power_limit_w": 300.0}],
      "nvidia": {"driver": "440.33.01", "cuda": "10.2", "topology": "<nvidia-smi topo -m>"},
      "infiniband": {"ofed": "4.7-3.2.9.0",
                     "ports": [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "phys_state": "LinkUp",
                                "rate_gbps": 100.0, "link_layer": "InfiniBand"}]},
      "kernel_modules_readable": true,
      "peer_memory": ["nv_peer_mem"],        # loaded GPUDirect RDMA modules (nv_peer_mem, nvidia_peermem)
      "docker": {"installed": true, "client": "19.03.5", "server": "19.03.5", "reachable": true,
                 "runtimes": ["nvidia", "runc"], "default_runtime": "nvidia", "error": null},
      "dataset": {"path": "/home/dell/imagenet_tfrecords", "exists": true, "mountpoint": "/home/dell/...",
                  "source": "nfs-server:/export/imagenet_tfrecords", "fstype": "nfs4", "read_only": true},
      "checks": {                            # the whitepaper's configuration check, verbatim
        "nvidia-smi topo -m": {"status": "ok", "rc": 0, "output": "..."},
        "ifconfig": {"status": "absent", "rc": null, "output": ""},
        "ibstat": {...}, "ibv_devinfo -v": {...}, "ofed_info -s": {...}
      }
    }

`status` of a check is `ok`, `error` (non-zero exit), `timeout` or `absent` (the tool is not installed).
Values that could not be found are null (or empty lists), never guessed.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from repro.results.provenance import (
    CPU,
    FACTS_FORMAT,
    GPU,
    OS,
    PCI,
    CheckOutput,
    Dataset,
    Docker,
    HostFacts,
    IBPort,
    Infiniband,
    Interface,
    Link,
    Nvidia,
)

FORMAT = FACTS_FORMAT
RAW_FORMAT = "repro.facts.raw/1"
PEER_MEMORY_MODULES = ("nv_peer_mem", "nvidia_peermem")

# /sys/class/net/*/type (include/uapi/linux/if_arp.h)
_ARPHRD = {"1": "ether", "32": "infiniband", "772": "loopback", "65534": "none"}


# ------------------------------------------------------------------ parsers of command output (pure)


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        return None


def parse_ofed_info(text: str) -> str | None:
    """`ofed_info -s` prints 'MLNX_OFED_LINUX-4.7-3.2.9.0:' -> '4.7-3.2.9.0'."""
    m = re.search(r"(?:MLNX_OFED_LINUX|OFED-internal|OFED)-([0-9][0-9A-Za-z.\-]*?)[:\s]*$", text.strip(), re.M)
    return m.group(1) if m else None


def parse_nvidia_proc_version(text: str | None) -> str | None:
    """/proc/driver/nvidia/version: 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  440.33.01  Wed Nov ...'."""
    if not text:
        return None
    m = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9]+(?:\.[0-9]+)+)", text)
    return m.group(1) if m else None


def parse_nvidia_smi_cuda(text: str | None) -> str | None:
    """The 'CUDA Version: 10.2' of plain nvidia-smi's header (the newest CUDA the driver supports)."""
    if not text:
        return None
    m = re.search(r"CUDA Version:\s*([0-9]+\.[0-9]+)", text)
    return m.group(1) if m else None


def parse_gpu_query(text: str) -> list[GPU]:
    """CSV of `nvidia-smi --query-gpu=<GPU_QUERY> --format=csv,noheader,nounits`, one GPU a line."""
    gpus = []
    for row in csv.reader(io.StringIO(text)):
        cells = [c.strip() for c in row]
        if len(cells) < 11 or _int(cells[0]) is None:
            continue
        gpus.append(GPU(index=int(cells[0]), name=cells[1] or None, uuid=cells[2] or None,
                        pci_bus_id=cells[3] or None, memory_mib=_int(cells[5]), sm_clock_mhz=_int(cells[6]),
                        max_sm_clock_mhz=_int(cells[7]), mem_clock_mhz=_int(cells[8]),
                        max_mem_clock_mhz=_int(cells[9]), power_limit_w=_float(cells[10])))
    return gpus


def parse_ib_rate(text: str | None) -> float | None:
    """sysfs port rate '100 Gb/sec (4X EDR)' -> 100.0."""
    if not text:
        return None
    m = re.match(r"\s*([0-9.]+)\s*Gb/sec", text)
    return float(m.group(1)) if m else None


def _ib_state(text: str | None) -> str | None:
    # sysfs gives '4: ACTIVE' and '5: LinkUp'
    if not text:
        return None
    return text.split(":", 1)[-1].strip()


def _docker(raw: dict[str, Any] | None) -> Docker:
    if not raw:
        return Docker()
    client = raw.get("client") or {}
    info = raw.get("info") or {}
    dockerd = raw.get("dockerd") or {}
    installed = client.get("status") not in (None, "absent") or dockerd.get("status") == "ok"
    client_version = None
    if client.get("status") == "ok":
        try:
            client_version = json.loads(client.get("output") or "{}").get("Version")
        except ValueError:
            client_version = None
    if info.get("status") != "ok":
        error = None
        if installed:
            lines = [ln for ln in (info.get("output") or "").splitlines() if ln.strip()]
            error = lines[-1][:300] if lines else f"docker info: {info.get('status')}"
        return Docker(installed=installed, client=client_version, error=error)
    try:
        data = json.loads((info.get("output") or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Docker(installed=installed, client=client_version, error="docker info printed no JSON")
    server_errors = data.get("ServerErrors") or []
    if server_errors or not data.get("ServerVersion"):
        return Docker(installed=installed, client=client_version,
                      error=str(server_errors[0])[:300] if server_errors else "no server version")
    return Docker(installed=True, client=client_version, server=data.get("ServerVersion"), reachable=True,
                  runtimes=sorted((data.get("Runtimes") or {}).keys()), default_runtime=data.get("DefaultRuntime"))


def _interfaces(network: dict[str, Any]) -> list[Interface]:
    sysfs = network.get("sysfs") or {}
    by_name: dict[str, dict[str, Any]] = {}
    ip = network.get("ip") or {}
    if ip.get("status") == "ok":
        try:
            for entry in json.loads(ip.get("output") or "[]"):
                by_name[entry.get("ifname")] = entry
        except ValueError:
            by_name = {}
    out = []
    for name in sorted(set(sysfs) | set(by_name)):
        s = sysfs.get(name) or {}
        j = by_name.get(name) or {}
        addresses = [f"{a['local']}/{a['prefixlen']}" for a in j.get("addr_info", [])
                     if a.get("family") in ("inet", "inet6") and a.get("local") and "prefixlen" in a]
        speed = _int(s.get("speed"))
        state = (s.get("operstate") or j.get("operstate") or "").lower() or None
        out.append(Interface(
            name=name,
            kind=j.get("link_type") or _ARPHRD.get(str(s.get("type")), s.get("type")),
            driver_kind=(j.get("linkinfo") or {}).get("info_kind"),
            mac=s.get("address") or j.get("address"),
            mtu=_int(s.get("mtu")) or _int(j.get("mtu")),
            state=state,
            up="UP" in (j.get("flags") or []) or state == "up",
            speed_mbps=speed if speed and speed > 0 else None,
            mode=s.get("mode"),
            addresses=addresses,
        ))
    return out


def _link(name: str, interfaces: list[Interface], ports: list[IBPort], inventory_gbps: Any) -> Link:
    nic = next((i for i in interfaces if i.name == name), None)
    gbps: float | None = None
    source = None
    if nic is not None and nic.speed_mbps:
        gbps, source = nic.speed_mbps / 1000, "sysfs"
    elif nic is not None and nic.kind == "infiniband":
        rates = [p.rate_gbps for p in ports if p.rate_gbps and p.state == "ACTIVE"]
        if rates:
            gbps, source = max(rates), "infiniband"
    if gbps is None and _float(inventory_gbps):
        gbps, source = _float(inventory_gbps), "inventory"
    if nic is None:
        return Link(name=name, link_gbps=gbps, link_gbps_source=source)
    return Link(name=name, present=True, kind=nic.kind, state=nic.state, up=nic.up, mtu=nic.mtu,
                addresses=nic.addresses, link_gbps=gbps, link_gbps_source=source)


def normalise(raw: dict[str, Any], host: str, host_vars: dict[str, Any] | None = None) -> HostFacts:
    """Raw module output (repro.facts.raw/1) plus the host's inventory variables -> HostFacts.

    Long because it is a flat field-by-field mapping; splitting it would scatter the one table."""
    hv = host_vars or {}
    if raw.get("format") != RAW_FORMAT:
        raise ValueError(f"{host}: facts of format {raw.get('format')!r}, expected {RAW_FORMAT}")
    system = raw.get("system") or {}
    rel = system.get("os_release") or {}
    interfaces = _interfaces(raw.get("network") or {})
    ports = []
    for dev, d in sorted(((raw.get("infiniband") or {}).get("devices") or {}).items()):
        for port, p in sorted((d.get("ports") or {}).items()):
            ports.append(IBPort(device=dev, port=_int(port) or 0, state=_ib_state(p.get("state")),
                                phys_state=_ib_state(p.get("phys_state")), rate_gbps=parse_ib_rate(p.get("rate")),
                                link_layer=p.get("link_layer")))
    checks = {label: CheckOutput(**c) for label, c in (raw.get("check") or {}).items()}
    ofed_check = checks.get("ofed_info -s")
    nv = raw.get("nvidia") or {}
    query = nv.get("query") or {}
    gpus = parse_gpu_query(query.get("output") or "") if query.get("status") == "ok" else []
    smi = (nv.get("smi") or {}).get("output")
    topo = checks.get("nvidia-smi topo -m")
    driver = parse_nvidia_proc_version(nv.get("proc_version"))
    if driver is None and query.get("status") == "ok":
        first = next(csv.reader(io.StringIO(query.get("output") or "")), [])
        driver = first[4].strip() if len(first) > 4 and first[4].strip() else None
    modules = raw.get("modules")
    ds = raw.get("dataset")
    dataset = None
    if ds:
        mount = ds.get("mount") or {}
        dataset = Dataset(path=ds["path"], exists=bool(ds.get("exists")), mountpoint=mount.get("mountpoint"),
                          source=mount.get("source"), fstype=mount.get("fstype"),
                          read_only=("ro" in (mount.get("options") or "").split(",")) if mount else None)
    interface_name = str(hv.get("repro_interface") or raw.get("interface") or "eth0")
    return HostFacts(
        host=host,
        address=str(hv["ansible_host"]) if hv.get("ansible_host") else None,
        gathered_at=raw.get("gathered_at"),
        hostname=system.get("hostname"),
        hostname_address=system.get("hostname_address"),
        os=OS(id=rel.get("ID"), version=rel.get("VERSION_ID"), name=rel.get("PRETTY_NAME")),
        kernel=system.get("kernel"),
        arch=system.get("arch"),
        cpu=CPU(model=system.get("cpu_model"), sockets=system.get("cpu_sockets"), cores=system.get("cpu_cores"),
                threads=system.get("cpu_threads")),
        memory_bytes=system.get("mem_total_bytes"),
        interfaces=interfaces,
        interface=_link(interface_name, interfaces, ports, hv.get("repro_link_gbps")),
        pci=PCI(**(raw.get("pci") or {})),
        gpus=gpus,
        nvidia=Nvidia(driver=driver, cuda=parse_nvidia_smi_cuda(smi),
                      topology=topo.output if topo and topo.status == "ok" else None),
        infiniband=Infiniband(
            ofed=parse_ofed_info(ofed_check.output) if ofed_check and ofed_check.status == "ok" else None,
            ports=ports),
        kernel_modules_readable=modules is not None,
        peer_memory=[m for m in PEER_MEMORY_MODULES if m in (modules or [])],
        docker=_docker(raw.get("docker")),
        dataset=dataset,
        checks=checks,
    )


def load(data: dict[str, Any]) -> HostFacts:
    """Stored facts (format repro.facts/1) back into HostFacts."""
    if data.get("format") != FORMAT:
        raise ValueError(f"facts of format {data.get('format')!r}, expected {FORMAT}")
    return HostFacts.model_validate(data)
