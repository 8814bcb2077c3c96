"""The conditions a run ran under (pure): load and other processes' CPU, steal, clocks; GPU clocks and throttling.

A run's figure depends on what else the machine was doing. Every run of `repro bench` (direct scheduler)
samples each of its hosts before it starts, through the run and after it ends (repro.launch.conditions) and
keeps the samples in its record (`RunRecord.conditions`). `repro compare` judges them
(repro.compare.conditions): two sides measured at different times under different conditions give
"conditions differed", never "faster" or "slower".

A snapshot is what one read of a host's /proc (and nvidia-smi) returns, as text in sections
(`snapshot_command` prints it on a remote host; `local_text` reads the same files in-process); two
snapshots make a sample:

    busy        cores' worth of CPU time spent by every process between the snapshots (/proc/stat)
    own         the run's own processes: those started at or after the run began (their own and their reaped
                children's CPU time, /proc/PID/stat)
    others      busy - own: cores' worth used by other work while the run ran (all of busy before and after)
    steal       share of CPU time the hypervisor gave to other guests
    load1       the 1-minute load average at the second snapshot
    mhz         mean current frequency over the CPUs (cpufreq, else /proc/cpuinfo)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

CONDITIONS_FORMAT = "repro.conditions/1"
USER_HZ = 100  # clock ticks per second of /proc/stat and /proc/PID/stat (fixed at 100 by the kernel's ABI)
GPU_FIELDS = ("index", "clocks.sm", "clocks.mem", "temperature.gpu", "power.draw", "clocks_throttle_reasons.active")
# nvidia-smi's clocks_throttle_reasons bits (nvml.h: nvmlClocksThrottleReason*)
THROTTLE_REASONS = {0x1: "gpu idle", 0x2: "applications clocks setting", 0x4: "sw power cap",
                    0x8: "hw slowdown", 0x10: "sync boost", 0x20: "sw thermal slowdown",
                    0x40: "hw thermal slowdown", 0x80: "hw power brake slowdown", 0x100: "display clocks setting"}
BENIGN_THROTTLE = 0x1 | 0x10  # idle between steps, and clocks held to match peers: no slowdown of their own
Phase = Literal["before", "during", "after"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuSample(_Frozen):
    """One GPU as nvidia-smi reported it at one snapshot."""

    index: int
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    throttle: int | None = None  # clocks_throttle_reasons.active bitmask


class HostSample(_Frozen):
    """What one host did between two snapshots (see the module docstring)."""

    phase: Phase
    t: float  # seconds from the start of the run to the end of the sample (negative: before it)
    seconds: float  # length of the sample
    load1: float | None = None
    busy: float | None = None
    others: float | None = None
    steal: float | None = None
    mhz: float | None = None
    gpus: list[GpuSample] = Field(default_factory=list)


class HostConditions(_Frozen):
    """The samples of one host, with what does not change within a run."""

    cpus: int | None = None
    governor: str | None = None
    samples: list[HostSample] = Field(default_factory=list)
    problem: str | None = None  # why the host could not be sampled (then no samples)


class Conditions(_Frozen):
    """Per host (inventory name), the samples taken before, through and after one run."""

    format: str = CONDITIONS_FORMAT
    interval_s: float = 5.0
    hosts: dict[str, HostConditions] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)  # what the conditions say of the run (repro.results.threads)


# -- snapshots: parsing what /proc and nvidia-smi print -----------------------------------------------------

@dataclass(frozen=True)
class Snapshot:
    """One read of a host: uptime, load, CPU jiffies, every process' CPU ticks, clocks, GPUs."""

    uptime: float
    load: tuple[float, float, float] | None
    cpu: tuple[int, ...] | None  # the `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ...
    procs: dict[tuple[int, int], int] = field(default_factory=dict)  # (pid, start tick) -> utime+stime+cutime+cstime
    cpus: int | None = None
    mhz: float | None = None
    governor: str | None = None
    gpus: tuple[GpuSample, ...] = ()


SECTIONS = ("uptime", "loadavg", "stat", "nproc", "freq", "governor", "cpuinfo", "procs", "gpu")


