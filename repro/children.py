"""Child processes that end when repro ends, killed included; scratch that a killed run left, removed.

A program repro starts gets PR_SET_PDEATHSIG (the kernel signals it when repro's thread ends, even by
SIGKILL). A program that starts programs of its own (ansible-playbook: workers, ssh) runs under `supervise`:
a small process that holds it in its own process group and kills that whole group when repro ends.
Scratch directories carry repro's process id in their name (`repro-<what>-<pid>-...`), so the next start
removes those whose process is gone.

An ssh connection master started with ControlPersist leaves the program's group (it daemonizes): given the
program's control path directory, the supervisor tells each master there to exit once the group is gone.

Run as `python repro/children.py PARENT_PID [--ssh-control-dir DIR] PROGRAM ARG...` to supervise PROGRAM
(standard library only, so that it runs as a script wherever repro is).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

PR_SET_PDEATHSIG = 1
GRACE_S = 3.0


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to send `sig` to this process when the thread that started it ends (Linux; a preexec_fn)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def scratch_dir(what: str, root: str | None = None) -> Path:
    """A private scratch directory named for this process (0700), so that the next start can remove it if this
    process is killed before it does."""
    return Path(tempfile.mkdtemp(prefix=f"repro-{what}-{os.getpid()}-", dir=root))


def remove_stale(what: str, root: str | Path | None = None, *,
                 before: Callable[[Path], None] | None = None) -> list[Path]:
    """Remove this user's `what` scratch directories under `root` (default: the temp directory) whose process is
    gone; `before` is called on each first (to stop what it still serves). Returns what was removed."""
    base = Path(root or tempfile.gettempdir())
    pattern = re.compile(rf"repro-{re.escape(what)}-(?P<pid>[0-9]{{1,10}})-")
    removed = []
    try:
        entries = list(base.iterdir())
    except OSError:
        return []
    for path in entries:
        m = pattern.match(path.name)
        if not m or _alive(int(m["pid"])):
            continue
        try:
            st = path.lstat()
        except OSError:
            continue
        if st.st_uid != os.getuid() or not path.is_dir() or path.is_symlink():
            continue
        if before is not None:
            with contextlib.suppress(Exception):
                before(path)
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def supervised(argv: list[str], *, ssh_control_dir: str | None = None) -> list[str]:
    """argv run under a supervisor that ends it, and every process it starts, when this process ends.

    `ssh_control_dir`: where argv's ssh connection masters keep their sockets (Ansible's control path dir). A
    master started with ControlPersist leaves the program's process group (it daemonizes), so the supervisor
    also tells each master there to exit once the group is gone."""
    extra = ["--ssh-control-dir", ssh_control_dir] if ssh_control_dir else []
    return [sys.executable, str(Path(__file__).resolve()), str(os.getpid()), *extra, *argv]


# Programs that start programs of their own, so that the parent-death signal of the program alone would leave those
# running: the docker CLI (ssh for an ssh:// engine, its plugins, credential helpers), srun (its --prolog and
# --epilog, and steps it runs locally), shells.
STARTS_PROGRAMS = frozenset({"docker", "srun", "salloc", "sh", "bash", "dash", "timeout", "nohup", "setsid"})


def starts_programs(argv: list[str]) -> bool:
    """Whether argv (past an `env VAR=... ` prefix) is a program that starts programs of its own (STARTS_PROGRAMS),
    and so needs the supervisor to end them with repro."""
    words = list(argv)
    if words and Path(words[0]).name == "env":
        words = words[1:]
        while words and ("=" in words[0] or words[0].startswith("-")):
            words = words[1:]
    return bool(words) and Path(words[0]).name in STARTS_PROGRAMS


def close_ssh_masters(control_dir: str | None) -> None:
    """Tell every ssh connection master with a socket in `control_dir` to exit (`ssh -O exit`), then remove it."""
    if not control_dir or not os.path.isdir(control_dir):
        return
    for entry in sorted(os.listdir(control_dir)):
        sock = os.path.join(control_dir, entry)
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "repro-control-master"],
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=10, check=False)
    shutil.rmtree(control_dir, ignore_errors=True)


def supervise(parent: int, argv: list[str], ssh_control_dir: str | None = None) -> int:
    """Run argv in its own process group; kill the group when `parent` ends (or this supervisor is told to stop),
    and then argv's detached ssh connection masters in `ssh_control_dir` (close_ssh_masters)."""
    die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:  # repro ended before the line above took effect
        return 1
    try:
        child = subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_parent)
    except OSError as exc:  # as a shell says it: the caller reads stderr and the status, never a traceback
        sys.stderr.write(f"{argv[0]}: {exc.strerror or exc}\n")
        return 127 if isinstance(exc, FileNotFoundError) else 126

    def stop(signum: int, _frame: object) -> None:
        _kill_group(child, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=GRACE_S)
        _kill_group(child, signal.SIGKILL)
        close_ssh_masters(ssh_control_dir)
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    rc = child.wait()
    _kill_group(child, signal.SIGKILL)  # what the program left behind in its group
    return rc if rc >= 0 else 128 - rc


