#!/usr/bin/python
"""Ansible module repro_facts: what repro needs to know about a host, gathered on the host itself.

Runs with the host's own Python and its standard library only. It reads /proc and /sys and runs the
configuration check of the Dell EMC whitepaper (`nvidia-smi topo -m`, `ifconfig`, `ibstat`,
`ibv_devinfo -v`, `ofed_info -s`) plus a few structured queries (nvidia-smi --query-gpu, ip -j,
docker info). Every tool is optional: a missing one is recorded as absent, never an error. The raw
result (format repro.facts.raw/1) is parsed and normalised by repro.hosts.facts on the controller.
Read-only: it changes nothing, so it runs in check mode too.
"""

from __future__ import annotations

import glob
import os
import platform
import shutil
import socket
import subprocess
import time

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
---
module: repro_facts
short_description: Gather repro's host facts (hardware, drivers, OFED, network, Docker)
description:
  - Reads /proc and /sys and runs the whitepaper's configuration check commands, each optional.
  - Returns the raw facts under C(facts); repro normalises them (repro/hosts/facts.py).
options:
  sections:
    description: What to gather; C(pci) alone is a cheap hardware probe for roles.
    type: list
    elements: str
    default: [all]
  interface:
    description: The NIC repro uses for MPI/NCCL traffic (inventory C(repro_interface)).
    type: str
  docker_host:
    description: Docker endpoint as seen on the host (inventory C(repro_docker_host)).
    type: str
  dataset_dir:
    description: Dataset directory on the host (inventory C(repro_dataset_dir)).
    type: str
  sysfs:
    description: Root of sysfs, for PCI, network and InfiniBand devices.
    type: path
    default: /sys
  command_timeout:
    description: Seconds each probe command may take.
    type: int
    default: 20
author: repro
"""

EXAMPLES = r"""
- name: Probe PCI for Mellanox HCAs and NVIDIA GPUs
  repro_facts:
    sections: [pci]
  register: hw
"""

RETURN = r"""
facts:
  description: Raw facts, format repro.facts.raw/1.
  returned: always
  type: dict
