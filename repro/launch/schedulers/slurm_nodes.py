"""Reaching a Slurm cluster's nodes the way its users can: one `srun -w NODE` per check from the submit host,
never SSH into a node. Used before a sweep for the runtime's checks (the hosts' software, the image on each
node), the host facts `repro prepare` would gather (playbooks/library/repro_facts.py's own code, run with the
node's python), and whether the MPI can be wired up the way the launcher will (PMI plugin, Slurm support).
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

from repro.errors import HostError
from repro.hosts.facts import normalise
from repro.hosts.inventory import Host
from repro.hosts.remote import MAX_OUTPUT_BYTES, Result
from repro.launch.launchers.mpirun import slurm_mpirun_problem  # noqa: F401 - the launcher's own check
from repro.launch.launchers.srun import pmi_problem  # noqa: F401 - the launcher's own check
from repro.launch.schedulers.slurm_client import SlurmClient
from repro.launch.schedulers.slurm_site import SlurmSite, minutes
from repro.resources import data_dir
from repro.results.provenance import HostFacts

CHECK_TIMEOUT_S = 300
# Runs the facts module's own `gather` outside Ansible: the node needs its python's standard library only.
FACTS_DRIVER = """
import json, sys, types
try:
    import ansible.module_utils.basic
except ImportError:
    for name in ("ansible", "ansible.module_utils", "ansible.module_utils.basic"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["ansible.module_utils.basic"].AnsibleModule = None
namespace = {"__name__": "repro_facts"}
exec(compile(sys.argv[1], "repro_facts.py", "exec"), namespace)
print("REPRO_FACTS " + json.dumps(namespace["gather"](json.loads(sys.argv[2]))))
"""


def check_srun(site: SlurmSite, node: str, timeout: float) -> list[str]:
    """srun of one task on `node`, for a check (no MPI, the site's partition and account)."""
    argv = ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={node}", "--job-name=repro-check", "--mpi=none",
            "--quiet", f"--time={minutes(timeout)}"]
    argv += [f"--partition={site.partition}"] if site.partition else []
    argv += [f"--account={site.account}"] if site.account else []
    return argv


class SrunNode:
    """A Remote-like handle on one node (`host`, `run`): each command is an srun on that node."""

    def __init__(self, site: SlurmSite, host: Host) -> None:
        self.site = site
        self.host = host
        self.client = SlurmClient(site)

    def __enter__(self) -> SrunNode:
        self.client.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.client.__exit__(*exc)

    def run(self, argv: list[str], *, timeout: float | None = CHECK_TIMEOUT_S, input: bytes | None = None,
            check: bool = False, max_bytes: int = MAX_OUTPUT_BYTES) -> Result:
        """argv on the node through srun, as Remote.run runs it on a host (bounded in time and bytes)."""
        limit = timeout or CHECK_TIMEOUT_S
        res = self.client.run([*check_srun(self.site, self.host.name, limit), *map(str, argv)], timeout=limit + 60,
                              data=input, max_bytes=max_bytes)
        result = Result(self.host.name, tuple(map(str, argv)), res.returncode, res.stdout, res.stderr)
        if check and not result.ok:
            raise HostError(f"{self.host.name}: `{argv[0]} ...` through srun failed (exit {res.returncode}):\n"
                            f"{result.tail()}", host=self.host.name)
        return result


def via(site: SlurmSite):
    """The `via` of a runtime's checks under Slurm: host -> SrunNode."""
    return lambda host: SrunNode(site, host)


def _facts_params(host: Host) -> dict:
    return {"sections": ["all"], "interface": host.interface, "docker_host": host.docker_host,
            "dataset_dir": host.dataset_dir, "sysfs": "/sys", "command_timeout": 20}


def gather_facts(site: SlurmSite, hosts: list[Host]) -> tuple[dict[str, HostFacts], dict[str, str]]:
    """The host facts of every node (as `repro prepare` gathers them), through srun; (facts, problems by node)."""
    source = (data_dir("playbooks") / "library" / "repro_facts.py").read_text(encoding="utf-8")

    def one(host: Host) -> tuple[str, HostFacts | None, str | None]:
        python = str(host.vars.get("ansible_python_interpreter") or "python3")
        try:
            with SrunNode(site, host) as node:
                res = node.run([python, "-c", FACTS_DRIVER, source, json.dumps(_facts_params(host))])
        except HostError as exc:
            return host.name, None, exc.message
        line = next((ln for ln in reversed(res.stdout.splitlines()) if ln.startswith("REPRO_FACTS ")), None)
        if not res.ok or line is None:
            return host.name, None, f"gathering facts through srun failed (exit {res.returncode}): {res.tail(3)}"
        try:
            return host.name, normalise(json.loads(line.removeprefix("REPRO_FACTS ")), host.name, host.vars), None
        except ValueError as exc:
            return host.name, None, f"unreadable facts: {exc}"

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
        found = list(pool.map(one, hosts))
    return ({name: f for name, f, _ in found if f is not None},
            {name: why for name, _, why in found if why is not None})


def components(ompi_info: str, framework: str) -> set[str] | None:
    """The components of one MCA framework in `ompi_info --parsable` output (None: no Open MPI answered)."""
    found = {m.group(1) for m in re.finditer(rf"^mca:{framework}:([A-Za-z0-9_]+):", ompi_info, re.M)}
    return found if "ompi:version" in ompi_info or found else None
