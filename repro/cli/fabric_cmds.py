"""`repro fabric LOG...`: the path NCCL took, read from logs a user already has."""

from __future__ import annotations

import argparse

from repro.cli.compare_cmds import add_format_option
from repro.inputs import NCCL_VERSION, argument, path_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fabric", help="the path NCCL took, from its log lines: NCCL loaded, network, inter- and intra-node transports",
        description="Read NCCL's INFO lines (NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV) from each LOG: a "
        "training job's output, an nccl-tests run, a Slurm job's file with `srun -l` prefixes, NCCL_DEBUG_FILE "
        "files. Per file and communicator: the NCCL loaded, the network (and plugin, HCAs), the inter-node and "
        "intra-node paths with connection counts, NVLS and PXN, and plain warnings (sockets while HCAs were "
        "listed, no GPUDirect RDMA, SHM between GPUs of one node, a loaded NCCL other than the framework's).",
        epilog="exit status: 0 read; 2 a LOG that cannot be read (missing, a directory, a FIFO or device, over "
        "256 MiB) or a bad option. docs/fabric.md says what each line means.")
    p.add_argument("logs", nargs="+", metavar="LOG", type=path_argument, help="log files to read")
    p.add_argument("--framework-nccl", metavar="VERSION", type=argument(NCCL_VERSION),
                   help="the NCCL version the framework reports (torch.cuda.nccl.version()), to check against the "
                   "one the log says was loaded")
    add_format_option(p)
    p.set_defaults(handler=cmd_fabric)


def cmd_fabric(args: argparse.Namespace) -> int:
    import sys

    from repro.formats import render
    from repro.pipeline.fabric import fabric

    report = fabric(args.logs, framework_nccl=args.framework_nccl)
    sys.stdout.write(render(report.document(), args.format))
    return 0