def snapshot_command(gpu: bool) -> list[str]:
    """argv that prints one snapshot on a host, in sections (`@name` lines); a constant script, nothing
    interpolated. nvidia-smi only for GPU stacks (the throttle field's newer name as a fallback)."""
    query = ",".join(GPU_FIELDS)
    gpus = (f"nvidia-smi --query-gpu={query} --format=csv 2>/dev/null || nvidia-smi --query-gpu="
            f"{query.replace('clocks_throttle_reasons', 'clocks_event_reasons')} --format=csv 2>/dev/null; "
            if gpu else "")
    script = ("echo @uptime; cat /proc/uptime; echo @loadavg; cat /proc/loadavg; echo @stat; grep '^cpu ' /proc/stat; "
              "echo @nproc; getconf _NPROCESSORS_ONLN; echo @freq; "
              "cat /sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq 2>/dev/null; echo @governor; "
              "cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null; echo @cpuinfo; "
              "grep '^cpu MHz' /proc/cpuinfo 2>/dev/null; echo @procs; cat /proc/[0-9]*/stat 2>/dev/null; "
              f"echo @gpu; {gpus}true")
    return ["sh", "-c", script]


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("@") and line[1:].strip() in SECTIONS:
            current = line[1:].strip()
            out[current] = []
        elif current is not None and line.strip():
            out[current].append(line)
    return out


def _float(text: str) -> float | None:
    """A number from an nvidia-smi cell or /proc field ('1590 MHz', '699.8 W', '[N/A]' -> None)."""
    word = text.strip().split(" ")[0] if text.strip() else ""
    try:
        value = float(word)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def proc_ticks(line: str) -> tuple[int, int, int] | None:
    """(pid, start tick, CPU ticks incl. reaped children) from one /proc/PID/stat line; None if unreadable."""
    head, _, rest = line.rpartition(")")  # the command name may hold spaces and parentheses
    fields = rest.split()
    try:
        pid = int(head.split("(", 1)[0])
        # fields[0] is the state (field 3); utime..cstime are fields 14-17, starttime field 22
        return pid, int(fields[19]), sum(int(x) for x in fields[11:15])
    except (ValueError, IndexError):
        return None


def parse_gpus(lines: Sequence[str]) -> tuple[GpuSample, ...]:
    """nvidia-smi --query-gpu=... --format=csv output (header first, units in the cells) as GpuSamples."""
    if not lines:
        return ()
    header = [h.strip().split(" [")[0] for h in lines[0].split(",")]
    names = {"index": "index", "clocks.sm": "sm_mhz", "clocks.current.sm": "sm_mhz", "clocks.mem": "mem_mhz",
             "clocks.current.memory": "mem_mhz", "temperature.gpu": "temperature_c", "power.draw": "power_w",
             "clocks_throttle_reasons.active": "throttle", "clocks_event_reasons.active": "throttle"}
    out = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(header):
            continue
        values: dict[str, float | int | None] = {}
        for name, cell in zip(header, cells, strict=True):
            key = names.get(name)
            if key == "throttle":
                try:
                    values[key] = int(cell, 16)
                except ValueError:
                    values[key] = None
            elif key == "index":
                values[key] = int(cell) if cell.isdigit() else len(out)
            elif key is not None:
                values[key] = _float(cell)
        out.append(GpuSample(**{"index": len(out), **values}))  # type: ignore[arg-type]
    return tuple(out)


def parse_snapshot(text: str) -> Snapshot | None:
    """A Snapshot from the sections `snapshot_command` (or `local_text`) printed; None without an uptime."""
    s = _sections(text)
    uptime = _float(s.get("uptime", [""])[0]) if s.get("uptime") else None
    if uptime is None:
        return None
    load = None
    if s.get("loadavg"):
        parts = [_float(x) for x in s["loadavg"][0].split()[:3]]
        load = tuple(parts) if len(parts) == 3 and None not in parts else None  # type: ignore[assignment]
    cpu = None
    if s.get("stat"):
        try:
            cpu = tuple(int(x) for x in s["stat"][0].split()[1:])
        except ValueError:
            cpu = None
    procs = {}
    for line in s.get("procs", []):
        got = proc_ticks(line)
        if got is not None:
            procs[(got[0], got[1])] = got[2]
    nproc = s.get("nproc", [""])[0].strip() if s.get("nproc") else ""
    freqs = [v / 1000 for v in (_float(x) for x in s.get("freq", [])) if v]  # kHz
    if not freqs:
        freqs = [v for v in (_float(x.split(":", 1)[-1]) for x in s.get("cpuinfo", [])) if v]
    governor = s["governor"][0].strip() if s.get("governor") else None
    return Snapshot(uptime, load, cpu, procs, int(nproc) if nproc.isdigit() else None,
                    sum(freqs) / len(freqs) if freqs else None, governor or None, parse_gpus(s.get("gpu", [])))


