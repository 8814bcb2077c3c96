"""Start torchrun on this node of a batch job, with the rendezvous the job's environment names.

    srun --ntasks-per-node=1 python -m repro.workloads.torchrun --nproc-per-node 2 [--port 29400] -- \
        python -m repro.workloads.torch_cnn ...

A batch script is written before the batch system chooses the nodes, so the rendezvous endpoint cannot be in
it. This wrapper, one per node, works it out and then becomes `python -m torch.distributed.run` (exec):
nodes from SLURM_STEP_NUM_NODES / SLURM_NNODES, endpoint MASTER_ADDR or SLURM_LAUNCH_NODE_IPADDR (the node
the script runs on, the first of the allocation) at --port + job id mod 1000, the rendezvous id from the job
id, and `is_host` for the node that holds the endpoint (node 0), so torch does not have to guess it from the
hostname. torch.distributed.run is then the c10d rendezvous torchrun always is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from ._common import ArgumentParser, WorkloadError, run_main

RDZV_PORT = 29400  # torchrun's own default rendezvous port


def torchrun_options(nnodes: int, nproc: int, endpoint: str, rdzv_id: str, is_host: bool | None) -> list[str]:
    """torchrun's options for a c10d rendezvous (pure); is_host None lets torch decide from the hostname."""
    out = [f"--nnodes={nnodes}", f"--nproc-per-node={nproc}", "--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}",
           f"--rdzv-id={rdzv_id}"]
    if is_host is not None:
        out.append(f"--rdzv-conf=is_host={'true' if is_host else 'false'}")
    return out


def script_words(command: Sequence[str], *, no_python: bool = True) -> list[str]:
    """What follows torchrun's own options: `--no-python -- COMMAND` (or, `no_python=False`, `-m -- MODULE ARGS` for
    a `python -m MODULE ARGS` command). The `--` ends torchrun's options: argparse reads every word that looks like
    an option before it hands the script its arguments, and a workload flag that is a prefix of torchrun's
    (torch_allreduce's --num of --numa-binding) made torchrun exit with "ambiguous option"."""
    if no_python:
        return ["--no-python", "--", *command]
    if len(command) < 3 or command[1] != "-m":
        raise WorkloadError(f"torchrun -m runs `python -m MODULE ...`, not {' '.join(command[:3])} ...")
    return ["-m", "--", *command[2:]]


def batch_options(env: Mapping[str, str], nproc: int, port: int) -> list[str]:
    """torchrun's options from a Slurm job step's environment (pure)."""
    nodes = env.get("SLURM_STEP_NUM_NODES") or env.get("SLURM_NNODES") or env.get("SLURM_JOB_NUM_NODES")
    if not nodes or not nodes.isdigit():
        raise WorkloadError("not inside a Slurm job step (no SLURM_STEP_NUM_NODES or SLURM_NNODES): run it with srun")
    address = env.get("MASTER_ADDR") or env.get("SLURM_LAUNCH_NODE_IPADDR")
    if not address:
        raise WorkloadError("no rendezvous address: neither MASTER_ADDR nor SLURM_LAUNCH_NODE_IPADDR is set")
    job = env.get("SLURM_JOB_ID", "")
    port = port + (int(job) % 1000 if job.isdigit() else 0)
    node = env.get("SLURM_NODEID", "")
    is_host = None if not node.isdigit() else int(node) == 0
    return torchrun_options(int(nodes), nproc, f"{address}:{port}", f"slurm-{job or 'job'}", is_host)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: exec torch.distributed.run (returns only on a bad argument)."""
    args = list(sys.argv[1:] if argv is None else argv)

    def body(given: Sequence[str] | None) -> None:
        words = list(given or [])
        if "--" not in words or words.index("--") == len(words) - 1:
            raise WorkloadError("usage: python -m repro.workloads.torchrun --nproc-per-node N [--port P] -- COMMAND")
        split = words.index("--")
        parser = ArgumentParser(prog="repro.workloads.torchrun", description=__doc__.split("\n\n")[0])
        parser.add_argument("--nproc-per-node", type=int, required=True)
        parser.add_argument("--port", type=int, default=RDZV_PORT)
        opts = parser.parse_args(words[:split])
        full = [sys.executable, "-m", "torch.distributed.run",
                *batch_options(os.environ, opts.nproc_per_node, opts.port), *script_words(words[split + 1:])]
        sys.stderr.write(f"repro.workloads.torchrun: {' '.join(full[1:8])} ...\n")
        sys.stderr.flush()
        os.execv(sys.executable, full)

    return run_main(body, args)


if __name__ == "__main__":
    sys.exit(main())
