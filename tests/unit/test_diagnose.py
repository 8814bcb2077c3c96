"""Why a point failed, in one line: from what Open MPI 4.1.4 really printed (tests/data/launcher) and the probes."""

from __future__ import annotations

from pathlib import Path

from repro.hosts.inventory import Host
from repro.launch.diagnose import explain, rank_host, tail
from repro.launch.placement import Placement

DATA = Path(__file__).resolve().parents[1] / "data" / "launcher"
TWO = (Placement(Host(name="h1", address="10.123.30.1"), 1), Placement(Host(name="h2", address="10.123.30.2"), 1))
LOCAL = (Placement(Host(name="localhost", address="127.0.0.1", local=True), 2),)


def why(placement=TWO, *, stderr="", stdout="", returncode=1, failure=None, unreachable=None) -> str:
    return explain(placement=placement, stdout=stdout, stderr=stderr, returncode=returncode, failure=failure,
                   unreachable=unreachable or {})


def test_a_killed_rank_is_named_with_its_host_and_the_likely_cause():
    text = (DATA / "openmpi-4.1.4-rank-killed.txt").read_text()
    assert why(stderr=text, returncode=137) == "rank 1 on h2 was killed by SIGKILL, killed: out of memory?"
    assert why(LOCAL, stderr=text, returncode=137).startswith("rank 1 on localhost was killed by SIGKILL")


def test_a_rank_that_exited_non_zero_is_named_with_its_status():
    text = (DATA / "openmpi-4.1.4-rank-exit3.txt").read_text()
    assert why(stderr=text, returncode=3) == "rank 1 on h2 exited with status 3"
    assert "status 137 (SIGKILL, killed: out of memory?)" in why(stderr=text.replace("Exit code:    3",
                                                                                     "Exit code:    137"))


def test_a_connection_the_launcher_could_not_make_names_host_port_and_cause():
    text = (DATA / "openmpi-4.1.4-ssh-refused.txt").read_text().replace("127.0.0.3", "10.123.30.2")
    assert why(stderr=text, returncode=255) == "mpirun could not reach h2:50999 (connection refused)"


def test_a_host_that_stopped_answering_wins_whoever_noticed_first():
    lost = "ORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[1,0],0] on node h1\n" \
           "  Remote daemon: [[1,0],1] on node 10.123.30.2\n"
    probe = {"h2": "host h2 (10.123.30.2) does not answer (no SSH connection within 5 s)"}
    # mpirun noticed first (exit 255, its own message) or repro's watch did (failure): the same reason
    assert why(stderr=lost, returncode=255, unreachable=probe) == probe["h2"]
    assert why(failure="host h2 (10.123.30.2) stopped answering", unreachable=probe) == probe["h2"]
    # without the probe's evidence, mpirun's own account is used
    assert why(stderr=lost, returncode=255) == "mpirun lost its daemon on h2"


def test_what_the_runtime_saw_itself_comes_before_messages_its_own_stop_caused():
    killed = (DATA / "openmpi-4.1.4-rank-killed.txt").read_text()
    limit = "the point did not finish within its time limit of 60 s"
    assert why(stderr=killed, failure=limit, returncode=None) == limit


def test_the_workload_own_error_line_and_a_python_traceback_are_reasons():
    assert why(stderr="repro-workload error: --data /x: not a directory (and not 'synthetic')\n",
               returncode=2) == "the workload failed: --data /x: not a directory (and not 'synthetic')"
    trace = "Traceback (most recent call last):\n  File \"x\", line 1\nModuleNotFoundError: No module named 'horovod'\n"
    assert why(stderr=trace) == "the workload failed: ModuleNotFoundError: No module named 'horovod'"
    assert why(stderr="Host key verification failed.\r\n", returncode=255) == \
        "mpirun could not reach the other hosts: host key verification failed"


def test_otherwise_the_exit_status_says_what_is_known():
    assert why(returncode=0) == "the workload printed no result (exit 0)"
    assert why(returncode=None) == "the workload printed no result (no exit code)"
    assert why(returncode=139) == "mpirun exited with status 139 (SIGSEGV) and the workload printed no result"


def test_ranks_fill_hosts_in_order_and_the_tail_leaves_result_lines_out():
    four = (Placement(TWO[0].host, 3), Placement(TWO[1].host, 2))
    assert [rank_host(r, four) for r in range(6)] == ["h1", "h1", "h1", "h2", "h2", None]
    text = tail("a\nREPRO_RESULT {}\nb", "err1\nerr2", lines=3)
    assert text == "err2\na\nb"
