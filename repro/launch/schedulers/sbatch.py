"""The sbatch script of one point (pure): rendered from the point's plan, the runtime's job step, the launcher's
command line and the site's settings, and nothing else; `repro bench --scheduler slurm --dry-run` prints it,
the tests compare it with golden files and run shellcheck on it.

    #!/bin/bash
    #SBATCH --job-name=... --nodes=N --ntasks=W ... --no-requeue --output/--error in the work directory
    set -euo pipefail
    export NAME=VALUE ...           # the point's environment (secrets: only the name; the value comes from
                                    # the environment sbatch is run in, never from this file)
    <runtime functions>; export -f ...
    repro_cleanup() { <runtime teardown> }; trap repro_cleanup EXIT; trap 'exit 143' TERM INT HUP
    <runtime setup>
    <launcher> <the rank's command>
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from repro.errors import InputError
from repro.launch.launchers import Allocation
from repro.launch.plan import LaunchPlan
from repro.launch.runtimes import JobStep
from repro.launch.schedulers.slurm_site import SlurmSite
from repro.results.record import Settings
from repro.secrets import is_secret, redact_argv, redact_text

WIDTH = 100
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_FUNCTION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(\) \{", re.M)


@dataclass(frozen=True)
class BatchPlan(LaunchPlan):
    """A point as a batch job: the script, where it is written and the command that submits it."""

    script: str = ""
    script_path: str = ""
    submit_argv: list[str] = field(default_factory=list)
    submit_env: dict[str, str] = field(default_factory=dict)  # secrets: passed to sbatch, never written
    job_name: str = ""
    site: SlurmSite | None = None
    allocation: Allocation | None = None

    def describe(self) -> list[str]:
        """The point, the script (secrets shown as <redacted:..>) and the submit command, for --dry-run."""
        where = self.site.submit_name if self.site else "local"
        lines = [LaunchPlan.describe(self)[0],
                 f"# job script, written to {self.script_path} on {where}:"]
        lines += [f"    {line}" if line else "" for line in redact_text(self.script).splitlines()]
        if self.submit_env:
            lines.append(f"# on the standard input of sbatch's command: {', '.join(sorted(self.submit_env))} "
                         "(secret values)")
        lines.append(f"[{where}] {shlex.join(redact_argv(self.submit_argv))}")
        return lines


def check_env(env: dict[str, str]) -> None:
    """Every variable must be a plain name with a one-line value (quoted in the script)."""
    for name, value in env.items():
        if not _ENV_NAME.fullmatch(name):
            raise InputError(f"environment variable name {name!r} cannot be exported by a job script")
        if _CONTROL.search(str(value)):
            raise InputError(f"environment variable {name}: its value holds a newline or another control "
                             "character, which a job script cannot carry on one line")


def wrap(argv: list[str], indent: str = "  ") -> str:
    """argv as one shell command, shell-quoted, continued over lines of at most WIDTH characters."""
    lines, line = [], ""
    for word in (shlex.quote(str(a)) for a in argv):
        if line and len(line) + 1 + len(word) > WIDTH - 2:
            lines.append(line + " \\")
            line = indent + word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def header(site: SlurmSite, allocation: Allocation, job_name: str, time_limit: str) -> list[str]:
    """The #SBATCH lines: the job's shape from the point, the rest from the site."""
    opts = [f"--job-name={job_name}"]
    opts += [f"--partition={site.partition}"] if site.partition else []
    opts += [f"--account={site.account}"] if site.account else []
    opts += [f"--nodes={allocation.nodes}", f"--ntasks={allocation.tasks}"]
    opts += [f"--ntasks-per-node={allocation.tasks_per_node}"] if allocation.tasks_per_node else []
    opts += [f"--gpus-per-node={site.gpus_per_node}"] if site.gpus_per_node else []
    # a point that fails is stored as failed and re-run by --resume; Slurm must not run it again by itself
    opts += [f"--time={time_limit}", "--no-requeue", f"--output={site.workdir}/%x-%j.out",
             f"--error={site.workdir}/%x-%j.err", *site.extra]
    return [f"#SBATCH {o}" for o in opts]


def _exports(env: dict[str, str]) -> list[str]:
    lines = ["# The point's environment (the stack's env and repro's settings), passed on to every rank."]
    for name, value in sorted(env.items()):
        if is_secret(name, str(value)):
            lines.append(f"export {name}  # secret: the value comes from the environment sbatch runs in")
        else:
            if "$" in str(value) or "`" in str(value):
                lines.append("# shellcheck disable=SC2016 # the value is literal, as the stack gives it")
            lines.append(f"export {name}={shlex.quote(str(value))}")
    return lines


def render(point: Settings, step: JobStep, launch: list[str], *, runtime: str, launcher: str, site: SlurmSite,
           allocation: Allocation, job_name: str, time_limit: str) -> str:
    """The whole job script of one point."""
    check_env(step.env)
    p = point
    what = " ".join(f"{k}={v}" for k, v in (("workload", p.workload), ("model", p.model), ("workers", p.workers),
                                             ("batch/worker", p.batch_per_worker), ("backend", p.backend))
                    if v is not None)
    lines = ["#!/bin/bash", *header(site, allocation, job_name, time_limit), "#",
             f"# repro bench, one point: {_CONTROL.sub('?', what)}",
             f"# runtime {runtime}, launcher {launcher}; each rank runs:",
             *(f"#   {line}" for line in wrap(step.command).splitlines()),
             *(f"# {note}" for note in step.notes),
             "set -euo pipefail", "", *_exports(step.env)]
    functions = list(dict.fromkeys(step.functions))
    if functions:
        names = [m for text in functions for m in _FUNCTION.findall(text)]
        lines += ["", *"\n\n".join(functions).splitlines(), f"export -f {' '.join(names)}"]
    teardown = list(step.teardown) or [":"]
    lines += ["", "# Runs when the script ends, also after scancel or the time limit (SIGTERM, then SIGKILL after "
              "KillWait).", "repro_cleanup() {", *(f"  {t}" for t in teardown), "}", "trap repro_cleanup EXIT",
              "trap 'exit 143' TERM INT HUP", ""]
    lines += list(step.setup)
    if any("$" in word for word in launch):
        lines.append("# shellcheck disable=SC2016 # $... in single quotes expands in each rank's shell, not here")
    command = len(step.command)
    if launch[-command:] == step.command and len(launch) > command:  # the launcher's options, then the rank's command
        lines.append(wrap(launch[:-command]) + " \\\n  " + wrap(step.command, "    "))
    else:
        lines.append(wrap(launch))
    return "\n".join(lines) + "\n"


def launch_argv(launcher_argv: list[str], step: JobStep) -> list[str]:
    """The launcher's command line with the runtime's srun options (pyxis) right after `srun`."""
    if not step.launcher_options:
        return launcher_argv
    at = launcher_argv.index("srun") + 1
    return [*launcher_argv[:at], *step.launcher_options, *launcher_argv[at:]]
