"""The command line a log shows, and what it says: the program's flags, the launcher's ranks and hosts (pure).

A pasted log often starts with the command that ran it, after a prompt (``$``, ``>``, ``>>``, ``#``, ``+``),
between backticks, split over lines with ``\\``, or behind environment assignments
(``LD_LIBRARY_PATH=... python3 tf_cnn_benchmarks.py ...``). A shell *assignment* such as
``RUN="srun ... $CMD"`` is not a command (nothing runs on that line) and is never taken for one.

Launchers: ``mpirun``/``horovodrun``/``bfrun`` (Bluefog's) ``-np N``/``-n N``, ``-H host:slots,...``/``--host``,
``-npernode N``; ``srun`` ``-n``/``--ntasks``, ``-N``/``--nodes``; ``torchrun`` ``--nproc_per_node N``,
``--nnodes M``. Of ``cmd1; cmd2`` only the command that runs the script is read.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from repro.results.importers.lines import Line

_PROMPT = re.compile(r"^\s*(?:[$#>+]+|\(\S+\)\s*\$|\[[^\]]*\][$#])\s+")  # $ # > >> + (set -x) (venv) $ [u@h d]$
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_LAUNCHERS = ("mpirun", "mpiexec", "horovodrun", "srun", "orterun", "torchrun", "bfrun")


@dataclass(frozen=True)
class Command:
    """A command line found in a log: its argv, where it is, the program's flags and the launch."""

    argv: tuple[str, ...]
    line: int
    script: str
    flags: dict[str, str] = field(default_factory=dict)  # --name=value / --name value; bare --name is "True"
    env: dict[str, str] = field(default_factory=dict)  # NAME=value assignments before the command
    processes: int | None = None  # ranks the launcher starts (-np); None without a launcher
    hosts: int | None = None  # distinct hosts (-H list, srun --nodes); None when the command does not say
    controller: str | None = None  # Horovod's controller the launcher starts: mpi (mpirun, horovodrun --mpi), gloo

    def flag(self, *names: str) -> str | None:
        """The value of the first of these flags the command sets."""
        for name in names:
            if name in self.flags:
                return self.flags[name]
        return None


def _joined(lines: Sequence[Line], index: int) -> tuple[str, int]:
    """Line `index` with its backslash continuation lines; returns the text and the next index."""
    text = lines[index].text
    i = index + 1
    while text.rstrip().endswith("\\") and i < len(lines):
        text = text.rstrip()[:-1] + " " + lines[i].text.strip()
        i += 1
    return text, i


def _clean(text: str) -> str:
    text = text.strip().strip("`").strip()
    for fence in ("```python", "```bash", "```sh", "```"):
        if text.startswith(fence):
            text = text[len(fence):].strip()
    return _PROMPT.sub("", text, count=1)


_REDIRECT = re.compile(r"^(?:\d*[<>]|&|\||;)")  # >& out.txt, 2>&1, | tee, ; : the command's own words end


def _flags(args: Sequence[str]) -> dict[str, str]:
    flags: dict[str, str] = {}
    i = 0
    args = list(args)
    end = next((k for k, a in enumerate(args) if _REDIRECT.match(a)), len(args))
    args = args[:end]
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if not eq:
            if i < len(args) and not args[i].startswith("-"):
                value = args[i]
                i += 1
            else:
                value = "True"
        flags.setdefault(name.replace("-", "_"), value)
    return flags


