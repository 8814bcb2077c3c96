"""Watching a running point: background probes of its remote hosts, the time limit, the launcher's exit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from repro.errors import HostError
from repro.hosts.inventory import Host
from repro.hosts.remote import RemoteProcess, reachable

PROBE_INTERVAL = 2.0
PROBE_FAILURES = 2  # consecutive failed probes before a host counts as gone


class Watch:
    """Background probes of the remote hosts of a running point (and an optional extra check)."""

    def __init__(self, hosts: list[Host], extra: Callable[[], str | None] | None = None) -> None:
        self.hosts = [h for h in hosts if not h.local]
        self.extra = extra
        self.problem: str | None = None
        self._stop = threading.Event()
        self._misses = {h.name: 0 for h in self.hosts}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watch:
        if self.hosts or self.extra:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def _run(self) -> None:
        last_extra = 0.0
        while not self._stop.wait(PROBE_INTERVAL):
            for host in self.hosts:
                if reachable(host, timeout=PROBE_INTERVAL):
                    self._misses[host.name] = 0
                else:
                    self._misses[host.name] += 1
                    if self._misses[host.name] >= PROBE_FAILURES:
                        self.problem = (f"host {host.name} ({host.address}) stopped answering "
                                        f"(no SSH connection for {PROBE_FAILURES * PROBE_INTERVAL:.0f} s)")
                        return
            if self.extra and time.monotonic() - last_extra > 3 * PROBE_INTERVAL:
                last_extra = time.monotonic()
                try:
                    problem = self.extra()
                except HostError as exc:
                    problem = exc.message
                if problem:
                    self.problem = problem
                    return


PROGRESS_PREFIX = "REPRO_PROGRESS "  # what a workload prints (stderr) for repro to show while it runs


def supervise(proc: RemoteProcess, watch: Watch, timeout: float, started: float,
              progress: Callable[[str], None] | None = None) -> tuple[int | None, str | None]:
    """Wait for the launcher, passing the workload's progress lines on; return (exit code, failure reason)."""
    shown = 0
    while True:
        if progress is not None:
            lines = proc.stderr_lines()
            for line in lines[shown:]:
                text = line.strip()
                # mpirun --tag-output and srun --label put a rank tag first
                at = text.find(PROGRESS_PREFIX)
                if at >= 0:
                    progress(text[at + len(PROGRESS_PREFIX):])
            shown = len(lines)
        code = proc.poll()
        if code is not None:
            return code, None
        if watch.problem:
            return None, watch.problem
        if time.monotonic() - started > timeout:
            return None, f"the point did not finish within its time limit of {timeout:.0f} s"
        time.sleep(0.2)