"""

RAW_FORMAT = "repro.facts.raw/1"
MELLANOX = "0x15b3"
NVIDIA = "0x10de"
MAX_OUTPUT = 65536
SECTIONS = ("pci", "system", "network", "nvidia", "infiniband", "modules", "docker", "dataset", "check")

# The whitepaper's configuration check, run as separate commands so one missing tool hides nothing.
CHECK_COMMANDS = {
    "nvidia-smi topo -m": ["nvidia-smi", "topo", "-m"],
    "ifconfig": ["ifconfig"],
    "ibstat": ["ibstat"],
    "ibv_devinfo -v": ["ibv_devinfo", "-v"],
    "ofed_info -s": ["ofed_info", "-s"],
}
GPU_QUERY = ("index,name,uuid,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,"
             "clocks.max.mem,power.limit")


def _read(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return default


def _find(tool):
    # sbin directories are not always on a non-login PATH; ibstat and ofed_info live there.
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin:/usr/local/sbin:/usr/bin:/bin")


def run(argv, timeout):
    """{status: absent|ok|error|timeout, rc, output} of one command; never raises."""
    exe = _find(argv[0])
    if exe is None:
        return {"status": "absent", "rc": None, "output": ""}
    try:
        proc = subprocess.run([exe, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "rc": None, "output": f"no answer within {timeout} s"}
    except OSError as exc:
        return {"status": "error", "rc": None, "output": str(exc)}
    text = proc.stdout.decode("utf-8", errors="replace")[:MAX_OUTPUT]
    return {"status": "ok" if proc.returncode == 0 else "error", "rc": proc.returncode, "output": text}


def pci(sysfs):
    """PCI addresses of Mellanox (0x15b3) and NVIDIA (0x10de) devices."""
    found = {"mellanox": [], "nvidia": []}
    for vendor_file in sorted(glob.glob(os.path.join(sysfs, "bus/pci/devices/*/vendor"))):
        vendor = (_read(vendor_file) or "").lower()
        address = os.path.basename(os.path.dirname(vendor_file))
        if vendor == MELLANOX:
            found["mellanox"].append(address)
        elif vendor == NVIDIA:
            # only display/3D controllers are GPUs; NVIDIA audio functions share the vendor id
            cls = (_read(os.path.join(os.path.dirname(vendor_file), "class")) or "")
            if cls.startswith("0x03"):
                found["nvidia"].append(address)
    return found


def system():
    os_release = {}
    text = _read("/etc/os-release", "") or ""
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            os_release[key.strip()] = value.strip().strip('"')
    cpu_model = None
    sockets, cores = set(), set()
    physical = core = None
    for line in (_read("/proc/cpuinfo", "") or "").splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and cpu_model is None:
            cpu_model = value
        elif key == "physical id":
            physical = value
            sockets.add(value)
        elif key == "core id":
            core = value
            cores.add((physical, core))
    meminfo = {}
    for line in (_read("/proc/meminfo", "") or "").splitlines():
        key, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            meminfo[key] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    uname = platform.uname()
    hostname = socket.gethostname()
    try:
        hostname_address = socket.gethostbyname(hostname)
    except OSError:
        hostname_address = None
    return {
        "hostname": hostname,
        "hostname_address": hostname_address,
        "os_release": os_release,
        "kernel": uname.release,
        "arch": uname.machine,
        "cpu_model": cpu_model or uname.processor or None,
        "cpu_threads": os.cpu_count(),
        "cpu_sockets": len(sockets) or None,
        "cpu_cores": len(cores) or None,
        "mem_total_bytes": meminfo.get("MemTotal"),
    }


def network(sysfs, timeout):
    """Per interface: sysfs attributes (speed, MTU, type, state) and `ip -j -d addr`."""
    interfaces = {}
    for path in sorted(glob.glob(os.path.join(sysfs, "class/net/*"))):
        name = os.path.basename(path)
        speed = _read(os.path.join(path, "speed"))
        driver = os.path.realpath(os.path.join(path, "device/driver"))
        interfaces[name] = {
            "type": _read(os.path.join(path, "type")),
            "mtu": _read(os.path.join(path, "mtu")),
            "operstate": _read(os.path.join(path, "operstate")),
            "address": _read(os.path.join(path, "address")),
            "speed": speed,
            "mode": _read(os.path.join(path, "mode")),  # IPoIB only: datagram or connected
            "driver": os.path.basename(driver) if os.path.exists(os.path.join(path, "device/driver")) else None,
        }
    ip = run(["ip", "-j", "-d", "addr", "show"], timeout)
    return {"sysfs": interfaces, "ip": ip}


def nvidia(timeout):
    query = run(["nvidia-smi", f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"], timeout)
    return {
        "proc_version": _read("/proc/driver/nvidia/version"),
        "query": query,
        "smi": run(["nvidia-smi"], timeout) if query["status"] == "ok" else None,
    }


def infiniband(sysfs):
    devices = {}
    for dev in sorted(glob.glob(os.path.join(sysfs, "class/infiniband/*"))):
        ports = {}
        for port in sorted(glob.glob(os.path.join(dev, "ports/*"))):
            ports[os.path.basename(port)] = {
                "state": _read(os.path.join(port, "state")),
                "phys_state": _read(os.path.join(port, "phys_state")),
                "rate": _read(os.path.join(port, "rate")),
                "link_layer": _read(os.path.join(port, "link_layer")),
            }
        devices[os.path.basename(dev)] = {
            "fw_ver": _read(os.path.join(dev, "fw_ver")),
            "hca_type": _read(os.path.join(dev, "hca_type")),
            "ports": ports,
        }
    return {"devices": devices}


def modules():
    """Loaded kernel modules, or None when /proc/modules cannot be read (some containers, sandboxes)."""
    text = _read("/proc/modules")
    if text is None:
        return None
    return sorted({line.split()[0] for line in text.splitlines() if line.strip()})


def docker(docker_host, timeout):
    base = ["docker"] + (["-H", docker_host] if docker_host else [])
    return {
        "docker_host": docker_host,
        "client": run([*base, "version", "--format", "{{json .Client}}"], timeout),
        "info": run([*base, "info", "--format", "{{json .}}"], timeout),
        "dockerd": run(["dockerd", "--version"], timeout),
    }


def dataset(path):
    if not path:
        return None
    real = os.path.realpath(path)
    best = None
    for line in (_read("/proc/self/mountinfo", "") or "").splitlines():
        left, _, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if len(fields) < 6 or len(rest) < 2:
            continue
        point = fields[4].replace("\\040", " ")
        if (real == point or real.startswith(point.rstrip("/") + "/")) and (best is None or len(point) > len(best[0])):
            best = (point, rest[0], rest[1], fields[5])
    mount = None
    if best:
        mount = {"mountpoint": best[0], "fstype": best[1], "source": best[2], "options": best[3]}
    return {"path": path, "exists": os.path.isdir(path), "mount": mount}


def gather(params):
    sections = set(params["sections"] or ["all"])
    if "all" in sections:
        sections = set(SECTIONS)
    sysfs, timeout = params["sysfs"], params["command_timeout"]
    facts = {"format": RAW_FORMAT, "gathered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "sections": sorted(sections), "interface": params.get("interface")}
    steps = {
        "pci": lambda: pci(sysfs),
        "system": system,
        "network": lambda: network(sysfs, timeout),
        "nvidia": lambda: nvidia(timeout),
        "infiniband": lambda: infiniband(sysfs),
        "modules": modules,
        "docker": lambda: docker(params.get("docker_host"), timeout),
        "dataset": lambda: dataset(params.get("dataset_dir")),
        "check": lambda: {label: run(argv, timeout) for label, argv in CHECK_COMMANDS.items()},
    }
    for name in SECTIONS:
        if name in sections:
            facts[name] = steps[name]()
    return facts


def main():
    module = AnsibleModule(
        argument_spec={
            "sections": {"type": "list", "elements": "str", "default": ["all"]},
            "interface": {"type": "str"},
            "docker_host": {"type": "str"},
            "dataset_dir": {"type": "str"},
            "sysfs": {"type": "path", "default": "/sys"},
            "command_timeout": {"type": "int", "default": 20},
        },
        supports_check_mode=True,
    )
    unknown = set(module.params["sections"]) - set(SECTIONS) - {"all"}
    if unknown:
        module.fail_json(msg=f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}, all")
    module.exit_json(changed=False, facts=gather(module.params))


if __name__ == "__main__":
    main()