def sample(before: Snapshot, after: Snapshot, *, phase: Phase, run_start: float | None, t: float,
           own_pids: frozenset[int] = frozenset()) -> HostSample:
    """What happened between two snapshots of one host; `run_start`: the run's start on the host's uptime clock
    (processes started since are the run's own), None when no process is the run's; `own_pids`: processes that
    count as the run's own whenever they started (the sweep's own, which collects and plans between runs)."""
    seconds = after.uptime - before.uptime
    busy = others = steal = None
    if before.cpu and after.cpu and seconds > 0 and len(before.cpu) >= 4 and len(after.cpu) >= 4:
        delta = [b - a for a, b in zip(before.cpu, after.cpu, strict=False)]
        total = sum(delta[:8])
        idle = delta[3] + (delta[4] if len(delta) > 4 else 0)
        steal_ticks = delta[7] if len(delta) > 7 else 0
        busy = max(0.0, (total - idle - steal_ticks) / USER_HZ / seconds)
        steal = steal_ticks / total if total > 0 else None
        own = 0
        first = math.inf if run_start is None else run_start * USER_HZ
        for key, ticks in after.procs.items():
            if key[1] >= first or key[0] in own_pids:
                own += ticks - before.procs.get(key, 0)
        others = max(0.0, busy - own / USER_HZ / seconds)
    return HostSample(phase=phase, t=round(t, 3), seconds=round(seconds, 3),
                      load1=after.load[0] if after.load else None,
                      busy=_round(busy), others=_round(others), steal=_round(steal, 4), mhz=_round(after.mhz, 0),
                      gpus=list(after.gpus))


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


# -- summaries of one run ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class HostSummary:
    """One host during one run, in a few numbers (None: not measured)."""

    load_before: float | None
    load_after: float | None
    load_during: float | None  # mean 1-minute load average over the samples during the run
    others_before: float | None  # cores' worth of other work
    others_during: float | None
    others_after: float | None
    others_range: float | None  # max - min of the samples during the run: how much other work moved
    steal: float | None
    mhz: float | None
    governor: str | None
    cpus: int | None
    gpu_sm_mhz: float | None
    gpu_temperature_c: float | None
    gpu_power_w: float | None
    throttle: tuple[str, ...]  # reasons seen during the run, benign ones left out


def _mean(values: Iterable[float | None], weights: Iterable[float] | None = None) -> float | None:
    pairs = [(v, w) for v, w in zip(values, weights or _ones(), strict=False) if v is not None]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if pairs and total > 0 else None


def _ones() -> Iterable[float]:
    while True:
        yield 1.0


def throttle_names(mask: int) -> tuple[str, ...]:
    """The reasons a clocks_throttle_reasons bitmask names, benign ones left out."""
    return tuple(name for bit, name in THROTTLE_REASONS.items() if mask & bit and not bit & BENIGN_THROTTLE)


def summarize(host: HostConditions) -> HostSummary:
    """One host's samples of one run as a HostSummary."""
    by = {p: [s for s in host.samples if s.phase == p] for p in ("before", "during", "after")}
    during = by["during"]
    others = [s.others for s in during if s.others is not None]
    gpus = [g for s in during for g in s.gpus]
    mask = 0
    for g in gpus:
        mask |= g.throttle or 0
    return HostSummary(
        load_before=by["before"][-1].load1 if by["before"] else None,
        load_after=by["after"][-1].load1 if by["after"] else None,
        load_during=_mean(s.load1 for s in during),
        others_before=_mean(s.others for s in by["before"]),
        others_during=_mean((s.others for s in during), (s.seconds for s in during)),
        others_after=_mean(s.others for s in by["after"]),
        others_range=max(others) - min(others) if len(others) > 1 else None,
        steal=_mean((s.steal for s in during), (s.seconds for s in during)),
        mhz=_mean(s.mhz for s in during), governor=host.governor, cpus=host.cpus,
        gpu_sm_mhz=_mean(g.sm_mhz for g in gpus), gpu_temperature_c=max((g.temperature_c for g in gpus
                                                                          if g.temperature_c is not None),
                                                                         default=None),
        gpu_power_w=_mean(g.power_w for g in gpus), throttle=throttle_names(mask))


