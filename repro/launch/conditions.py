"""Sampling the conditions of a run on its hosts (the adapter; the model and its arithmetic are pure, in
repro.results.conditions).

One Sampler per sweep holds one SSH connection per remote host (repro.hosts.remote.Remote) and reads each
host's /proc with one constant command per snapshot (`snapshot_command`); the local host's files are read
in-process, with no process started. Per run: a before-window just before the launch (what other
work did with nothing of the run running; shared with the previous run's after-window), one snapshot every
INTERVAL_S while it runs, and an after-window AFTER_S long once it ended, read in the background. Sampling
never fails a run: a host that cannot be read gets a `problem` and no samples.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

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
BEFORE_S = AFTER_S = 0.5
# a before-window shared with the previous run's after-window: at least this long (else two fresh snapshots), and
# not so old that it no longer tells what the machine did just before the run
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
    """The conditions of one run: ready once its after-window is read (`conditions` waits for it, in the
    background since the run ended, so that collecting the run's results overlaps it)."""

    def __init__(self) -> None:
        self._future: Future[Conditions] | None = None
        self._conditions: Conditions | None = None

    @property
    def conditions(self) -> Conditions | None:
        if self._future is not None:
            self._conditions, self._future = self._future.result(), None
        return self._conditions


class Sampler:
    """Samples the hosts of a sweep around each of its runs (a context manager for the sweep).

    Windows between runs are shared: the snapshot that closes one run's after-window opens the next run's
    before-window, which then spans the whole idle gap between them (collecting, storing, planning) and costs no
    wait; only the sweep's first run sleeps BEFORE_S first. The after-window is read in the background."""

    def __init__(self, hosts: list[Host], *, gpu: bool = False, interval: float = INTERVAL_S) -> None:
        self.interval = interval
        self.readers = {h.name: _HostReader(h, gpu) for h in hosts}
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts))), thread_name_prefix="repro-cond")
        self._after = ThreadPoolExecutor(max_workers=1, thread_name_prefix="repro-cond-after")
        self._idle: dict[str, Snapshot] = {}  # the last after-window's closing snapshot per host
        self._pending: Future[Conditions] | None = None

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self._after.shutdown(wait=True)
        self._pool.shutdown(wait=False)
        for reader in self.readers.values():
            reader.close()

    def _own(self, name: str) -> frozenset[int]:
        """The sweep's own process on the local host: its collecting and planning between runs is no other work."""
        return frozenset({os.getpid()}) if self.readers[name].host.local else frozenset()

    def _all(self, names: list[str]) -> dict[str, Snapshot | None]:
        return dict(zip(names, self._pool.map(lambda n: self.readers[n].snapshot(), names), strict=True))

    def _opening(self, names: list[str]) -> tuple[dict[str, Snapshot | None], dict[str, Snapshot | None]]:
        """The before-window's two snapshots: the previous run's closing one where it is recent enough, else two
        BEFORE_S apart."""
        if self._pending is not None:
            with contextlib.suppress(Exception):
                self._pending.result()  # the previous run's after-window closes before this one opens
            self._pending = None
        first: dict[str, Snapshot | None] = {n: self._idle.get(n) for n in names}
        start = self._all(names)
        gap = min((s.uptime - f.uptime for n in names if (f := first[n]) and (s := start[n])), default=0.0)
        if any(first[n] is None for n in names) or not MIN_GAP_S <= gap <= MAX_GAP_S:
            first = start
            time.sleep(BEFORE_S)
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
            taken._future = self._pending = self._after.submit(self._closing, names, end, start, samples, run_start,
                                                               started)

    def _closing(self, names: list[str], end: dict[str, Snapshot | None], start: dict[str, Snapshot | None],
                 samples: dict[str, list[HostSample]], run_start: dict[str, float], started: float) -> Conditions:
        """The after-window (AFTER_S past the run's end, in the background) and the run's Conditions."""
        time.sleep(AFTER_S)
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
