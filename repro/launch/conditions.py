"""Sampling the conditions of a run on its hosts (the adapter; the model and its arithmetic are pure, in
repro.results.conditions).

One Sampler per sweep holds one SSH connection per remote host (repro.hosts.remote.Remote) and reads each
host's /proc with one constant command per snapshot (`snapshot_command`); the local host's files are read
in-process, with no process started. Per run: a before-window just before the launch (what other
work did with nothing of the run running; it opens where the previous run's after-window closed), one snapshot
every INTERVAL_S while it runs, and an after-window from its end until its results are collected. Sampling
never fails a run: a host that cannot be read gets a `problem` and no samples.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from repro.hosts.inventory import Host
from repro.hosts.remote import Remote
from repro.results.conditions import (
    Conditions,
    HostConditions,
    HostSample,
    Snapshot,
    parse_snapshot,
    sample,
    snapshot_command,
)

INTERVAL_S = 5.0  # between snapshots during a run: a remote read costs the host one short `sh`, a local one nothing
BEFORE_S = 0.5  # the sweep's first run: a before-window of its own
# windows between runs span the sweep's own work (collecting, planning): at least MIN_GAP_S (else it waits the rest),
# and a before-window older than MAX_GAP_S no longer tells what the machine did just before the run (two fresh ones)
MIN_GAP_S, MAX_GAP_S = 0.1, 60.0
READ_TIMEOUT_S = 10.0


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def local_text(gpu: bool) -> str:
    """The local host's snapshot in the sections `snapshot_command` prints, read in-process."""
    stat = next((line for line in _read("/proc/stat").splitlines() if line.startswith("cpu ")), "")
    freqs = [_read(p).strip() for p in sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"))]
    cpuinfo = [line for line in _read("/proc/cpuinfo").splitlines() if line.startswith("cpu MHz")]
    procs = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            text = _read(f"/proc/{entry}/stat").strip()
            if text:
                procs.append(text)
    parts = ["@uptime", _read("/proc/uptime").strip(), "@loadavg", _read("/proc/loadavg").strip(), "@stat", stat,
             "@nproc", str(os.cpu_count() or ""), "@freq", *freqs, "@governor",
             _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").strip(), "@cpuinfo", *cpuinfo,
             "@procs", *procs, "@gpu"]
    if gpu:
        import subprocess

        with contextlib.suppress(OSError, subprocess.SubprocessError):
            argv = snapshot_command(True)
            script = argv[2][argv[2].index("nvidia-smi"):]
            parts.append(subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                                        timeout=READ_TIMEOUT_S).stdout)
    return "\n".join(parts) + "\n"


class _HostReader:
    """Snapshots of one host: in-process for the local host, over one held SSH connection otherwise."""

    def __init__(self, host: Host, gpu: bool) -> None:
        self.host, self.gpu = host, gpu
        self.remote: Remote | None = None
        self.problem: str | None = None

    def snapshot(self) -> Snapshot | None:
        if self.host.local:
            return parse_snapshot(local_text(self.gpu))
        if self.problem:
            return None
        try:
            if self.remote is None:
                self.remote = Remote(self.host)
            res = self.remote.run(snapshot_command(self.gpu), timeout=READ_TIMEOUT_S)
            return parse_snapshot(res.stdout)
        except Exception as exc:  # sampling never fails a run, whatever went wrong
            self.problem = f"cannot read /proc on {self.host.name}: {str(exc).splitlines()[0] if str(exc) else exc}"
            return None

    def close(self) -> None:
        if self.remote is not None:
            with contextlib.suppress(Exception):
                self.remote.close()


class Taken:
    """The conditions of one run: its after-window closes when they are first asked for (once the run's results are
    collected), so that the sweep never sleeps for it."""

    def __init__(self) -> None:
        self._close: Callable[[], Conditions] | None = None
        self._conditions: Conditions | None = None

    @property
    def conditions(self) -> Conditions | None:
        if self._close is not None:
            self._conditions, self._close = self._close(), None
        return self._conditions


