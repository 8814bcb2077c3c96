"""Every torchrun command line repro builds leaves the workload's flags to the workload: torchrun's own parser
(torch.distributed.run.get_args_parser(), the one in this environment) accepts it and hands the script exactly
the command repro meant. torch_allreduce's --num once made torchrun exit at once ("ambiguous option: --num could
match --numa-binding, --numa_binding"): argparse reads every word that looks like an option, the script's
arguments included, before it fills them in."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.hosts.inventory import Host, Inventory
from repro.launch.launchers import LAUNCHERS
from repro.launch.placement import place
from repro.launch.points import SweepSpec, expand
from repro.launch.workloads import program
from repro.manifest import load_stack
from repro.workloads import catalog
from repro.workloads.spec import Option
from repro.workloads.torchrun import script_words

run = pytest.importorskip("torch.distributed.run")

ROOT = Path(__file__).resolve().parents[2]
TORCH = load_stack(ROOT / "stacks" / "cpu-torch213.yaml")


def _sample(option: Option) -> list[str]:
    """The option on a command line with a value it accepts (every flag of the program, not only bench's)."""
    if option.type is bool:
        return [option.flag]
    value = option.default if option.default is not None else (option.choices or (1,))[0]
    if option.items:
        value = option.items[0]
    return [option.flag, str(value)]


def _commands() -> list[tuple[str, list[str]]]:
    """(workload, the command one rank runs) for every built-in workload torchrun can start on a PyTorch stack:
    the command `repro bench` builds, then every option of the program, so that a flag repro sends only by hand
    is checked too."""
    out = []
    for name in catalog.BUILTIN:
        spec = catalog.spec_of(name)
        if not spec.runs_program or (spec.frameworks and "pytorch" not in spec.frameworks):
            continue
        workload = program(name, "pytorch")
        (point, *_) = expand(SweepSpec(workload=name, workers=(2,)), TORCH.stack)
        command = workload.command(point, "python3")
        for option in workload.spec.options:
            command += _sample(option)
        out.append((name, command))
    return out


COMMANDS = _commands()


def _parsed(torchrun_argv: list[str]):
    """torchrun's own reading of its command line (argv after `python -m torch.distributed.run`)."""
    return run.get_args_parser().parse_args(torchrun_argv)


def _after_torchrun(argv: list[str]) -> list[str]:
    return argv[argv.index("torch.distributed.run") + 1:]


def test_every_torch_workload_is_checked():
    names = [name for name, _ in COMMANDS]
    assert {"torch_cnn", "torch_allreduce", "torch_tta", "cnn", "allreduce", "tta", "lm", "probe"} <= set(names)
    allreduce = dict(COMMANDS)["torch_allreduce"]
    assert "--num" in allreduce  # the flag that is a prefix of torchrun's --numa-binding


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_torchrun_on_one_host_leaves_every_workload_flag_to_the_workload(name: str, command: list[str]):
    inventory = Inventory("local", (Host(name="localhost", address="127.0.0.1", slots=2),))
    argv = LAUNCHERS.get("torchrun").argv(place(inventory, 2), command, [], interface="lo", ssh=None, forwarded=())
    args = _parsed(_after_torchrun(argv))
    assert args.no_python and args.standalone and args.nproc_per_node == "2"
    assert [args.training_script, *args.training_script_args] == command


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_torchrun_agents_on_several_hosts_leave_every_workload_flag_to_the_workload(name: str, command: list[str]):
    inventory = Inventory("inv", (Host(name="a", address="10.9.0.1", slots=2),
                                  Host(name="b", address="10.9.0.2", slots=2)))
    argv = LAUNCHERS.get("torchrun").argv(place(inventory, 4), command, [], interface="eth0", ssh=None, forwarded=())
    agents = " ".join(argv).split(" : ")
    assert len(agents) == 2
    for agent in agents:
        words = agent.split(" ")
        args = _parsed(_after_torchrun(words))
        assert args.nnodes == "2" and args.rdzv_endpoint == "10.9.0.1:29400"
        assert [args.training_script, *args.training_script_args] == command


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_the_slurm_wrapper_and_the_kubernetes_trainer_leave_every_workload_flag_to_the_workload(
        name: str, command: list[str]):
    # the words repro.workloads.torchrun (one per Slurm node) ends its exec of torchrun with
    args = _parsed(["--nnodes=2", "--nproc-per-node=2", *script_words(command)])
    assert args.no_python and [args.training_script, *args.training_script_args] == command
    # the Kubernetes trainer's `torchrun -m -- MODULE ARGS` (Trainer's torch policy sets the rendezvous)
    args = _parsed(script_words(command, no_python=False))
    assert args.module and [args.training_script, *args.training_script_args] == command[2:]


def test_without_the_end_of_options_torchrun_refuses_the_all_reduce_flags():
    # what the launcher built before: the reason for the `--` (if torchrun ever stops reading the script's words
    # as its own options, this says so and the `--` may go)
    command = dict(COMMANDS)["torch_allreduce"]
    with pytest.raises(SystemExit):
        _parsed(["--standalone", "--nnodes=1", "--nproc-per-node=2", "--no-python", *command])
