"""Why a point failed, in one line a person can act on (pure).

Whatever noticed the failure first (mpirun, a rank, the time limit, repro's own probes), the reason is
decided from everything known once the point has ended: the hosts probed afterwards, the launcher's and
the workload's own messages, the exit status. A host that does not answer any more is the reason
whichever side noticed first; then what the runtime saw itself (the time limit, a dead container); then
the workload's own error line; then a rank that was killed or failed (with the host it ran on); then a
connection the launcher could not make; then the exit status.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Mapping

from repro.launch.placement import Placement

_SIGNAL_RANK = re.compile(r"process rank (\d+) with PID \d+ on node (\S+?) exited on signal (\d+)(?: \(([^)]*)\))?")
_EXIT_RANK = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s*Exit code:\s*(\d+)", re.S)
_IMPROPER = re.compile(r"process rank (\d+) with PID \d+ on\s+node (\S+) exiting improperly")
_SSH_REFUSED = re.compile(r"ssh: connect to host (\S+) port (\d+): ([^\n]+)")
_LOST_DAEMON = re.compile(r"lost communication with a remote daemon.*?Remote daemon:\s*\S+ on node (\S+)", re.S)
_WORKLOAD_ERROR = re.compile(r"repro-workload error: ([^\n]+)")
_HOST_KEY = re.compile(r"Host key verification failed")
_TRACEBACK_LAST = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception)): (.+)$", re.M)
TAIL_LINES = 15


def rank_host(rank: int, placement: tuple[Placement, ...]) -> str | None:
    """The host of rank `rank` when ranks fill hosts in order (mpirun --map-by slot)."""
    for p in placement:
        if rank < p.ranks:
            return p.host.name
        rank -= p.ranks
    return None


def _host_named(node: str, placement: tuple[Placement, ...]) -> str:
    """The inventory name of a node as mpirun names it (address, inventory name or 'localhost')."""
    for p in placement:
        if node in (p.host.address, p.host.name) or (node == "localhost" and p.host.local):
            return p.host.name
    return node


def _signal_text(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return f"{name}, killed: out of memory?" if number == signal.SIGKILL else name


def _exit_text(code: int) -> str:
    if code > 128 and code - 128 < 64:
        return f"status {code} ({_signal_text(code - 128)})"
    return f"status {code}"


def _rank_failure(text: str, placement: tuple[Placement, ...]) -> str | None:
    m = _SIGNAL_RANK.search(text)
    if m:
        rank, node, sig = int(m.group(1)), m.group(2).rstrip("."), int(m.group(3))
        host = rank_host(rank, placement) or _host_named(node, placement)
        return f"rank {rank} on {host} was killed by {_signal_text(sig)}"
    m = _EXIT_RANK.search(text)
    if m:
        rank, code = int(m.group(1)), int(m.group(2))
        return f"rank {rank} on {rank_host(rank, placement) or '?'} exited with {_exit_text(code)}"
    m = _IMPROPER.search(text)
    if m:
        rank = int(m.group(1))
        return f"rank {rank} on {rank_host(rank, placement) or _host_named(m.group(2), placement)} exited without " \
            "finalizing MPI"
    return None


def explain(*, placement: tuple[Placement, ...], stdout: str, stderr: str, returncode: int | None,
            failure: str | None, unreachable: Mapping[str, str], launcher: str = "mpirun") -> str:
    """The one-line reason a point failed (see the module docstring for the order of evidence)."""
    for p in placement:
        if p.host.name in unreachable:
            return unreachable[p.host.name]
    if failure:  # what the runtime saw itself: the time limit, a dead container, Ctrl-C
        return failure
    text = f"{stderr}\n{stdout}"
    found = _WORKLOAD_ERROR.search(text)
    if found:
        return f"the workload failed: {found.group(1).strip()}"
    rank = _rank_failure(text, placement)
    if rank:
        return rank
    m = _SSH_REFUSED.search(text)
    if m:
        where = f"{_host_named(m.group(1), placement)}:{m.group(2)}"
        return f"{launcher} could not reach {where} ({m.group(3).strip().lower()})"
    if _HOST_KEY.search(text):
        return f"{launcher} could not reach the other hosts: host key verification failed"
    m = _LOST_DAEMON.search(text)
    if m:
        return f"{launcher} lost its daemon on {_host_named(m.group(1), placement)}"
    last = _TRACEBACK_LAST.findall(text)
    if last:
        return f"the workload failed: {last[-1][0]}: {last[-1][1].strip()}"
    if returncode is None:
        return "the workload printed no result (no exit code)"
    if returncode != 0:
        return f"{launcher} exited with {_exit_text(returncode)} and the workload printed no result"
    return "the workload printed no result (exit 0)"


def tail(stdout: str, stderr: str, lines: int = TAIL_LINES) -> str:
    """The last lines of the launcher's output (stderr first, where errors go), result lines left out."""
    keep = [line for line in (stderr.strip().splitlines() + stdout.strip().splitlines())
            if not line.startswith(("REPRO_RESULT ", "REPRO_PART "))]
    return "\n".join(keep[-lines:])
