"""GPU-correct step timing (with a fake device whose queue a synchronize drains, so the rule is tested on a CPU) and
the parsing of nvidia-smi's real output into the GPU facts the torch workloads record."""

from __future__ import annotations

import pytest

from repro.workloads.gpu_facts import parse_query, parse_topology
from repro.workloads.timing import CPU_DEVICE, run_steps, time_step


class FakeClock:
    """Time that passes only when the host spends it (work on the host) or waits for the device."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class QueuedDevice:
    """An asynchronous device: launching work costs the host nothing; synchronize waits for the queue to drain."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.queued = 0.0
        self.synchronized = 0

    def launch(self, seconds: float) -> None:
        self.queued += seconds

    def synchronize(self) -> None:
        self.clock.now += self.queued
        self.queued = 0.0
        self.synchronized += 1


def test_a_step_time_includes_the_work_still_queued_on_the_device():
    clock = FakeClock()
    device = QueuedDevice(clock)

    def step() -> str:
        clock.now += 0.001  # the host launches the kernels quickly...
        device.launch(0.250)  # ...and the device needs 250 ms for them
        return "loss"

    out, elapsed = time_step(step, device, clock)
    assert out == "loss"
    assert abs(elapsed - 0.251) < 1e-9  # a host clock without the synchronize would say 1 ms
    assert device.queued == 0.0


def test_work_queued_before_the_step_is_not_counted_in_it():
    clock = FakeClock()
    device = QueuedDevice(clock)
    device.launch(5.0)  # e.g. the previous step's tail, or a broadcast
    _, elapsed = time_step(lambda: device.launch(0.1), device, clock)
    assert abs(elapsed - 0.1) < 1e-9
    assert device.synchronized == 2


def test_a_training_loop_keeps_warm_up_apart_and_sees_each_step_once():
    clock = FakeClock()
    device = QueuedDevice(clock)
    seen = []

    def train_step(index: int) -> float:
        device.launch(0.1 * (index + 1))
        return 10.0 - index

    out = run_steps(train_step, device, 2, 3, after=lambda *a: seen.append(a), clock=clock)
    assert out.warmup_times == pytest.approx([0.1, 0.2]) and out.step_times == pytest.approx([0.3, 0.4, 0.5])
    assert out.losses == [10.0, 9.0, 8.0, 7.0, 6.0]
    assert [(n, t, loss) for n, t, loss, _ in seen] == [(n, 5, 11.0 - n) for n in range(1, 6)]


def test_a_check_after_a_step_stops_the_loop_before_it_is_counted():
    def after(number: int, total: int, loss: float, seconds: float) -> None:
        if number == 2:
            raise ValueError(f"loss {loss} at step {number} of {total}")

    with pytest.raises(ValueError, match="at step 2 of 4"):
        run_steps(lambda i: float(i), CPU_DEVICE, 1, 3, after=after)


def test_on_the_cpu_the_rule_costs_nothing_and_times_the_host():
    clock = FakeClock()

    def step() -> None:
        clock.now += 0.02

    assert abs(time_step(step, CPU_DEVICE, clock)[1] - 0.02) < 1e-9


# --------------------------------------------------------------------------- nvidia-smi, real output

# KeithMyers in Ricks-Lab/gpu-utils#83: a GeForce RTX 2080 (driver 440.64), noheader,nounits
RTX_QUERY = ("power.limit", "power.min_limit", "power.max_limit", "memory.total", "vbios_version", "driver_version",
             "name", "gpu_uuid", "power.draw", "temperature.gpu", "temperature.memory", "clocks.current.graphics",
             "clocks.sm", "clocks.mem", "utilization.gpu", "utilization.memory", "fan.speed",
             "pcie.link.width.current", "pstate")
RTX_ROW = ("200.00, 105.00, 292.00, 7979, 90.04.23.00.5F, 440.64, GeForce RTX 2080, "
           "GPU-22b2c6ac-2d49-4863-197c-9c469071178a, 176.98, 45, N/A, 1965, 1965, 7199, 86, 55, 100, 8, P2\n")

