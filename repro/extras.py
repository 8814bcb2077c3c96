"""Optional parts of repro, installed as extras, and the error that names the extra a command needs.

    pip install repro              manifests, render, compare, results, import (no Ansible, Docker, plots)
    pip install 'repro[hosts]'     prepare (Ansible), SSH to remote hosts (fabric)
    pip install 'repro[images]'    up, archive, restore, the docker runtime (Docker SDK)
    pip install 'repro[plot]'      --plot (matplotlib)
    pip install 'repro[kubernetes]' --scheduler kubernetes: offline checks (Trainer's types, CEL, pod schema)
    pip install 'repro[tf]'        TensorFlow's workloads on this machine: TensorFlow, Horovod (compiled), mpi4py
    pip install 'repro[torch]'     PyTorch's workloads on this machine: torch (the CPU wheel: --index-url
                                   https://download.pytorch.org/whl/cpu), scikit-learn
    pip install 'repro[workloads]' both
"""

from __future__ import annotations

import importlib
from types import ModuleType

from repro.errors import BackendUnavailable

EXTRAS = {"hosts": "prepare and SSH to remote hosts", "images": "building, archiving and running stack images",
          "plot": "plots", "workloads": "running the workloads on this machine",
          "tf": "running TensorFlow's workloads on this machine",
          "torch": "running PyTorch's workloads on this machine",
          "kubernetes": "checking the objects of --scheduler kubernetes offline"}


def need(module: str, extra: str, what: str) -> ModuleType:
    """Import `module`; BackendUnavailable naming the extra that provides it when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and not module.startswith(exc.name.split(".")[0]):
            raise  # the package is there but something it needs is broken: not an extra's doing
        package = module.split(".")[0]
        raise BackendUnavailable(f"{what} needs the Python package {package}, which is not installed",
                                 hint=f"pip install 'repro[{extra}]' ({EXTRAS[extra]})") from None
