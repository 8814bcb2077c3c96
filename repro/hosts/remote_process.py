"""A long-running command on a host (a local process under repro's supervisor, or an SSH channel) whose output is
collected as it comes, bounded in bytes: `Remote.start` makes one."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from typing import Any, Protocol

from repro import children

# What one command may print on each stream before it is stopped (the most repro reads: job logs, NCCL files).
MAX_OUTPUT_BYTES = 64 << 20


class Connection(Protocol):
    """What a process needs of the host it runs on (repro.hosts.remote.Remote; a protocol: no import cycle)."""

    host: Any  # the inventory Host: .name, .local
    connect_timeout: float

    def _client(self) -> Any:
        """The host's SSH client, connected."""
        ...


class RemoteProcess:
    """A command running on a host (local subprocess or SSH channel) whose output is collected."""

    def __init__(self, remote: Connection, argv: list[str], input: bytes | None = None,
                 max_bytes: int = MAX_OUTPUT_BYTES) -> None:
        self.remote = remote
        self.argv = argv
        self.max_bytes = max_bytes
        self.overflow: str | None = None  # why repro stopped it, when it printed more than max_bytes
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._proc = None
        self._chan = None
        if remote.host.local:
            # under repro.children's supervisor: the launch and all it starts (mpirun, ssh, docker) end with repro,
            # killed included
            self._proc = subprocess.Popen(children.supervised(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                                          start_new_session=True)
            if input is not None:
                with contextlib.suppress(BrokenPipeError):
                    self._proc.stdin.write(input)
                    self._proc.stdin.close()
            self._pump(self._proc.stdout.readline, self.stdout)
            self._pump(self._proc.stderr.readline, self.stderr)
        else:
            client = remote._client()
            transport = client.get_transport()
            self._transport = transport
            self._chan = transport.open_session(timeout=remote.connect_timeout)
            self._chan.exec_command(shlex.join(argv))
            if input is not None:
                self._chan.sendall(input)
            self._chan.shutdown_write()
            self._pump(self._chan.makefile("rb").readline, self.stdout)
            self._pump(self._chan.makefile_stderr("rb").readline, self.stderr)

    def _pump(self, readline, sink: list[str]) -> None:
        def run():
            size = 0
            while True:
                try:  # a line is read in bounded pieces: a host printing one endless line costs max_bytes
                    line = readline(min(1 << 20, self.max_bytes + 1))
                except (TimeoutError, OSError, ValueError):
                    return
                if not line:
                    return
                size += len(line)
                if size > self.max_bytes:
                    self._overflowed()
                    return
                with self._lock:
                    sink.append(line.decode(errors="replace") if isinstance(line, bytes) else line)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self._threads.append(t)

    def _overflowed(self) -> None:
        """Stop the command: it printed more than repro reads (said on its stderr, naming the host)."""
        why = f"{self.remote.host.name}: `{shlex.join(self.argv)[:120]}` printed more than {self.max_bytes} bytes"
        with self._lock:
            if self.overflow is not None:
                return
            self.overflow = why
            self.stderr.append(f"repro: {why}; stopped\n")
        self.stop()

    def poll(self) -> int | None:
        """Exit code if finished, else None. A lost SSH connection counts as finished with code 255."""
        if self._proc is not None:
            return self._proc.poll()
        if self._chan.exit_status_ready():
            return self._chan.recv_exit_status()
        if not self._transport.is_active() or (self.overflow and self._chan.closed):  # repro closed it
            return 255
        return None

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                return None
            time.sleep(0.1)
        for t in self._threads:
            t.join(timeout=5)
        return code

    def stop(self) -> None:
        """Stop the local process group, or close the SSH channel (the remote side cleans up containers)."""
        if self._proc is not None and self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
        if self._chan is not None:
            self._chan.close()

    def output(self) -> tuple[str, str]:
        with self._lock:
            return "".join(self.stdout), "".join(self.stderr)

    def stdout_lines(self) -> list[str]:
        """The lines of stdout received so far (a copy)."""
        with self._lock:
            return list(self.stdout)

    def stderr_lines(self) -> list[str]:
        """The lines of stderr received so far (a copy)."""
        with self._lock:
            return list(self.stderr)