def _launch(args: Sequence[str]) -> tuple[int | None, int | None]:
    """Ranks and hosts from a launcher's own arguments (before the program)."""
    opts = _flags(args)
    processes = None
    for name in ("np", "n", "ntasks"):
        if opts.get(name, "").isdigit():
            processes = int(opts[name])
            break
    hosts = None
    listed = opts.get("H") or opts.get("host") or opts.get("hosts")
    if listed and listed != "True":
        names = {entry.split(":")[0] for entry in listed.split(",") if entry.strip()}
        hosts = len(names)
        slots = [int(e.split(":")[1]) for e in listed.split(",") if e.count(":") == 1 and e.split(":")[1].isdigit()]
        if processes is None and slots and len(slots) == len(listed.split(",")):
            processes = sum(slots)
    elif (opts.get("N") or opts.get("nodes") or "").isdigit():
        hosts = int(opts.get("N") or opts["nodes"])
    elif processes and (opts.get("npernode") or opts.get("ntasks_per_node") or "").isdigit():
        per = int(opts.get("npernode") or opts["ntasks_per_node"])
        hosts = -(-processes // per) if per else None
    if processes is None and opts.get("nproc_per_node", "").isdigit():  # torchrun: processes per node x nodes
        nodes = int(opts["nnodes"]) if opts.get("nnodes", "").isdigit() else 1
        processes, hosts = int(opts["nproc_per_node"]) * nodes, hosts or nodes
    return processes, hosts


def parse_command(text: str, line: int, scripts: Sequence[str]) -> Command | None:
    """The command on one (joined) line if it runs one of `scripts`; None for anything else."""
    if not any(s in text for s in scripts):
        return None
    try:
        argv = shlex.split(_clean(text))
    except ValueError:
        return None
    ends = [i for i, a in enumerate(argv) if a.endswith(";") or a == "&&"]
    first = next((i for i, a in enumerate(argv) if any(a.endswith(s) or a == s for s in scripts)), None)
    before = [i for i in ends if first is not None and i < first]
    if before:  # 'rm -r out; CUDA_VISIBLE_DEVICES=0,1 torchrun ...': the command that runs the script
        argv = argv[before[-1] + 1:]
    env: dict[str, str] = {}
    while argv and _ASSIGNMENT.match(argv[0]):
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    start = next((i for i, a in enumerate(argv) if any(a.endswith(s) or a == s for s in scripts)), None)
    if not argv or start is None:
        return None  # an assignment (RUN="srun ... $CMD") or prose naming the script
    head = argv[:start]
    if head and not any(re.search(r"(python[0-9.]*|ipython)$", a) for a in head) and not head[0].endswith(_LAUNCHERS):
        return None  # "see tf_cnn_benchmarks.py" in a sentence
    launcher = next((i for i, a in enumerate(head) if a.split("/")[-1] in _LAUNCHERS), None)
    processes, hosts, controller = None, None, None
    if launcher is not None:
        python = next((i for i, a in enumerate(head) if re.search(r"python[0-9.]*$", a)), start)
        processes, hosts = _launch(head[launcher + 1:python])
        controller = _controller(head[launcher].split("/")[-1], head[launcher + 1:python])
    script = next(s for s in scripts if argv[start].endswith(s))
    return Command(tuple(argv), line, script, _flags(argv[start + 1:]), env, processes, hosts, controller)


def _controller(launcher: str, args: Sequence[str]) -> str | None:
    """Horovod's controller: mpirun starts MPI ranks; horovodrun uses Gloo with --gloo, MPI with --mpi (by
    default, whichever it was built with: not shown)."""
    if launcher in ("mpirun", "mpiexec", "orterun"):
        return "mpi"
    if launcher == "horovodrun":
        return "gloo" if "--gloo" in args else "mpi" if "--mpi" in args else None
    return None


def find_commands(lines: Sequence[Line], scripts: Sequence[str]) -> list[Command]:
    """Every command line among `lines` that runs one of `scripts`, in order."""
    out = []
    i = 0
    while i < len(lines):
        text, nxt = _joined(lines, i)
        command = parse_command(text, lines[i].number, scripts)
        if command is not None:
            out.append(command)
            i = nxt
        else:
            i += 1
    return out


def truthy(value: str | None) -> bool | None:
    """An absl boolean flag's value: True, False, or None when it is not a boolean."""
    if value is None:
        return None
    text = value.strip().strip("'\"").lower()
    if text in ("true", "1", "yes", "t", "y"):
        return True
    if text in ("false", "0", "no", "f", "n"):
        return False
    return None
