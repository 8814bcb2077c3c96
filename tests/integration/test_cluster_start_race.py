"""Two test clusters starting at the same moment on a machine that has never run sshd both come up.

scripts/test.sh runs the SSH cluster and the Slurm cluster on two pytest-xdist workers, so on a new machine two
`cluster.sh up` create the machine's shared state (/run/sshd, /run/lock, /run/netns, ...) at once: a check-then-
create there failed one of them ("mkdir: cannot create directory '/run/sshd': File exists"). The test gives both a
/run as a new machine has it (an empty tmpfs in a private mount namespace, so the machine's own /run and the
session's clusters are untouched), starts two clusters in it at once, and checks that both are healthy.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cluster.fixtures import (
    DEFAULT_NAME,
    SCRIPT,
    cluster_down,
    cluster_env,
    sibling_name,
    skip_or_fail,
    unavailable_reason,
)

pytestmark = pytest.mark.cluster

# Runs inside `unshare --mount`: /run becomes an empty tmpfs seen by this process tree alone (sshd, ip netns and
# the clusters' lock files included), the two clusters start in the background at the same moment, and both are
# torn down on every exit path, inside the same mount namespace (their network namespaces are mounted there).
RACE_SCRIPT = r"""
set -u
mount -t tmpfs -o mode=755 repro-new-run /run || exit 90
for d in sshd lock netns containerd; do
  if [ -e /run/$d ]; then echo "/run/$d exists on the new /run"; exit 91; fi
done
script=$1 a=$2 b=$3 out=$4
down() {
  REPRO_CLUSTER_NAME=$a bash "$script" down >/dev/null 2>&1
  REPRO_CLUSTER_NAME=$b bash "$script" down >/dev/null 2>&1
}
trap down EXIT
REPRO_CLUSTER_NAME=$a bash "$script" up 2 >"$out/up-$a.log" 2>&1 & pa=$!
REPRO_CLUSTER_NAME=$b bash "$script" up 2 >"$out/up-$b.log" 2>&1 & pb=$!
wait "$pa"; echo "up $a $?"
wait "$pb"; echo "up $b $?"
REPRO_CLUSTER_NAME=$a bash "$script" status >"$out/status-$a.log" 2>&1; echo "status $a $?"
REPRO_CLUSTER_NAME=$b bash "$script" status >"$out/status-$b.log" 2>&1; echo "status $b $?"
[ -d /run/sshd ] && echo "sshd-dir yes"
"""


def test_two_clusters_started_at_once_on_a_new_run_directory_both_come_up(tmp_path: Path) -> None:
    reason = unavailable_reason(docker=False)
    if reason:
        skip_or_fail(reason)
    base = os.environ.get("REPRO_CLUSTER_NAME") or DEFAULT_NAME
    a, b = sibling_name(base, "p"), sibling_name(base, "q")
    env = cluster_env(a)
    env.pop("REPRO_CLUSTER_NAME")
    try:
        proc = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "bash", "-c", RACE_SCRIPT, "race",
             str(SCRIPT), a, b, str(tmp_path)],
            env=env, capture_output=True, text=True, timeout=600, check=False)
    finally:
        for name in (a, b):  # a safety net from the machine's namespace: pid files, links, state dirs
            cluster_down(name)
    logs = "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')}" for p in sorted(tmp_path.glob("*.log")))
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stdout}{proc.stderr}{logs}"
    lines = proc.stdout.splitlines()
    for name in (a, b):
        assert f"up {name} 0" in lines, f"{name} did not come up: {proc.stdout}{logs}"
        assert f"status {name} 0" in lines, f"{name} is not healthy: {proc.stdout}{logs}"
    assert "sshd-dir yes" in lines
    for name in (a, b):  # nothing of either cluster is left on the machine
        assert not Path(f"/tmp/repro-cluster-{name}").exists()
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
        assert f"{name}-br" not in links
