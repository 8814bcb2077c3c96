"""Conditions of a run (repro.results.conditions): parsing real /proc and nvidia-smi output, the arithmetic of
a sample, the summary `results show` prints, and the record field (old records still load)."""

from __future__ import annotations

import json

import pytest

from repro.launch.conditions import local_text
from repro.results import conditions as cond
from repro.results.record import parse_record
from tests.unit import real_steps

# /proc as read on this project's 2-core test machine (the run's python started at tick 60718; a `make` of
# another job at tick 100), and one second later
BEFORE = """@uptime
607.19 261.33
@loadavg
9.29 6.00 2.91 11/269 32323
@stat
cpu  75631 0 18569 26133 432 0 160 90 0 0
@nproc
2
@freq
@governor
@cpuinfo
cpu MHz\t\t: 2596.066
cpu MHz\t\t: 2596.066
@procs
4100 (make) S 4000 4100 7714 0 -1 4194304 100 0 0 0 3000 500 900 100 20 0 1 0 100 3133440 382 0
32322 (python3 (rank 0)) R 32319 32319 7714 0 -1 4194304 100 0 0 0 10 2 0 0 20 0 1 0 60720 3133440 382 0
@gpu
"""
AFTER = BEFORE.replace("607.19 261.33", "608.19 261.53").replace(
    "cpu  75631 0 18569 26133 432 0 160 90 0 0", "cpu  75781 0 18599 26143 432 0 160 100 0 0").replace(
    "3000 500 900 100 20", "3060 510 900 100 20").replace("10 2 0 0 20", "100 2 0 0 20").replace(
    "9.29 6.00", "9.50 6.10")

# nvidia-smi --query-gpu=...,clocks_throttle_reasons.active --format=csv on an H100 held at its power cap
# (as printed on a public page on GPU power limits), and the query repro makes on an 2-GPU node
SMI_POWER_CAP = ("clocks_throttle_reasons.active, clocks.sm [MHz], clocks.max.sm [MHz], power.draw [W], "
                 "enforced.power.limit [W], temperature.gpu\n"
                 "0x0000000000000004, 1590 MHz, 1980 MHz, 699.8 W, 700.0 W, 71")
SMI_QUERY = ("index, clocks.current.sm [MHz], clocks.current.memory [MHz], temperature.gpu, power.draw [W], "
             "clocks_throttle_reasons.active\n"
             "0, 1980 MHz, 2619 MHz, 45, 120.51 W, 0x0000000000000000\n"
             "1, 1755 MHz, 2619 MHz, 87, [N/A], 0x0000000000000060")


def test_a_proc_stat_line_gives_pid_start_tick_and_cpu_ticks_with_reaped_children():
    line = "32322 (cat) R 32319 32319 7714 0 -1 4194304 100 0 0 0 7 3 2 1 20 0 1 0 60718 3133440 382 0"
    assert cond.proc_ticks(line) == (32322, 60718, 13)
    assert cond.proc_ticks("1 (a) b) c) S 0 1 1 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5 0 0 0")[1] == 5  # odd names
    assert cond.proc_ticks("garbage") is None


def test_two_snapshots_give_busy_cores_others_steal_and_load():
    a, b = cond.parse_snapshot(BEFORE), cond.parse_snapshot(AFTER)
    assert a.cpus == 2 and a.load == (9.29, 6.0, 2.91) and a.mhz == pytest.approx(2596.066)
    s = cond.sample(a, b, phase="during", run_start=600.0, t=1.0)
    # 150 + 30 ticks of user and system time in 1 s: 1.8 cores busy; the rank (started after 600 s) used 0.9
    assert s.busy == pytest.approx(1.8) and s.others == pytest.approx(0.9)
    assert s.steal == pytest.approx(10 / 200) and s.load1 == 9.5 and s.seconds == pytest.approx(1.0)
    before = cond.sample(a, b, phase="before", run_start=None, t=0.0)  # nothing of the run: all busy is others
    assert before.others == pytest.approx(1.8)


def test_real_nvidia_smi_csv_gives_clocks_temperature_power_and_throttle_reasons():
    (gpu,) = cond.parse_gpus(SMI_POWER_CAP.splitlines())
    assert (gpu.index, gpu.sm_mhz, gpu.power_w, gpu.temperature_c, gpu.throttle) == (0, 1590.0, 699.8, 71.0, 0x4)
    assert cond.throttle_names(gpu.throttle) == ("sw power cap",)
    g0, g1 = cond.parse_gpus(SMI_QUERY.splitlines())
    assert (g0.sm_mhz, g0.mem_mhz, g0.throttle) == (1980.0, 2619.0, 0) and g1.power_w is None
    assert cond.throttle_names(g1.throttle) == ("sw thermal slowdown", "hw thermal slowdown")
    assert cond.throttle_names(0x1 | 0x10) == ()  # idle and sync boost are no slowdown
    snap = cond.parse_snapshot(BEFORE.replace("@gpu\n", "@gpu\n" + SMI_QUERY + "\n"))
    assert [g.index for g in snap.gpus] == [0, 1]


def test_the_snapshot_command_is_one_constant_argv_and_asks_nvidia_smi_only_for_gpu_stacks():
    cpu, gpu = cond.snapshot_command(False), cond.snapshot_command(True)
    assert cpu[:2] == ["sh", "-c"] and "nvidia-smi" not in cpu[2]
    assert "clocks_throttle_reasons.active" in gpu[2] and "clocks_event_reasons.active" in gpu[2]


def test_the_local_host_is_read_in_process_into_the_same_sections():
    snap = cond.parse_snapshot(local_text(gpu=False))
    assert snap is not None and snap.uptime > 0 and snap.cpu and snap.procs and snap.load


def _conditions(others: list[float], load: float = 2.0) -> cond.Conditions:
    samples = [cond.HostSample(phase="before", t=0.0, seconds=0.5, load1=load, others=others[0])]
    samples += [cond.HostSample(phase="during", t=5.0 * (i + 1), seconds=5.0, load1=load, others=x, steal=0.0,
                                mhz=2600.0) for i, x in enumerate(others)]
    samples += [cond.HostSample(phase="after", t=30.0, seconds=0.5, load1=load + 1, others=others[-1])]
    return cond.Conditions(hosts={"h1": cond.HostConditions(cpus=2, governor="performance", samples=samples)})


def test_summary_and_the_line_results_show_prints():
    host = _conditions([0.2, 1.4]).hosts["h1"]
    s = cond.summarize(host)
    assert s.others_during == pytest.approx(0.8) and s.others_range == pytest.approx(1.2)
    assert s.load_before == 2.0 and s.load_after == 3.0 and cond.other_work(host) == pytest.approx(0.8)
    line = cond.describe(host)
    assert "load 2.0 before, 3.0 after" in line and "moved by 1.2" in line and "2600 MHz (performance)" in line


def test_records_keep_their_conditions_and_records_without_them_still_load():
    run = real_steps.runs()[0]
    rec = real_steps.record(run, "a").model_copy(update={"conditions": _conditions([0.5, 0.6])})
    back = parse_record(json.loads(rec.model_dump_json()))
    assert back.conditions == rec.conditions
    old = json.loads(real_steps.record(run, "a").model_dump_json())
    del old["conditions"]
    assert parse_record(old).conditions is None