def other_work(host: HostConditions) -> float | None:
    """Cores' worth of other work on a host around a run: during it where sampled, else before and after."""
    s = summarize(host)
    if s.others_during is not None:
        return s.others_during
    return _mean([s.others_before, s.others_after])


def around(record: Sampled) -> float | None:
    """Cores' worth of other work on a run's hosts just before and just after it (summed over hosts; None: not
    sampled): the sequential rule's covariate. Taken outside the run, so the stack under test cannot move it
    (during the run, on a saturated host, other work is the CPUs less the run's own use, which the stack sets)."""
    if record.conditions is None or not record.conditions.hosts:
        return None
    values = [_mean([s.others_before, s.others_after]) for s in map(summarize, record.conditions.hosts.values())]
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def describe(host: HostConditions) -> str:
    """One line for `results show`: 'load 2.1 -> 3.4; other work 0.3 cores (0.1-0.6 during); ...'."""
    if host.problem:
        return f"not sampled: {host.problem}"
    s = summarize(host)
    parts = []
    if s.load_before is not None or s.load_after is not None:
        parts.append(f"load {_num(s.load_before)} before, {_num(s.load_after)} after")
    if s.others_during is not None or s.others_before is not None:
        moved = f" (moved by {s.others_range:.1f})" if s.others_range is not None else ""
        parts.append(f"other work {_num(s.others_before)} / {_num(s.others_during)}{moved} / {_num(s.others_after)} "
                     "cores before/during/after")
    if s.steal:
        parts.append(f"steal {s.steal:.1%}")
    if s.mhz is not None:
        parts.append(f"{s.mhz:.0f} MHz" + (f" ({s.governor})" if s.governor else ""))
    if s.cpus:
        parts.append(f"{s.cpus} CPUs")
    if s.gpu_sm_mhz is not None:
        parts.append(f"GPU {s.gpu_sm_mhz:.0f} MHz SM, {_num(s.gpu_temperature_c)} C max, {_num(s.gpu_power_w)} W")
    if s.throttle:
        parts.append("GPU throttled: " + ", ".join(s.throttle))
    return "; ".join(parts) or "no samples"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


# -- other work under a point (the note under `repro bench`'s table) --------------------------------------------

BUSY_FLOOR = 0.25  # cores of other work during a run worth a warning (compare's floor for "other work differed")
BUSY_FLOOR_SHARE = 0.05  # ... or 5% of the host's CPUs, whichever is more


class Sampled(Protocol):
    """What busy_note reads of a run: its conditions (a RunRecord; the record imports this module, not back)."""

    @property
    def conditions(self) -> Conditions | None: ...


def busy_note(records: Sequence[Sampled]) -> str | None:
    """A warning when other work used the cores during any of these runs (the figures then carry its noise)."""
    hit: list[tuple[str, float, int | None]] = []
    for r in records:
        for name, host in (r.conditions.hosts.items() if r.conditions else ()):
            others = summarize(host).others_during
            floor = max(BUSY_FLOOR, BUSY_FLOOR_SHARE * (host.cpus or 0))
            if others is not None and others > floor:
                hit.append((name, others, host.cpus))
    if not hit:
        return None
    low, high = min(x for _, x, _ in hit), max(x for _, x, _ in hit)
    hosts = ", ".join(dict.fromkeys(n for n, _, _ in hit))
    cpus = {c for _, _, c in hit if c}
    of = f" of {cpus.pop()}" if len(cpus) == 1 else ""
    span = f"{low:.1f}" if round(low, 1) == round(high, 1) else f"{low:.1f}-{high:.1f}"
    runs = len({id(r) for r in records if r.conditions})
    return (f"other work used {span} cores{of} on {hosts} during the runs: its figure carries that noise "
            f"({len(hit)} host-run{'s' if len(hit) != 1 else ''} of {runs} run{'s' if runs != 1 else ''}; "
            "`repro results show` lists the conditions)")