# nvidia-smi --query-gpu=name,memory.total --format=csv,noheader on an H100 (with units), as printed in public
# reports of H100 nodes
H100_ROWS = "NVIDIA H100 80GB HBM3, 81559 MiB\nNVIDIA H100 80GB HBM3, 81559 MiB\n"

# nvidia-smi topo -m on an 8x H100 SXM node (HazyResearch/ThunderKittens#167)
H100_TOPO = """\
        GPU0    GPU1    GPU2    GPU3    GPU4    GPU5    GPU6    GPU7    CPU Affinity    NUMA Affinity   GPU NUMA ID
GPU0     X      NV18    NV18    NV18    NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU1    NV18     X      NV18    NV18    NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU2    NV18    NV18     X      NV18    NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU3    NV18    NV18    NV18     X      NV18    NV18    NV18    NV18    0-47,96-143     0               N/A
GPU4    NV18    NV18    NV18    NV18     X      NV18    NV18    NV18    48-95,144-191   1               N/A
GPU5    NV18    NV18    NV18    NV18    NV18     X      NV18    NV18    48-95,144-191   1               N/A
GPU6    NV18    NV18    NV18    NV18    NV18    NV18     X      NV18    48-95,144-191   1               N/A
GPU7    NV18    NV18    NV18    NV18    NV18    NV18    NV18     X      48-95,144-191   1               N/A

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NV#  = Connection traversing a bonded set of # NVLinks
"""

# two GPUs behind one host bridge, tab-separated (noonghunna/club-3090#1229)
PHB_TOPO = ("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tPHB\t0-63\t0\t\tN/A\n"
            "GPU1\tPHB\t X \t0-63\t0\t\tN/A\n\nLegend:\n\n  X    = Self\n")


def test_query_rows_are_read_by_field_name_with_missing_values_as_none():
    (gpu,) = parse_query(RTX_ROW, RTX_QUERY)
    assert (gpu["name"], gpu["driver"], gpu["memory_mib"], gpu["power_limit_w"], gpu["sm_clock_mhz"]) == (
        "GeForce RTX 2080", "440.64", 7979, 200.0, 1965)
    assert gpu["temperature.memory"] is None  # N/A
    assert gpu["uuid"] == "GPU-22b2c6ac-2d49-4863-197c-9c469071178a"


def test_units_are_stripped_and_every_gpu_is_a_row():
    gpus = parse_query(H100_ROWS, ("name", "memory.total"))
    assert gpus == [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559}] * 2


def test_unreadable_memory_and_stray_lines_are_not_guessed():
    text = "No devices were found\n0, NVIDIA GB10, [N/A]\n"
    assert parse_query(text, ("index", "name", "memory.total")) == [
        {"index": 0, "name": "NVIDIA GB10", "memory_mib": None}]


def test_topology_of_an_nvlink_node():
    topo = parse_topology(H100_TOPO)
    assert topo["kinds"] == ["NV18"]
    assert topo["links"]["GPU0"]["GPU7"] == "NV18" and "GPU0" not in topo["links"]["GPU0"]
    assert topo["cpu_affinity"] == {**{f"GPU{i}": "0-47,96-143" for i in range(4)},
                                    **{f"GPU{i}": "48-95,144-191" for i in range(4, 8)}}


def test_topology_of_a_pcie_node_with_tabs():
    topo = parse_topology(PHB_TOPO)
    assert topo["links"] == {"GPU0": {"GPU1": "PHB"}, "GPU1": {"GPU0": "PHB"}}
    assert topo["kinds"] == ["PHB"] and topo["cpu_affinity"] == {"GPU0": "0-63", "GPU1": "0-63"}
    assert parse_topology("command not found") == {"links": {}, "cpu_affinity": {}, "kinds": []}
