"""Slurm's client commands on the submit host (sbatch, squeue, scontrol, scancel, srun, sinfo), as a user on a
login node runs them: over SSH to the inventory's repro_slurm_submit_host, or here for a local one. Thin: argv
lists in, text and parsed `scontrol -o` records out; no sacct (sites without slurmdbd have none), so a job is
followed with `scontrol show job` and `squeue`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from repro.errors import LaunchError
from repro.hosts.inventory import Host
from repro.hosts.remote import MAX_OUTPUT_BYTES, Remote, Result
from repro.launch.plan import ENV_FROM_STDIN, env_input
from repro.launch.schedulers.slurm_site import SlurmSite

# Job states after which a job never runs again (with --no-requeue)
END_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
                        "DEADLINE", "PREEMPTED", "SPECIAL_EXIT", "REVOKED"})
QUEUED_STATES = "PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING,RESIZING,REQUEUED,SIGNALING,STAGE_OUT"
_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9/:_]*)=")
LOCAL_HOST = Host(name="local", address="127.0.0.1", local=True)


def parse_record(line: str) -> dict[str, str]:
    """One `scontrol show ... -o` line (KEY=VALUE pairs, values may hold blanks) as a dict."""
    text = line.strip()
    marks = list(_KEY.finditer(text))
    out: dict[str, str] = {}
    for here, after in zip(marks, [*marks[1:], None], strict=True):
        out[here.group(1)] = text[here.end():after.start() if after else len(text)].strip()
    return out


def parse_mpi_list(text: str) -> list[str]:
    """The plugin names of `srun --mpi=list` (22.05: an indented list; older: 'srun: mpi/pmix' lines)."""
    names: list[str] = []
    for line in text.splitlines():
        line = line.strip().removeprefix("srun:").strip()
        versions = re.search(r"versions available:\s*(.+)$", line)
        words = re.split(r"[\s,]+", versions.group(1).strip()) if versions else [line.removeprefix("mpi/")]
        names += [w for w in words if re.fullmatch(r"[a-z][a-z0-9_]*", w) and w not in names]
    return names


@dataclass
class SlurmClient:
    """The Slurm commands of one site, run on its submit host (one SSH connection, reused)."""

    site: SlurmSite
    remote: Remote | None = None

    def __enter__(self) -> SlurmClient:
        self.remote = Remote(self.site.submit_host or LOCAL_HOST)
        return self

    def __exit__(self, *exc) -> None:
        if self.remote is not None:
            self.remote.close()

    @property
    def host(self) -> Host:
        return self.site.submit_host or LOCAL_HOST

    def argv(self, argv: list[str], secrets: dict[str, str] | None = None) -> list[str]:
        """argv as run on the submit host: with the site's SLURM_CONF, and `secrets` read from stdin (ENV_FROM_STDIN:
        their values are never on a command line)."""
        conf = [f"SLURM_CONF={self.site.conf}"] if self.site.conf else []
        reader = list(ENV_FROM_STDIN) if secrets else []
        return ["env", *conf, *reader, *argv] if conf or reader else list(argv)

    def run(self, argv: list[str], *, timeout: float = 60, env: dict[str, str] | None = None,
            data: bytes | None = None, check: bool = False, max_bytes: int = MAX_OUTPUT_BYTES) -> Result:
        """argv on the submit host; `env`: secret variables, given on stdin (then no `data` may be); HostError once
        it prints more than `max_bytes` on a stream."""
        if self.remote is None:
            raise RuntimeError("SlurmClient used outside `with`")
        if env:
            if data is not None:
                raise RuntimeError("SlurmClient.run: secret variables and data both on stdin")
            data = env_input(env)
        return self.remote.run(self.argv(argv, env), timeout=timeout, input=data, check=check, max_bytes=max_bytes)

    def must(self, argv: list[str], *, timeout: float = 60, what: str = "") -> str:
        """stdout of a command that must succeed; LaunchError naming the submit host otherwise."""
        res = self.run(argv, timeout=timeout)
        if not res.ok:
            raise LaunchError(f"{what or argv[0]} failed on {self.host.name} (exit {res.returncode}): {res.tail(3)}")
        return res.stdout

    # -- queries
    def version(self) -> str | None:
        res = self.run(["sinfo", "--version"])
        words = res.stdout.split()
        return words[-1] if res.ok and words else None

    def mpi_plugins(self) -> list[str]:
        res = self.run(["srun", "--mpi=list"])
        return parse_mpi_list(res.stdout + "\n" + res.stderr) if res.ok else []

    def job(self, job_id: str) -> dict[str, str] | None:
        """The job's `scontrol show job` record, or None once Slurm forgot it (MinJobAge) or never knew it."""
        res = self.run(["scontrol", "show", "job", "-o", job_id])
        if not res.ok:
            if "Invalid job id" in res.stderr + res.stdout:
                return None
            raise LaunchError(f"scontrol show job {job_id} failed on {self.host.name}: {res.tail(3)}")
        line = next((ln for ln in res.stdout.splitlines() if f"JobId={job_id} " in ln), "")
        return parse_record(line) if line else None

    def queued(self, job_id: str) -> bool:
        """Whether squeue still lists the job as pending, running or completing."""
        res = self.run(["squeue", "--noheader", "--format=%i", f"--states={QUEUED_STATES}", f"--jobs={job_id}"])
        return res.ok and job_id in res.stdout.split()

    def node(self, name: str) -> dict[str, str]:
        res = self.run(["scontrol", "show", "node", "-o", name])
        return parse_record(res.stdout) if res.ok else {}

    def hostnames(self, node_list: str) -> list[str]:
        """A Slurm host list (h[1-2]) expanded."""
        if not node_list or node_list in ("(null)", "None"):
            return []
        res = self.run(["scontrol", "show", "hostnames", node_list])
        return res.stdout.split() if res.ok else [node_list]

    def read(self, path: str, offset: int = 0) -> str:
        """A file on the submit host from byte `offset` on ("" if it is not there)."""
        res = self.run(["tail", "-c", f"+{offset + 1}", path], timeout=60)
        return res.stdout if res.ok else ""

    # -- actions
    def write(self, path: str, text: str) -> None:
        directory = path.rsplit("/", 1)[0] if "/" in path else "."
        res = self.run(["sh", "-c", 'mkdir -p "$1" && cat > "$2"', "sh", directory, path], data=text.encode())
        if not res.ok:
            raise LaunchError(f"cannot write the job script {path} on {self.host.name}: {res.tail(3)}")

    def submit(self, argv: list[str], env: dict[str, str]) -> str:
        """Run the submit command as planned (argv(["sbatch", ...], env): the secret variables `env` on its stdin);
        the job id."""
        if self.remote is None:
            raise RuntimeError("SlurmClient used outside `with`")
        res = self.remote.run(argv, timeout=120, input=env_input(env) if env else None)
        job = res.stdout.strip().split(";")[0] if res.ok else ""
        if not job.isdigit():
            raise LaunchError(f"sbatch refused the job on {self.host.name}: {res.tail(5)}")
        return job

    def cancel(self, job_id: str) -> None:
        self.run(["scancel", job_id], timeout=60)
