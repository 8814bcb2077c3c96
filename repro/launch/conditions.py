"""Sampling the conditions of a run on its hosts (the adapter; the model and its arithmetic are pure, in
repro.results.conditions).

One Sampler per sweep holds one SSH connection per remote host (repro.hosts.remote.Remote) and reads each
host's /proc with one constant command per snapshot (`snapshot_command`); the local host's files are read
in-process, with no process started. Per run: two snapshots BEFORE_S apart just before the launch (what
other work did with nothing of the run running), one every INTERVAL_S while it runs, and two AFTER_S apart
once it ended. Sampling never fails a run: a host that cannot be read gets a `problem` and no samples.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

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
    """The conditions of one run, filled in when its `Sampler.run` block ends."""

    conditions: Conditions | None = None


class Sampler:
    """Samples the hosts of a sweep around each of its runs (a context manager for the sweep)."""

    def __init__(self, hosts: list[Host], *, gpu: bool = False, interval: float = INTERVAL_S) -> None:
        self.interval = interval
        self.readers = {h.name: _HostReader(h, gpu) for h in hosts}
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts))), thread_name_prefix="repro-cond")

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=False)
        for reader in self.readers.values():
            reader.close()

    def _all(self, names: list[str]) -> dict[str, Snapshot | None]:
        return dict(zip(names, self._pool.map(lambda n: self.readers[n].snapshot(), names), strict=True))

    @contextlib.contextmanager
    def run(self, hosts: list[str]) -> Iterator[Taken]:
        """Sample `hosts` (names) before, through and after the block (the run); the result lands in the Taken."""
        taken = Taken()
        names = [h for h in hosts if h in self.readers]
        samples: dict[str, list[HostSample]] = {n: [] for n in names}
        first = self._all(names)
        time.sleep(BEFORE_S)
        start = self._all(names)
        started = time.monotonic()
        run_start = {n: s.uptime for n, s in start.items() if s is not None}
        for n in names:
            if first[n] and start[n]:
                samples[n].append(sample(first[n], start[n], phase="before", run_start=None, t=0.0))
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
            time.sleep(AFTER_S)
            after = self._all(names)
            for n in names:
                if end[n] and after[n]:
                    # what the run started and left behind still counts as its own
                    samples[n].append(sample(end[n], after[n], phase="after", run_start=run_start.get(n),
                                             t=time.monotonic() - started))
            hosts_out = {}
            for n in names:
                snap = end[n] or start[n]
                reader = self.readers[n]
                hosts_out[n] = HostConditions(cpus=snap.cpus if snap else None,
                                              governor=snap.governor if snap else None, samples=samples[n],
                                              problem=reader.problem if not samples[n] else None)
            taken.conditions = Conditions(interval_s=self.interval, hosts=hosts_out)
