"""Facts normalisation and readiness on constructed facts: raw output as the repro_facts module returns it
(real tool output formats: nvidia-smi, ofed_info, ip -j, docker info) turned into HostFacts, then checked
against the whitepaper's stacks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from repro.hosts.facts import FORMAT, load, normalise, parse_gpu_query, parse_nvidia_proc_version, parse_ofed_info
from repro.hosts.inventory import Host, Inventory
from repro.hosts.readiness import CLUSTER, FAIL, OK, WARN, cuda_min_driver, evaluate, peer_memory_module
from repro.manifest import load_stack

ROOT = Path(__file__).resolve().parents[2]
TF114 = load_stack(ROOT / "stacks" / "tf114-cuda10.yaml").stack  # driver 440.33.01, CUDA 10.0, OFED 4.7
TF110 = load_stack(ROOT / "stacks" / "tf110-cuda91.yaml").stack  # driver 396.26, CUDA 9.1
TF215 = load_stack(ROOT / "stacks" / "tf215-cuda122.yaml").stack  # driver 535, CUDA 12.2
CPU = load_stack(ROOT / "stacks" / "cpu-tf215.yaml").stack

GPU_QUERY = "\n".join(
    f"{i}, Tesla V100-SXM2-16GB, GPU-{i:08x}-aaaa, 00000000:{0x1a + i:02X}:00.0, {{driver}}, 16160, 135, 1530, 877, "
    "877, 300.00" for i in range(4))
PROC_VERSION = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  {driver}  Thu Nov  7 22:14:36 UTC 2019\n"
                "GCC version:  gcc version 7.4.0 (Ubuntu 7.4.0-1ubuntu1~18.04.1)")
SMI_HEADER = "| NVIDIA-SMI {driver}    Driver Version: {driver}    CUDA Version: 10.2     |"


def _ran(output: str) -> dict[str, Any]:
    return {"status": "ok", "rc": 0, "output": output}


ABSENT = {"status": "absent", "rc": None, "output": ""}


def c4140_raw(host: int = 1, driver: str = "440.33.01", modules: list[str] | None = None) -> dict[str, Any]:
    """Raw facts of a PowerEdge C4140-M as in seed 003: 4 V100, ConnectX-5 EDR, IPoIB on ib0."""
    ip = [
        {"ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536, "operstate": "UNKNOWN",
         "link_type": "loopback", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]},
        {"ifname": "eno1", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "mtu": 1500, "operstate": "UP",
         "link_type": "ether", "addr_info": [{"family": "inet", "local": f"10.0.0.{host}", "prefixlen": 24}]},
        {"ifname": "ib0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "mtu": 2044, "operstate": "UP",
         "link_type": "infiniband", "addr_info": [{"family": "inet", "local": f"192.168.11.{host}", "prefixlen": 24}]},
    ]
    return {
        "format": "repro.facts.raw/1",
        "gathered_at": "2020-01-15T10:00:00Z",
        "sections": ["check", "dataset", "docker", "infiniband", "modules", "network", "nvidia", "pci", "system"],
        "interface": "ib0",
        "pci": {"mellanox": ["0000:3b:00.0"], "nvidia": [f"0000:{0x1a + i:02x}:00.0" for i in range(4)]},
        "system": {
            "hostname": f"c4140-{host}", "hostname_address": f"192.168.11.{host}", "kernel": "4.15.0-69-generic",
            "arch": "x86_64",
            "cpu_model": "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "cpu_threads": 80, "cpu_sockets": 2,
            "cpu_cores": 40, "mem_total_bytes": 384 * 2**30,
            "os_release": {"ID": "ubuntu", "VERSION_ID": "18.04", "PRETTY_NAME": "Ubuntu 18.04.3 LTS"},
        },
        "network": {
            "sysfs": {
                "lo": {"type": "772", "mtu": "65536", "operstate": "unknown", "speed": None},
                "eno1": {"type": "1", "mtu": "1500", "operstate": "up", "speed": "10000"},
                "ib0": {"type": "32", "mtu": "2044", "operstate": "up", "speed": None, "mode": "datagram"},
            },
            "ip": _ran(json.dumps(ip)),
        },
        "nvidia": {"proc_version": PROC_VERSION.format(driver=driver), "query": _ran(GPU_QUERY.format(driver=driver)),
                   "smi": _ran(SMI_HEADER.format(driver=driver))},
        "infiniband": {"devices": {"mlx5_0": {"fw_ver": "16.26.1040", "hca_type": "MT4119", "ports": {
            "1": {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "100 Gb/sec (4X EDR)",
                  "link_layer": "InfiniBand"}}}}},
        "modules": modules if modules is not None else ["ib_ipoib", "mlx5_core", "nv_peer_mem", "nvidia"],
        "docker": {
            "docker_host": None,
            "client": _ran('{"Version":"19.03.5"}'),
            "info": _ran(json.dumps({"ServerVersion": "19.03.5", "DefaultRuntime": "nvidia",
                                     "Runtimes": {"nvidia": {"path": "nvidia-container-runtime"},
                                                  "runc": {"path": "runc"}}})),
            "dockerd": _ran("Docker version 19.03.5, build 633a0ea838\n"),
        },
        "dataset": {"path": "/home/dell/imagenet_tfrecords", "exists": True,
                    "mount": {"mountpoint": "/home/dell/imagenet_tfrecords", "fstype": "nfs4",
                              "source": "nfs-server:/export/imagenet_tfrecords", "options": "ro,relatime"}},
        "check": {
            "nvidia-smi topo -m": _ran("\tGPU0\tGPU1\tGPU2\tGPU3\tmlx5_0\nGPU0\t X \tNV2\tNV2\tNV2\tSYS\n"),
            "ifconfig": _ran("ib0: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu 2044\n"),
            "ibstat": _ran("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 100\n"),
            "ibv_devinfo -v": _ran("hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n"),
            "ofed_info -s": _ran("MLNX_OFED_LINUX-4.7-3.2.9.0:\n"),
        },
    }


def cpu_raw(host: int = 1) -> dict[str, Any]:
    """Raw facts of a CPU-only Debian host with no InfiniBand, no NVIDIA tools, Docker from the distribution."""
    raw = c4140_raw(host)
    raw.update(
        interface="eth0",
        pci={"mellanox": [], "nvidia": []},
        network={"sysfs": {"eth0": {"type": "1", "mtu": "1500", "operstate": "up", "speed": "10000"}},
                 "ip": _ran(json.dumps([{"ifname": "eth0", "flags": ["UP", "LOWER_UP"], "mtu": 1500,
                                         "operstate": "UP", "link_type": "ether", "addr_info": [
                                             {"family": "inet", "local": f"10.123.7.{host}", "prefixlen": 24}]}]))},
        nvidia={"proc_version": None, "query": ABSENT, "smi": None},
        infiniband={"devices": {}},
        modules=None,
        dataset=None,
        check={k: (_ran("eth0: ...") if k == "ifconfig" else ABSENT) for k in c4140_raw()["check"]},
    )
    raw["system"] = dict(raw["system"], kernel="6.1.0-18-amd64",
                         os_release={"ID": "debian", "VERSION_ID": "12", "PRETTY_NAME": "Debian GNU/Linux 12"})
    raw["docker"]["info"] = _ran(json.dumps({"ServerVersion": "20.10.24", "DefaultRuntime": "runc",
                                             "Runtimes": {"runc": {"path": "runc"}}}))
    return raw


def facts(raw: dict[str, Any], name: str = "c4140-1", **host_vars):
    return normalise(raw, name, {"repro_interface": raw["interface"], **host_vars})


def by_name(readiness, host: str) -> dict[str, Any]:
    return {c.name: c for c in readiness.checks if c.host == host}


# ------------------------------------------------------------------ normalisation


def test_normalise_reads_the_c4140_configuration_check():
    f = facts(c4140_raw(), ansible_host="192.168.11.1")
    assert f.format == FORMAT and f.host == "c4140-1" and f.address == "192.168.11.1"
    assert (f.os.id, f.os.version, f.kernel) == ("ubuntu", "18.04", "4.15.0-69-generic")
    assert (f.cpu.model, f.cpu.sockets, f.cpu.cores, f.cpu.threads) == (
        "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", 2, 40, 80)
    assert [g.name for g in f.gpus] == ["Tesla V100-SXM2-16GB"] * 4
    assert (f.gpus[0].memory_mib, f.gpus[0].max_sm_clock_mhz, f.gpus[0].power_limit_w) == (16160, 1530, 300.0)
    assert f.nvidia.driver == "440.33.01" and f.nvidia.cuda == "10.2"
    assert f.nvidia.topology.startswith("\tGPU0")
    assert f.infiniband.ofed == "4.7-3.2.9.0"
    assert [(p.device, p.port, p.state, p.rate_gbps) for p in f.infiniband.ports] == [("mlx5_0", 1, "ACTIVE", 100.0)]
    assert f.peer_memory == ["nv_peer_mem"] and f.kernel_modules_readable
    assert f.docker.reachable and f.docker.server == "19.03.5" and "nvidia" in f.docker.runtimes
    assert f.dataset.read_only and f.dataset.fstype == "nfs4"
    # ib0 has no sysfs speed: the active IB port's rate is the link speed
    assert (f.interface.name, f.interface.present, f.interface.up, f.interface.mtu) == ("ib0", True, True, 2044)
    assert f.interface.addresses == ["192.168.11.1/24"]
    assert (f.interface.link_gbps, f.interface.link_gbps_source) == (100.0, "infiniband")
    assert f.checks["ofed_info -s"].status == "ok"


def test_link_speed_comes_from_sysfs_then_the_inventory():
    f = facts(cpu_raw(), "h1")
    assert (f.interface.link_gbps, f.interface.link_gbps_source) == (10.0, "sysfs")
    raw = cpu_raw()
    raw["network"]["sysfs"]["eth0"]["speed"] = "-1"  # virtual NICs often report no speed
    f = facts(raw, "h1", repro_link_gbps=25)
    assert (f.interface.link_gbps, f.interface.link_gbps_source) == (25.0, "inventory")
    assert facts(raw, "h1").interface.link_gbps is None


def test_stored_facts_load_back_equal():
    f = facts(c4140_raw())
    assert load(json.loads(json.dumps(f.as_json()))) == f
    with pytest.raises(ValueError, match="format"):
        load({"format": "something/9", "host": "x"})


@pytest.mark.parametrize("text, version", [
    ("MLNX_OFED_LINUX-4.7-3.2.9.0:", "4.7-3.2.9.0"),
    ("MLNX_OFED_LINUX-5.8-3.0.7.0:\n", "5.8-3.0.7.0"),
    ("OFED-internal-24.04-0.6.6:", "24.04-0.6.6"),
    ("command not found", None),
])
def test_parse_ofed_info(text, version):
    assert parse_ofed_info(text) == version


def test_parse_driver_versions():
    assert parse_nvidia_proc_version(PROC_VERSION.format(driver="396.26")) == "396.26"
    assert parse_nvidia_proc_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release "
                                     "Build") == "535.104.05"
    assert parse_nvidia_proc_version(None) is None
    assert [g.index for g in parse_gpu_query("0, A, u, b, 1, 2, 3, 4, 5, 6, 7\nNo devices were found\n")] == [0]


# ------------------------------------------------------------------ readiness


def test_the_whitepaper_hosts_are_ready_for_the_tf114_stack():
    inv = Inventory("c4140", tuple(Host(f"c4140-{i}", f"192.168.11.{i}", gpus=4, slots=4) for i in (1, 2)))
    r = evaluate({f"c4140-{i}": facts(c4140_raw(i), f"c4140-{i}") for i in (1, 2)}, TF114, inv)
    assert r.ok, [c.line() for c in r.checks if c.status != OK]
    assert not [c for c in r.checks if c.status == WARN]
    assert r.hosts == ["c4140-1", "c4140-2"]
    checks = by_name(r, "c4140-1")
    expected = {"host", "gpu", "driver", "ofed", "gpudirect", "interface", "docker", "dataset", "config-check"}
    assert expected <= set(checks)
    assert "nv_peer_mem loaded" in checks["gpudirect"].message
    assert "4x Tesla V100-SXM2-16GB" in checks["gpu"].message


def test_no_gpu_on_a_gpu_stack_fails_with_the_driver_cuda_needs():
    r = evaluate({"h1": facts(cpu_raw(), "h1")}, TF114)
    gpu = by_name(r, "h1")["gpu"]
    assert gpu.status == FAIL
    assert gpu.line() == "h1: no GPU found but the stack is a GPU stack (CUDA 10.0 needs driver >= 410.48)"
    assert by_name(r, "h1")["docker"].status == OK  # no GPUs: the missing nvidia runtime is not the problem
    assert not r.ok and r.status("h1") == FAIL


def test_an_old_driver_fails_against_the_stack_minimum():
    r = evaluate({"c4140-1": facts(c4140_raw(driver="396.26"))}, TF114)
    driver = by_name(r, "c4140-1")["driver"]
    assert (driver.status, driver.message) == (FAIL, "driver 396.26 older than the stack's minimum 440.33.01")
    # the 2019 stack asks for exactly that driver
    assert by_name(evaluate({"c4140-1": facts(c4140_raw(driver="396.26"))}, TF110), "c4140-1")["driver"].status == OK


def test_missing_peer_memory_module_warns_that_nccl_will_not_use_gpudirect():
    raw = c4140_raw(2, driver="535.104.05", modules=["mlx5_core", "nvidia"])
    raw["check"]["ofed_info -s"] = _ran("MLNX_OFED_LINUX-5.8-3.0.7.0:")
    gd = by_name(evaluate({"host2": facts(raw, "host2")}, TF215), "host2")["gpudirect"]
    assert gd.status == WARN
    assert gd.line().startswith("host2: nvidia-peermem not loaded; NCCL will not use GPUDirect RDMA")
    assert "NCCL_NET_GDR_LEVEL=3" in gd.message
    # before R470 it is nv_peer_mem
    old = by_name(evaluate({"h": facts(c4140_raw(modules=["nvidia"]), "h")}, TF114), "h")["gpudirect"]
    assert old.message.startswith("nv_peer_mem not loaded")
    assert (peer_memory_module("440.33.01"), peer_memory_module("470.57.02")) == ("nv_peer_mem", "nvidia-peermem")
    unreadable = by_name(evaluate({"h": facts(c4140_raw(modules=None) | {"modules": None}, "h")}, TF114), "h")
    assert unreadable["gpudirect"].status == WARN and "cannot read /proc/modules" in unreadable["gpudirect"].message


def test_docker_problems_fail():
    raw = cpu_raw()
    raw["docker"] = {"docker_host": None, "client": ABSENT, "info": ABSENT, "dockerd": ABSENT}
    assert by_name(evaluate({"h1": facts(raw, "h1")}), "h1")["docker"].line() == \
        "h1: docker: not installed (repro prepare --tags docker)"
    raw = cpu_raw()
    raw["docker"]["info"] = {"status": "error", "rc": 1, "output": "Cannot connect to the Docker daemon at "
                             "unix:///var/run/docker.sock. Is the docker daemon running?\n"}
    d = by_name(evaluate({"h1": facts(raw, "h1")}), "h1")["docker"]
    assert d.status == FAIL and "Cannot connect to the Docker daemon" in d.message
    raw = c4140_raw()
    raw["docker"]["info"] = _ran(json.dumps({"ServerVersion": "19.03.5", "Runtimes": {"runc": {}}}))
    d = by_name(evaluate({"c4140-1": facts(raw)}, TF114), "c4140-1")["docker"]
    assert d.status == FAIL and "no nvidia runtime" in d.message


def test_interface_problems():
    raw = cpu_raw()
    f = facts(raw, "h1", repro_interface="ib0")
    i = by_name(evaluate({"h1": f}), "h1")["interface"]
    assert i.line() == "h1: interface ib0 not found; MPI/NCCL traffic is set to use it (repro_interface)"
    raw["network"]["sysfs"]["eth0"].update(speed=None, operstate="down")
    raw["network"]["ip"] = _ran(json.dumps([{"ifname": "eth0", "flags": ["BROADCAST"], "mtu": 1500,
                                             "operstate": "DOWN", "link_type": "ether", "addr_info": []}]))
    assert by_name(evaluate({"h1": facts(raw, "h1")}), "h1")["interface"].message == "interface eth0 is down"
    raw = cpu_raw()
    raw["network"]["sysfs"]["eth0"]["speed"] = None
    i = by_name(evaluate({"h1": facts(raw, "h1")}), "h1")["interface"]
    assert i.status == WARN and "set repro_link_gbps" in i.message


def test_ofed_problems():
    raw = c4140_raw()
    raw["check"]["ofed_info -s"] = ABSENT
    o = by_name(evaluate({"c4140-1": facts(raw)}, TF114), "c4140-1")["ofed"]
    assert o.status == FAIL and "MLNX_OFED is not installed" in o.message and "4.7-3.2.9.0" in o.message
    raw["check"]["ofed_info -s"] = _ran("MLNX_OFED_LINUX-4.6-1.0.1.1:")
    o = by_name(evaluate({"c4140-1": facts(raw)}, TF114), "c4140-1")["ofed"]
    assert o.status == WARN and "4.6-1.0.1.1 differs from the image's 4.7-3.2.9.0" in o.message
    raw = c4140_raw()
    raw["infiniband"]["devices"]["mlx5_0"]["ports"]["1"]["state"] = "1: DOWN"
    port = by_name(evaluate({"c4140-1": facts(raw)}, TF114), "c4140-1")["ib-port"]
    assert port.status == FAIL and "mlx5_0/1 DOWN" in port.message
    no_hca = by_name(evaluate({"h1": facts(cpu_raw(), "h1")}, TF114), "h1")["ofed"]
    assert no_hca.status == WARN and "no Mellanox HCA" in no_hca.message


def test_inventory_gpu_count_is_checked():
    inv = Inventory("inv", (Host("c4140-1", "192.168.11.1", gpus=8, slots=8),))
    gpu = by_name(evaluate({"c4140-1": facts(c4140_raw())}, TF114, inv), "c4140-1")["gpu"]
    assert gpu.status == FAIL and "the inventory says 8" in gpu.message


def test_unreachable_host_fails_by_name_and_the_other_is_still_checked():
    inv = Inventory("inv", (Host("h1", "10.123.7.1"), Host("h2", "10.123.7.2")))
    r = evaluate({"h1": facts(cpu_raw(1), "h1")}, CPU, inv,
                 {"h2": "unreachable: ssh: connect to host 10.123.7.2 port 22: Connection refused"})
    assert r.hosts == ["h1", "h2"]
    assert r.status("h1") == OK
    [reach] = [c for c in r.checks if c.host == "h2"]
    assert reach.status == FAIL and reach.line() == "h2: unreachable: ssh: connect to host 10.123.7.2 port 22: " \
        "Connection refused"


def test_cpu_stack_on_cpu_hosts_is_ready_and_differences_between_hosts_warn():
    one, two = facts(cpu_raw(1), "h1"), facts(cpu_raw(2), "h2")
    r = evaluate({"h1": one, "h2": two}, CPU)
    assert r.ok and not [c for c in r.checks if c.status == WARN]
    raw = copy.deepcopy(cpu_raw(2))
    raw["system"]["kernel"] = "5.10.0-28-amd64"
    r = evaluate({"h1": one, "h2": facts(raw, "h2")}, CPU)
    [diff] = [c for c in r.checks if c.host == CLUSTER]
    assert diff.status == WARN and diff.message == "kernel differs across hosts: h1 6.1.0-18-amd64, h2 5.10.0-28-amd64"


def test_cuda_minimum_driver_comes_from_the_compat_table():
    assert cuda_min_driver("10.0") == "410.48"
    assert cuda_min_driver("9.1.85") == "390.46"
    assert cuda_min_driver("12.2") == "535.54.03"
    assert cuda_min_driver("99.0") is None


def test_loopback_of_a_single_machine_needs_no_link_speed():
    raw = cpu_raw()
    raw["network"] = {"sysfs": {"lo": {"type": "772", "mtu": "65536", "operstate": "unknown", "speed": None}},
                      "ip": _ran(json.dumps([{"ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
                                              "operstate": "UNKNOWN", "link_type": "loopback", "addr_info": [
                                                  {"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]}]))}
    i = by_name(evaluate({"localhost": facts(raw, "localhost", repro_interface="lo")}, CPU), "localhost")["interface"]
    assert i.status == OK and "loopback" in i.message


def test_a_hostname_resolving_to_loopback_warns_about_gloo_and_shared_names_warn_too():
    raws = [c4140_raw(1), c4140_raw(2)]
    for raw in raws:
        raw["system"].update(hostname="vm", hostname_address="127.0.1.1")
    both = {f"c4140-{i}": facts(raw, name=f"c4140-{i}") for i, raw in enumerate(raws, start=1)}
    readiness = evaluate(both)
    check = by_name(readiness, "c4140-1")["hostname"]
    assert check.status == WARN and "Gloo" in check.message and "127.0.1.1" in check.message
    shared = [c for c in readiness.checks if c.name == "consistency" and "share a hostname" in c.message]
    assert shared and shared[0].status == WARN


def test_a_hostname_resolving_to_its_address_is_ok():
    check = by_name(evaluate({"c4140-1": facts(c4140_raw(1))}), "c4140-1")["hostname"]
    assert check.status == OK and "192.168.11.1" in check.message


def test_readiness_checks_what_the_chosen_runtime_needs():
    """The quick start's localhost with no Docker: ready for the host runtime (which needs the hosts' own
    TensorFlow, Horovod and MPI as the stack pins them), not ready for the docker runtime."""
    from repro.manifest.software import Software

    raw = cpu_raw()
    raw["docker"] = {"docker_host": None, "client": ABSENT, "info": ABSENT, "dockerd": ABSENT}
    raw["network"] = {"sysfs": {"lo": {"type": "772", "mtu": "65536", "operstate": "unknown", "speed": None}},
                      "ip": _ran(json.dumps([{"ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
                                              "operstate": "UNKNOWN", "link_type": "loopback", "addr_info": [
                                                  {"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]}]))}
    local = {"localhost": facts(raw, "localhost", repro_interface="lo")}
    good = Software(python="3.11.7", tensorflow="2.15.1", horovod="0.28.1", mpi="openmpi 4.1.4",
                    horovod_built={"tensorflow": True, "mpi": True, "gloo": True, "nccl": False})
    host = evaluate(local, CPU, runtime="host", software={"localhost": good})
    assert host.ok, [c.line() for c in host.failed]
    checks = by_name(host, "localhost")
    assert "docker" not in checks and checks["software"].status == OK and "2.15.1" in checks["software"].message
    assert not evaluate(local, CPU, runtime="docker").ok  # the docker runtime needs the engine
    old_tf = Software.model_validate({**good.model_dump(), "frameworks": {"tensorflow": {"version": "2.12.1"}}})
    bad = by_name(evaluate(local, CPU, runtime="host", software={"localhost": old_tf}), "localhost")["software"]
    assert bad.status == FAIL and "tensorflow" in bad.message and "2.15.1" in bad.message
    gone = evaluate(local, CPU, runtime="host", software={"localhost": "cannot run python3"})
    assert by_name(gone, "localhost")["software"].status == FAIL