@dataclass(frozen=True)
class Bounded:
    """What a program printed, at most the bytes asked for; `stopped` says why repro ended it early, if it did."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    stopped: str | None = None


def run_bounded(argv: list[str], *, timeout: float | None, max_bytes: int,
                input: bytes | Iterable[bytes] | None = None, supervise: bool = False) -> Bounded:
    """Run argv (stdin: `input`, bytes or chunks, else nothing); keep at most max_bytes of each output stream and
    stop it once it prints more or runs past `timeout` (a program that prints for ever or never ends costs that
    much, no more). `supervise`: run it under the supervisor, for a program that starts programs of its own (they
    end with repro too, killed included); else it gets the parent-death signal itself.

    OSError when argv cannot be started.
    """
    child = subprocess.Popen(supervised(argv) if supervise else argv,
                             stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                             preexec_fn=die_with_parent)
    if input is not None:
        threading.Thread(target=_feed, args=(child.stdin, input), daemon=True).start()
    out_fd, err_fd = child.stdout.fileno(), child.stderr.fileno()
    kept: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
    stopped = None
    deadline = None if timeout is None else time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        for stream in (child.stdout, child.stderr):
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map() and stopped is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                stopped = f"did not finish in {timeout:g} s"
                break
            for key, _ in sel.select(left):
                block = os.read(key.fd, 1 << 16)
                if not block:
                    sel.unregister(key.fileobj)
                    continue
                kept[key.fd] += block
                if len(kept[key.fd]) > max_bytes:
                    stopped = f"printed more than {max_bytes} bytes"
    if stopped is not None:
        _stop(child, supervise)
    try:
        code = child.wait(timeout=None if deadline is None else max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:  # its output closed, but it goes on
        _stop(child, supervise)
        code, stopped = child.wait(), stopped or f"did not finish in {timeout:g} s"
    child.stdout.close()
    child.stderr.close()
    return Bounded(None if stopped else code, bytes(kept[out_fd][:max_bytes]), bytes(kept[err_fd][:max_bytes]),
                   stopped)


def _feed(pipe, data: bytes | Iterable[bytes]) -> None:
    """Write `data` to a child's stdin, then close it; a child that ends (or is stopped) first ends the writing."""
    with contextlib.suppress(OSError, ValueError):
        for chunk in [data] if isinstance(data, bytes) else data:
            pipe.write(chunk)
    with contextlib.suppress(OSError, ValueError):
        pipe.close()


def _stop(child: subprocess.Popen, supervised_: bool) -> None:
    """End a child and all it started: a supervisor is told to end its group first (SIGKILL would leave it no time)."""
    if supervised_ and child.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            child.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=GRACE_S + 2)
    _kill_group(child, signal.SIGKILL)


def _kill_group(child: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, sig)


if __name__ == "__main__":
    args = sys.argv[1:]
    control = None
    if len(args) > 2 and args[1] == "--ssh-control-dir":
        control, args = args[2], [args[0], *args[3:]]
    if len(args) < 2 or not args[0].isdigit():
        sys.exit("usage: children.py PARENT_PID [--ssh-control-dir DIR] PROGRAM [ARG...]")
    sys.exit(supervise(int(args[0]), args[1:], control))