class Sampler:
    """Samples the hosts of a sweep around each of its runs (a context manager for the sweep).

    Windows between runs are shared and cost the sweep no wait: a run's after-window spans the time its results
    take to collect (at least MIN_GAP_S), and the snapshot that closes it opens the next run's before-window, which
    spans the planning in between; only the sweep's first run sleeps BEFORE_S for a before-window of its own."""

    def __init__(self, hosts: list[Host], *, gpu: bool = False, interval: float = INTERVAL_S) -> None:
        self.interval = interval
        self.readers = {h.name: _HostReader(h, gpu) for h in hosts}
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts))), thread_name_prefix="repro-cond")
        self._idle: dict[str, Snapshot] = {}  # the last after-window's closing snapshot per host
        self._pending: Taken | None = None

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pending is not None:
            _ = self._pending.conditions  # a run whose conditions were never asked for still closes its window
        self._pool.shutdown(wait=False)
        for reader in self.readers.values():
            reader.close()

    def _own(self, name: str) -> frozenset[int]:
        """The sweep's own process on the local host: its collecting and planning between runs is no other work."""
        return frozenset({os.getpid()}) if self.readers[name].host.local else frozenset()

    def _all(self, names: list[str]) -> dict[str, Snapshot | None]:
        return dict(zip(names, self._pool.map(lambda n: self.readers[n].snapshot(), names), strict=True))

    def _opening(self, names: list[str]) -> tuple[dict[str, Snapshot | None], dict[str, Snapshot | None]]:
        """The before-window's two snapshots: the previous run's closing one where it is recent enough (at least
        MIN_GAP_S before the second), else two BEFORE_S apart."""
        if self._pending is not None:
            _ = self._pending.conditions  # the previous run's after-window closes before this one opens
            self._pending = None
        first: dict[str, Snapshot | None] = {n: self._idle.get(n) for n in names}
        start = self._all(names)
        gap = min((s.uptime - f.uptime for n in names if (f := first[n]) and (s := start[n])), default=0.0)
        if any(first[n] is None for n in names) or gap > MAX_GAP_S:
            first = start
            time.sleep(BEFORE_S)
            start = self._all(names)
        elif gap < MIN_GAP_S:  # planned faster than a useful window: wait the rest
            time.sleep(MIN_GAP_S - gap)
            start = self._all(names)
        return first, start

    @contextlib.contextmanager
    def run(self, hosts: list[str]) -> Iterator[Taken]:
        """Sample `hosts` (names) before, through and after the block (the run); the result lands in the Taken."""
        taken = Taken()
        names = [h for h in hosts if h in self.readers]
        samples: dict[str, list[HostSample]] = {n: [] for n in names}
        first, start = self._opening(names)
        started = time.monotonic()
        run_start = {n: s.uptime for n, s in start.items() if s is not None}
        for n in names:
            if (f := first[n]) and (s := start[n]):
                samples[n].append(sample(f, s, phase="before", run_start=None, t=0.0, own_pids=self._own(n)))
        stop = threading.Event()
        last = dict(start)

        def during() -> None:
            while not stop.wait(self.interval):
                now = self._all(names)
                for n in names:
                    if last.get(n) and now[n] and n in run_start:
                        samples[n].append(sample(last[n], now[n], phase="during", run_start=run_start[n],
                                                 t=time.monotonic() - started))
                        last[n] = now[n]

        thread = threading.Thread(target=during, daemon=True, name="repro-conditions")
        thread.start()
        try:
            yield taken
        finally:
            stop.set()
            thread.join(READ_TIMEOUT_S + self.interval)
            end = self._all(names)
            elapsed = time.monotonic() - started
            for n in names:
                if last.get(n) and end[n] and n in run_start:
                    samples[n].append(sample(last[n], end[n], phase="during", run_start=run_start[n], t=elapsed))
            taken._close = partial(self._closing, names, end, start, samples, run_start, started, time.monotonic())
            self._pending = taken

    def _closing(self, names: list[str], end: dict[str, Snapshot | None], start: dict[str, Snapshot | None],
                 samples: dict[str, list[HostSample]], run_start: dict[str, float], started: float,
                 ended: float) -> Conditions:
        """The after-window (from the run's end to now, at least MIN_GAP_S) and the run's Conditions."""
        time.sleep(max(0.0, MIN_GAP_S - (time.monotonic() - ended)))
        after = self._all(names)
        for n in names:
            if (e := end[n]) and (a := after[n]):
                # what the run started and left behind still counts as its own
                samples[n].append(sample(e, a, phase="after", run_start=run_start.get(n),
                                         t=time.monotonic() - started, own_pids=self._own(n)))
                self._idle[n] = a
            else:
                self._idle.pop(n, None)
        hosts_out = {}
        for n in names:
            snap = end[n] or start[n]
            reader = self.readers[n]
            hosts_out[n] = HostConditions(cpus=snap.cpus if snap else None,
                                          governor=snap.governor if snap else None, samples=samples[n],
                                          problem=reader.problem if not samples[n] else None)
        return Conditions(interval_s=self.interval, hosts=hosts_out)
