"""Run an mpirun command line with Horovod's Gloo controller, without horovodrun.

    python -m repro.workloads.gloo --hosts 10.0.0.1:2,10.0.0.2:2 [--iface eth0] -- mpirun -np 4 ... python -m ...

horovodrun would reach the hosts with `ssh -o StrictHostKeyChecking=no`, which repro must not use,
and HOROVOD_CONTROLLER=gloo under plain mpirun leaves every rank alone in a world of size 1. So this
launcher starts Horovod's own rendezvous server here, lets mpirun (with its usual, checked SSH) start
the processes, and tells them where the rendezvous is; `_net.prepare_gloo_environment` then gives
each process the rank variables horovodrun would have set. Hosts must be filled in order
(mpirun's default mapping, or --map-by slot), and this launcher must run on the first host, or
--rendezvous-addr must name an address of this machine that the workers reach.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

from ._common import ArgumentParser, WorkloadError, run_main
from ._net import interface_of, parse_host_slots

_LAUNCHERS = ("mpirun", "mpiexec", "orterun")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


def launcher_index(argv: Sequence[str]) -> int:
    """Position of the mpirun word in argv (it may follow a wrapper such as `ip netns exec h1`)."""
    for index, word in enumerate(argv):
        if os.path.basename(word) in _LAUNCHERS:
            return index
    raise WorkloadError(f"no mpirun in the command after '--' ({' '.join(argv) or 'empty'})")


def process_count(argv: Sequence[str]) -> int | None:
    """The -np/-n/--np value of an mpirun argv, or None when it has none."""
    for index, word in enumerate(argv):
        for flag in ("-np", "--np", "-n", "-c"):
            if word == flag and index + 1 < len(argv):
                return int(argv[index + 1])
            if word.startswith(flag + "="):
                return int(word.split("=", 1)[1])
    return None


def gloo_argv(
    argv: Sequence[str], hosts: str, rendezvous_addr: str, port: int, iface: str, processes: int
) -> list[str]:
    """argv with the Gloo environment exported (`-x NAME=VALUE`) right after the mpirun word."""
    at = launcher_index(argv) + 1
    exports = {
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": rendezvous_addr,
        "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port),
        "HOROVOD_CONTROLLER": "gloo",
        "HOROVOD_CPU_OPERATIONS": "gloo",
        "HOROVOD_GLOO_IFACE": iface,
        "REPRO_GLOO_HOSTS": hosts,
        "REPRO_GLOO_NP": str(processes),
    }
    extra: list[str] = []
    for name, value in exports.items():
        extra += ["-x", f"{name}={value}"]
    return [*argv[:at], *extra, *argv[at:]]


def _parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    argv = list(argv)
    if "--" not in argv:
        raise WorkloadError("usage: python -m repro.workloads.gloo --hosts ADDR:SLOTS,... [--iface IF] -- mpirun ...")
    split = argv.index("--")
    parser = ArgumentParser(prog="repro.workloads.gloo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", required=True, help="ADDR:SLOTS,ADDR:SLOTS in mpirun's host order")
    parser.add_argument(
        "--iface", default=None, help="network interface Gloo uses on every host (default: the first host's)"
    )
    parser.add_argument(
        "--rendezvous-addr", default=None, help="address of this machine the workers reach (default: first host)"
    )
    parser.add_argument("--verbose", action="store_true", help="log rendezvous requests")
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def launch(argv: Sequence[str] | None) -> int:
    """Start the rendezvous server, run mpirun as a child, forward signals, return its exit status."""
    args, command = _parse(sys.argv[1:] if argv is None else argv)
    hosts = parse_host_slots(args.hosts)
    slots = sum(n for _, n in hosts)
    launcher_index(command)
    processes = process_count(command) or slots
    if processes > slots:
        raise WorkloadError(f"mpirun asks for {processes} processes but --hosts offers {slots} slots")
    addr = args.rendezvous_addr or hosts[0][0]
    iface = args.iface or interface_of(addr) or "eth0"

    from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts
    from horovod.runner.http.http_server import RendezvousServer

    server = RendezvousServer(verbose=1 if args.verbose else 0)
    port = server.start()
    try:
        server.init(get_host_assignments(parse_hosts(args.hosts), processes, processes))
        full = gloo_argv(command, args.hosts, addr, port, iface, processes)
        sys.stderr.write(f"repro.workloads.gloo: rendezvous {addr}:{port} iface {iface}\n")
        child = subprocess.Popen(full)
        previous = {sig: signal.signal(sig, lambda s, _f: child.send_signal(s)) for sig in _FORWARDED}
        try:
            code = child.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        server.stop()
    return 128 - code if code < 0 else code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exit status is mpirun's (128+N when it died of signal N)."""
    status = {"code": 0}

    def body(args: Sequence[str] | None) -> None:
        status["code"] = launch(args)

    failed = run_main(body, argv)
    return failed or status["code"]


if __name__ == "__main__":
    sys.exit(main())
