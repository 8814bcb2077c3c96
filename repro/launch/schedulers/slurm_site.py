"""A Slurm site's settings (pure): where to submit, partition, account, time limit, GPUs per node, PMI plugin and
extra #SBATCH lines, from the inventory's variables (repro_slurm_*) overridden by `repro bench` flags.

Every value is checked here, before anything is rendered or submitted: a value that could add a line to the
job script, or an option repro sets itself, is an input error naming the variable or flag.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro import inputs
from repro.errors import InputError
from repro.hosts.inventory import Host
from repro.hosts.inventory_files import InventoryFiles
from repro.launch.schedulers.slurm_options import OPTIONS

FLAGS = {o.variable: o.flag for o in OPTIONS}  # inventory variable -> the `repro bench` flag that overrides it
LOCAL = "local"  # repro_slurm_submit_host: run the Slurm commands on this machine (a login node)
DEFAULT_WORKDIR = "repro-slurm"

_NAME = re.compile(r"[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*", re.ASCII)
_TIME = re.compile(r"([0-9]{1,9}|[0-9]{1,9}:[0-9]{2}|[0-9]{1,9}:[0-9]{2}:[0-9]{2}|[0-9]{1,9}-[0-9]{1,9}|"
                   r"[0-9]{1,9}-[0-9]{1,9}:[0-9]{2}|[0-9]{1,9}-[0-9]{1,9}:[0-9]{2}:[0-9]{2})", re.ASCII)
_PMI = re.compile(r"[a-z][a-z0-9_]*", re.ASCII)
_PATH = re.compile(r"[A-Za-z0-9_./+-]+", re.ASCII)
_OPTION = re.compile(r"(-[A-Za-z]|--[A-Za-z][A-Za-z0-9-]*)([ =].*)?", re.ASCII)
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


Locate = Callable[[str], str]  # a variable's name -> where it is written ("file:line: var"), or the name


def _where(var: str, flags: Mapping[str, Any], locate: Locate | None = None) -> str:
    if var in flags and var in FLAGS:
        return FLAGS[var]
    return locate(var) if locate else var


def _found(value: Any) -> str:
    if isinstance(value, str):
        return inputs.shown(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"a number of {len(str(abs(value)))} digits"
    text = repr(value) if isinstance(value, (bool, int, float)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _text(var: str, value: Any, pattern: re.Pattern[str], flags: Mapping[str, Any], expected: str,
          locate: Locate | None = None) -> str:
    text = value.strip() if isinstance(value, str) else str(value) if isinstance(value, int) and \
        not isinstance(value, bool) and abs(value) < 10**30 else None
    if text is None or not pattern.fullmatch(text) or text.startswith("-"):
        raise InputError(f"{_where(var, flags, locate)}: expected {expected}, found {_found(value)}",
                         hint="values reach the job script and sbatch; they cannot add lines or options to it")
    return text


def _owned(option: str) -> str | None:
    """The option repro owns that `option` sets, also when abbreviated (sbatch takes `--nod` for `--nodes`)."""
    if option in _OWNED:
        return _OWNED[option] or option
    if option.startswith("--") and len(option) > 3:
        return next((o for o in _OWNED if o.startswith(option)), None)
    return None


def check_extra(lines: Any, where: str) -> tuple[str, ...]:
    """Extra #SBATCH lines: each one option of sbatch's, on one line, that repro does not set itself.

    sbatch splits an `#SBATCH` line into words and reads every one that starts with '-' as an option, so a
    line holds one option and at most its one value: `--qos=high --nodes=99` would set --nodes behind repro.
    """
    if isinstance(lines, str):
        items: list[Any] = [lines]
    elif isinstance(lines, (list, tuple)):
        items = list(lines)
    elif lines is None:
        items = []
    else:
        raise InputError(f"{where}: expected sbatch options (one line, or a list of lines), found {_found(lines)}")
    out = []
    for item in items:
        text = item.strip() if isinstance(item, str) else ""
        words = text.split()
        one = len(words) == 1 or (len(words) == 2 and "=" not in words[0] and not words[1].startswith("-"))
        if _CONTROL.search(text) or len(text) > 300 or not _OPTION.fullmatch(text) or not one or \
                any(q in text for q in "\"'\\"):
            raise InputError(f"{where}: expected one sbatch option per line such as --qos=high, found {_found(item)}",
                             hint="each value becomes one `#SBATCH` line, which sbatch splits into words: one "
                             "option and its value per line; newlines, quotes and other control characters are "
                             "refused")
        own = _owned(re.split(r"[ =]", text, maxsplit=1)[0])
        if own:
            raise InputError(f"{where}: {text!r} sets {own}, which repro sets from the point and the site settings",
                             hint="use --partition/--account/--time-limit (repro_slurm_partition, "
                             "repro_slurm_account, repro_slurm_time) or the sweep's --workers")
        out.append(text)
    return tuple(out)


def site_from(hosts: tuple[Host, ...], flags: Mapping[str, Any], inventory: str | None = None) -> SlurmSite:
    """The site settings of an inventory's hosts (their repro_slurm_* variables) with `flags` (by variable name)
    taking precedence; InputError naming the variable or flag of any bad value (and, given the inventory's
    path, the file and line where it is written)."""
    first = hosts[0]
    values = {**first.vars, **{k: v for k, v in flags.items() if v not in (None, "", ())}}
    locate = _locator(inventory, first) if inventory else None

    def get(var: str, pattern: re.Pattern[str], expected: str) -> str | None:
        value = values.get(var)
        return None if value in (None, "") else _text(var, value, pattern, flags, expected, locate)

    submit_value = values.get("repro_slurm_submit_host")
    submit = first.name if not first.local else LOCAL
    if submit_value not in (None, ""):
        submit = _text("repro_slurm_submit_host", submit_value, _NAME, flags, "a host name", locate)
    by_name = {h.name: h for h in hosts}
    if submit != LOCAL and submit not in by_name:
        raise InputError(f"{_where('repro_slurm_submit_host', flags, locate)}: {submit!r} is not a host of the "
                         "inventory's workers",
                         hint=f"name the host to run sbatch/squeue on (one of {', '.join(by_name)}), or '{LOCAL}'")
    gpus = values.get("repro_slurm_gpus_per_node")
    if gpus is not None:
        try:
            gpus = inputs.integer(gpus, minimum=0, maximum=1024)
        except inputs.InputValueError as exc:
            raise InputError(f"{_where('repro_slurm_gpus_per_node', flags, locate)}: {exc}") from None
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
        extra=check_extra(values.get("repro_slurm_extra"), _where("repro_slurm_extra", flags, locate)),
        workdir=workdir,
    )


def _locator(inventory: str, host: Host) -> Locate:
    """`file:line:column: var` for a variable of `host` where the inventory's files say it is written."""
    files = InventoryFiles(Path(inventory))

    def locate(var: str) -> str:
        where = files.variable(host.name, var, host.groups, host.vars.get(var))
        return f"{where}: {var}" if where else f"{inventory}: {var}"

    return locate


def minutes(seconds: float) -> str:
    """sbatch --time for a limit in seconds: whole minutes, rounded up (Slurm counts minutes)."""
    return str(max(1, -(-int(seconds) // 60)))
