"""Where a GPU run's ranks write NCCL's INFO lines, and how they are read back (pure).

NCCL names the path it took (docs/fabric.md) only in its INFO lines. repro has each rank write them to a file of
its own (NCCL_DEBUG_FILE, `nccl.%h.%p.log` in a directory of the run: repro.launch.plan.nccl_debug_env) rather
than to its output, which the workload's parser reads; a runtime collects the files back as it collects the
ranks' output, and the record keeps them parsed (`RunRecord.fabric`). Only points whose workload talks through
NCCL get them: a torch workload on the nccl backend, or Horovod, on a GPU stack.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from repro.launch.workloads import WORKLOADS, program
from repro.manifest.frameworks import FRAMEWORKS
from repro.results.record import Settings
from repro.workloads.comm import resolve_backend

_HEADER = re.compile(r"^==> (.*) <==$", re.M)
PATTERN = "nccl.*.log"  # what nccl_debug_env's NCCL_DEBUG_FILE makes of nccl.%h.%p.log


def uses_nccl(point: Settings, *, gpu: bool, framework: str | None) -> bool:
    """Whether a point's ranks talk through NCCL: on a GPU stack, a workload whose framework's own library runs the
    backend the point chose (its `auto` is the framework's GPU rule), or Horovod's (its GPU collectives are NCCL's)."""
    if not gpu or point.workload not in WORKLOADS:
        return False
    name = program(point.workload, framework).spec.framework
    if name is None:
        return False
    auto = FRAMEWORKS.get(name).auto_backend(gpu)
    if auto is not None:  # the framework's own library: the point's dist_backend
        return resolve_backend(str(point.extra.get("dist_backend") or "auto"), gpu) == "nccl"
    return point.backend is not None  # backend: Horovod's controller


def run_dir(run_id: str) -> str:
    """The directory of one run's NCCL files on a host (the direct scheduler's runtimes; /tmp: every host has it)."""
    return f"/tmp/repro-nccl-{run_id}"


def point_dir(point: Settings, *, gpu: bool, run_id: str, framework: str | None) -> str | None:
    """The directory a point's ranks write NCCL's files to, or None when the point does not use NCCL."""
    return run_dir(run_id) if uses_nccl(point, gpu=gpu, framework=framework) else None


def read_argv(directory: str) -> list[str]:
    """The command that prints every NCCL file in `directory`, each after tail's `==> PATH <==` header."""
    return ["find", directory, "-maxdepth", "1", "-type", "f", "-name", PATTERN,
            "-exec", "tail", "-v", "-n", "+1", "{}", "+"]


def files_of(text: str) -> dict[str, str]:
    """The files in `read_argv`'s output, by file name (tail separates files with an empty line: not theirs)."""
    found: dict[str, str] = {}
    heads = list(_HEADER.finditer(text))
    for i, head in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[head.end() + 1:end]
        if i + 1 < len(heads) and body.endswith("\n\n"):
            body = body[:-1]
        found.setdefault(posixpath.basename(head.group(1)), body)
    return found


def joined(outputs: Iterable[str]) -> str:
    """The NCCL files of every host's `read_argv` output, once each (hosts sharing a filesystem list the same
    files: a name holds NCCL's host and pid), in name order, as one log."""
    files: dict[str, str] = {}
    for text in outputs:
        for name, body in files_of(text).items():
            files.setdefault(name, body)
    return "".join(body if body.endswith("\n") or not body else body + "\n" for _, body in sorted(files.items()))
