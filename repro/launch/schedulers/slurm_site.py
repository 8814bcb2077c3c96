"""A Slurm site's settings (pure): where to submit, partition, account, time limit, GPUs per node, PMI plugin and
extra #SBATCH lines, from the inventory's variables (repro_slurm_*) overridden by `repro bench` flags.

Every value is checked here, before anything is rendered or submitted: a value that could add a line to the
job script, or an option repro sets itself, is an input error naming the variable or flag.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from repro.errors import InputError
from repro.hosts.inventory import Host

# inventory variable -> the `repro bench` flag that overrides it
FLAGS = {
    "repro_slurm_partition": "--partition",
    "repro_slurm_account": "--account",
    "repro_slurm_time": "--time-limit",
    "repro_slurm_extra": "--sbatch",
    "repro_slurm_mpi": "--slurm-mpi",
}
LOCAL = "local"  # repro_slurm_submit_host: run the Slurm commands on this machine (a login node)
DEFAULT_WORKDIR = "repro-slurm"

_NAME = re.compile(r"[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*")
_TIME = re.compile(r"(\d+|\d+:\d\d|\d+:\d\d:\d\d|\d+-\d+|\d+-\d+:\d\d|\d+-\d+:\d\d:\d\d)")
_PMI = re.compile(r"[a-z][a-z0-9_]*")
_PATH = re.compile(r"[A-Za-z0-9_./+-]+")
_OPTION = re.compile(r"(-[A-Za-z]|--[A-Za-z][A-Za-z0-9-]*)([ =].*)?")
# options repro sets from the point and the settings above: given as extra lines they would contradict them
_OWNED = {"-N": "--nodes", "-n": "--ntasks", "--nodes": "", "--ntasks": "", "--ntasks-per-node": "",
          "-J": "--job-name", "--job-name": "", "-o": "--output", "--output": "", "-e": "--error", "--error": "",
          "--requeue": "", "--no-requeue": "", "-p": "--partition", "--partition": "", "-A": "--account",
          "--account": "", "-t": "--time", "--time": "", "--wrap": "", "--parsable": "", "-D": "--chdir",
          "--chdir": "", "--gpus-per-node": "", "--array": "", "-a": "--array"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class SlurmSite:
    """Where and how jobs are submitted; None: the site's (or sbatch's) default."""

    submit_host: Host | None  # None: this machine
    conf: str | None = None  # SLURM_CONF for the client commands on the submit host
    partition: str | None = None
    account: str | None = None
    time_limit: str | None = None  # Slurm's forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
    gpus_per_node: int | None = None
    pmi: str = "pmix"
    extra: tuple[str, ...] = ()
    workdir: str = DEFAULT_WORKDIR  # scripts and outputs, on the submit host (relative: to its login directory)

    @property
    def submit_name(self) -> str:
        return self.submit_host.name if self.submit_host else LOCAL


def _where(var: str, flags: Mapping[str, Any]) -> str:
    return FLAGS[var] if var in flags and var in FLAGS else var


def _text(var: str, value: Any, pattern: re.Pattern[str], flags: Mapping[str, Any], expected: str) -> str:
    text = str(value).strip()
    if isinstance(value, bool) or not pattern.fullmatch(text) or text.startswith("-"):
        raise InputError(f"{_where(var, flags)}: expected {expected}, found {value!r}",
                         hint="values reach the job script and sbatch; they cannot add lines or options to it")
    return text


def check_extra(lines: Any, where: str) -> tuple[str, ...]:
    """Extra #SBATCH lines: each one option of sbatch's, on one line, that repro does not set itself."""
    items = [lines] if isinstance(lines, str) else list(lines or ())
    out = []
    for item in items:
        text = str(item).strip()
        if _CONTROL.search(text) or len(text) > 300 or not _OPTION.fullmatch(text):
            raise InputError(f"{where}: expected one sbatch option per line such as --qos=high, found {item!r}",
                             hint="each value becomes one `#SBATCH` line; newlines and other control characters "
                             "are refused")
        option = re.split(r"[ =]", text, maxsplit=1)[0]
        if option in _OWNED:
            own = _OWNED[option] or option
            raise InputError(f"{where}: {text!r} sets {own}, which repro sets from the point and the site settings",
                             hint="use --partition/--account/--time-limit (repro_slurm_partition, "
                             "repro_slurm_account, repro_slurm_time) or the sweep's --workers")
        out.append(text)
    return tuple(out)


def site_from(hosts: tuple[Host, ...], flags: Mapping[str, Any]) -> SlurmSite:
    """The site settings of an inventory's hosts (their repro_slurm_* variables) with `flags` (by variable name)
    taking precedence; InputError naming the variable or flag of any bad value."""
    first = hosts[0]
    values = {**first.vars, **{k: v for k, v in flags.items() if v not in (None, "", ())}}

    def get(var: str, pattern: re.Pattern[str], expected: str) -> str | None:
        value = values.get(var)
        return None if value in (None, "") else _text(var, value, pattern, flags, expected)

    submit = str(values.get("repro_slurm_submit_host") or (first.name if not first.local else LOCAL))
    by_name = {h.name: h for h in hosts}
    if submit != LOCAL and submit not in by_name:
        raise InputError(f"repro_slurm_submit_host: {submit!r} is not a host of the inventory's workers",
                         hint=f"name the host to run sbatch/squeue on (one of {', '.join(by_name)}), or '{LOCAL}'")
    gpus = values.get("repro_slurm_gpus_per_node")
    if gpus is not None and (isinstance(gpus, bool) or not str(gpus).isdigit()):
        raise InputError(f"repro_slurm_gpus_per_node: expected a whole number >= 0, found {gpus!r}")
    if gpus is None:
        gpus = max((h.gpus for h in hosts), default=0) or None
    workdir = get("repro_slurm_workdir", _PATH, "a directory path of letters, digits and ._/+-") or DEFAULT_WORKDIR
    return SlurmSite(
        submit_host=None if submit == LOCAL else by_name[submit],
        conf=get("repro_slurm_conf", _PATH, "a path to slurm.conf"),
        partition=get("repro_slurm_partition", _NAME, "a partition name (letters, digits, ._+-; comma lists)"),
        account=get("repro_slurm_account", _NAME, "an account name (letters, digits, ._+-)"),
        time_limit=get("repro_slurm_time", _TIME, "a Slurm time limit: minutes, HH:MM:SS or D-HH:MM:SS"),
        gpus_per_node=int(gpus) if gpus else None,
        pmi=get("repro_slurm_mpi", _PMI, "an srun --mpi plugin name such as pmix or pmi2") or "pmix",
        extra=check_extra(values.get("repro_slurm_extra"), _where("repro_slurm_extra", flags)),
        workdir=workdir,
    )


def minutes(seconds: float) -> str:
    """sbatch --time for a limit in seconds: whole minutes, rounded up (Slurm counts minutes)."""
    return str(max(1, -(-int(seconds) // 60)))
