"""Watching a running point: background probes of its remote hosts, the time limit, the launcher's exit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from repro.errors import HostError
from repro.hosts.inventory import Host
from repro.hosts.remote import CONNECT_TIMEOUT, Remote, RemoteProcess, reachable

PROBE_INTERVAL = 2.0
PROBE_FAILURES = 2  # consecutive failed probes before a host counts as gone
ANSWER_WAIT = 1.0  # how long a probe waits for sshd's reply on the held connection before checking the port
KEEPALIVE = "keepalive@openssh.com"  # a request sshd answers itself (its "unknown request" reply is an answer)
REOPEN_AFTER = 30.0  # after the held connection could not be opened, probes use the SSH port alone this long


class HeldLine:
    """An SSH connection to one remote host, held open while a point runs and asked for a keepalive reply at
    each probe, so that a probe costs the host a packet. A new TCP connection per probe made sshd fork and
    re-exec on the very cores the ranks were being timed on: on the 2-core test cluster that was about a tenth
    of a 1 MiB all-reduce.

    One request is in flight at a time; one still unanswered at the next probe is waited on again, not sent
    twice. Opening the connection happens in the same background thread, so a slow login never stalls a probe;
    when it cannot be opened (a login refused, say) it is not tried again for REOPEN_AFTER seconds.
    """

    def __init__(self, host: Host) -> None:
        self.host = host
        self.remote = Remote(host, connect_timeout=CONNECT_TIMEOUT)
        self._closed = threading.Event()
        self._asking: threading.Thread | None = None
        self._answered = threading.Event()
        self._reopen_at = 0.0

    def answers(self, timeout: float) -> bool:
        """Whether sshd has answered over the held connection, waiting up to `timeout` seconds for it."""
        if self._closed.is_set() or time.monotonic() < self._reopen_at:
            return False
        if self._asking is None or not self._asking.is_alive():
            self._answered = threading.Event()
            self._asking = threading.Thread(target=self._ask, args=(self._answered,), daemon=True,
                                            name=f"repro-keepalive-{self.host.name}")
            self._asking.start()
        return self._answered.wait(timeout)

    def _ask(self, answered: threading.Event) -> None:
        try:
            try:
                transport = self.remote.transport()
            except HostError:
                self._reopen_at = time.monotonic() + REOPEN_AFTER
                return
            if not self._closed.is_set():
                transport.global_request(KEEPALIVE, wait=True)  # returns on the reply or when the link closes
                if transport.is_active():
                    answered.set()
        except Exception:  # no connection or no reply is an unanswered probe, whatever the cause
            pass
        finally:
            if self._closed.is_set():  # closed while this thread was still connecting
                self.remote.close()

    def close(self) -> None:
        self._closed.set()
        self.remote.close()  # a request still waiting for its reply returns as the link closes


class Watch:
    """Background probes of the remote hosts of a running point (and an optional extra check).

    A probe asks each remote host's sshd over a connection held for the point (HeldLine); when no reply comes
    within ANSWER_WAIT, a new TCP connection to its SSH port decides, as before there was a held connection.
    PROBE_FAILURES probes in a row with neither make the host count as gone."""

    def __init__(self, hosts: list[Host], extra: Callable[[], str | None] | None = None) -> None:
        self.hosts = [h for h in hosts if not h.local]
        self.extra = extra
        self.problem: str | None = None
        self._stop = threading.Event()
        self._misses = {h.name: 0 for h in self.hosts}
        self._lines = {h.name: HeldLine(h) for h in self.hosts}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watch:
        if self.hosts or self.extra:
            for line in self._lines.values():
                line.answers(0)  # open the connections now, in the background
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for line in self._lines.values():
            line.close()

    def probe(self, host: Host) -> bool:
        """Whether the host answered: over its held connection, else by accepting a new TCP connection."""
        return self._lines[host.name].answers(ANSWER_WAIT) or reachable(host, timeout=PROBE_INTERVAL)

    def _run(self) -> None:
        last_extra = 0.0
        answered = {h.name: time.monotonic() for h in self.hosts}  # when each host last answered
        while not self._stop.wait(PROBE_INTERVAL):
            for host in self.hosts:
                if self._stop.is_set():
                    return
                if self.probe(host):
                    self._misses[host.name] = 0
                    answered[host.name] = time.monotonic()
                    continue
                self._misses[host.name] += 1
                if self._misses[host.name] >= PROBE_FAILURES:
                    self.problem = (f"host {host.name} ({host.address}) stopped answering (no answer from its SSH "
                                    f"server for {time.monotonic() - answered[host.name]:.0f} s)")
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


@dataclass(frozen=True)
class Echo:
    """A progress callback that also takes the workload's own output, line by line (`repro bench -v`)."""

    progress: Callable[[str], None]
    output: Callable[[str], None]

    def __call__(self, text: str) -> None:
        self.progress(text)


def supervise(proc: RemoteProcess, watch: Watch, timeout: float, started: float,
              progress: Callable[[str], None] | None = None) -> tuple[int | None, str | None]:
    """Wait for the launcher, passing the workload's progress lines on (and, to an Echo, every other line of its
    output); return (exit code, failure reason)."""
    shown, shown_out = 0, 0

    def forward() -> None:
        nonlocal shown, shown_out
        if progress is None:
            return
        lines = proc.stderr_lines()
        for line in lines[shown:]:
            text = line.strip()
            # mpirun --tag-output and srun --label put a rank tag first
            at = text.find(PROGRESS_PREFIX)
            if at >= 0:
                progress(text[at + len(PROGRESS_PREFIX):])
            elif isinstance(progress, Echo) and text:
                progress.output(text)
        shown = len(lines)
        if isinstance(progress, Echo):
            out = proc.stdout_lines()
            for line in out[shown_out:]:
                if line.strip():
                    progress.output(line.rstrip())
            shown_out = len(out)

    while True:
        forward()
        code = proc.poll()
        if code is not None:
            time.sleep(0.05)  # the last lines may still be on their way from the reader threads
            forward()
            return code, None
        if watch.problem:
            return None, watch.problem
        if time.monotonic() - started > timeout:
            return None, f"the point did not finish within its time limit of {timeout:.0f} s"
        time.sleep(0.2)
