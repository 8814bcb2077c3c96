"""PyTorch as a framework: workload specs, the framework guard, the torchrun launcher's argv and the rank mapping
the torch_* workloads do under torchrun, mpirun and srun. Pure logic: no torch, no hosts."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.launch.launchers import LAUNCHERS, Allocation, SshOptions
from repro.launch.placement import place
from repro.launch.points import SweepSpec, expand
from repro.launch.workloads import program
from repro.manifest import load_stack
from repro.pipeline.sweep_plan import runtime_backend
from repro.workloads import WorkloadError
from repro.workloads._torch import rank_environment, slurm_local_size
from repro.workloads.catalog import spec_of
from repro.workloads.torchrun import batch_options

ROOT = Path(__file__).resolve().parents[2]
CPU = load_stack(ROOT / "stacks" / "cpu-tf215.yaml")
TORCH = load_stack(ROOT / "stacks" / "cpu-torch213.yaml")
COMMAND = ["python3", "-m", "repro.workloads.torch_cnn", "--model", "resnet20"]


def cluster(slots: int = 2, hosts: int = 2) -> Inventory:
    return Inventory("inv", tuple(Host(name=f"h{i}", address=f"10.9.0.{i}", slots=slots) for i in range(1, hosts + 1)))


# --------------------------------------------------------------------------- specs and the framework guard


def test_every_workload_says_which_frameworks_it_runs_on():
    families = ("cnn", "allreduce", "tta")
    assert {n: spec_of(n).frameworks for n in families} == dict.fromkeys(families, ("tensorflow", "pytorch"))
    assert spec_of("tf_cnn_benchmarks").frameworks == ("tensorflow",) and spec_of("probe").frameworks == ()
    aliases = ("torch_cnn", "torch_allreduce", "torch_tta")
    assert {n: spec_of(n).frameworks for n in aliases} == dict.fromkeys(aliases, ("pytorch",))
    # an alias is its family's PyTorch program under the older name: the same options, module and models
    for family, alias in zip(families, aliases, strict=True):
        program = spec_of(family).program("pytorch")
        assert spec_of(alias).family == family and spec_of(alias).options == program.options
        assert (spec_of(alias).module, spec_of(alias).models) == (program.module, program.models)
    # a program takes only its framework's options: Horovod's knobs are the TensorFlow program's, dist_backend not
    tf, torch = spec_of("allreduce").program("tensorflow"), spec_of("allreduce").program("pytorch")
    assert {"cycle_time_ms", "raw"} <= {o.name for o in tf.options} and "dist_backend" not in tf.argv([])
    assert "raw" not in {o.name for o in torch.options} and torch.option("iterations").default == 100
    with pytest.raises(KeyError, match="runs on tensorflow or pytorch, not toyfw"):
        spec_of("cnn").program("toyfw")


def test_cnn_on_a_pytorch_stack_plans_the_pytorch_program_and_torch_cnn_still_works():
    for name in ("cnn", "torch_cnn"):
        point = expand(SweepSpec(workload=name, workers=(1,)), TORCH.stack)[0]
        assert point.workload == name  # records keep the name asked for
        argv = program(name, "pytorch").command(point, "python3")
        assert argv[:3] == ["python3", "-m", "repro.workloads.torch_cnn"] and "--model" in argv
    tf_point = expand(SweepSpec(workload="cnn", workers=(1,)), CPU.stack)[0]
    assert program("cnn", "tensorflow").command(tf_point, "python3")[2] == "repro.workloads.cnn"


def test_torch_workloads_offer_the_agreed_models_and_comparison_kinds():
    assert spec_of("torch_cnn").models == ("resnet50", "resnet101", "vgg16", "inception3", "resnet20", "resnet32",
                                           "resnet56")
    assert spec_of("torch_tta").models == ("resnet20", "resnet32", "resnet56")
    # the same kinds as the Horovod workloads: compare sets a PyTorch stack's runs against a Horovod stack's
    assert [spec_of(n).kind for n in ("torch_cnn", "torch_allreduce", "torch_tta")] == [
        spec_of(n).kind for n in ("cnn", "allreduce", "tta")]
    assert spec_of("torch_cnn").option("precision").choices == ("fp32", "fp16", "bf16")


def test_a_pytorch_workload_on_a_tensorflow_stack_is_refused_naming_both():
    with pytest.raises(InputError, match="torch_cnn runs on pytorch, but stack cpu-tf215 pins tensorflow") as caught:
        expand(SweepSpec(workload="torch_cnn", workers=(1,)), CPU.stack)
    assert "cnn" in (caught.value.hint or "")
    assert expand(SweepSpec(workload="cnn", workers=(1,)), CPU.stack)  # the stack's own framework passes


def test_torch_points_carry_no_horovod_controller_and_no_duplicates():
    points = expand(SweepSpec(workload="torch_cnn", workers=(1, 2), backends=("mpi", "gloo"), models=("resnet20",),
                              precisions=("bf16",)), TORCH.stack)
    assert [(p.workers, p.backend, p.precision) for p in points] == [(1, None, "bf16"), (2, None, "bf16")]


def test_backends_given_to_a_torch_workload_is_refused_naming_dist_backend():
    # `--backends mpi` with torch_allreduce used to run gloo silently (Horovod's controllers mean nothing to it)
    spec = SweepSpec(workload="torch_allreduce", backends=("mpi",), backends_given=True)
    with pytest.raises(InputError, match="torch_allreduce does not use") as refused:
        expand(spec, TORCH.stack)
    assert "--dist-backend gloo, nccl or mpi" in (refused.value.hint or "")


def test_the_hosts_are_checked_for_the_torch_backend_a_torch_point_uses_not_horovods_controller():
    spec = SweepSpec(workload="torch_allreduce", backends=("mpi",), extra={"dist_backend": "gloo"})
    (point,) = expand(spec, TORCH.stack)
    assert runtime_backend(point, spec, TORCH) == "gloo"
    for name in ("torch_cnn", "cnn"):
        auto = SweepSpec(workload=name)
        assert runtime_backend(expand(auto, TORCH.stack)[0], auto, TORCH) == "gloo"  # auto on a CPU stack
    horovod = SweepSpec(workload="cnn", backends=("mpi",))
    assert runtime_backend(expand(horovod, CPU.stack)[0], horovod, CPU) == "mpi"


# --------------------------------------------------------------------------- the torchrun launcher


def test_torchrun_on_one_host_is_a_standalone_c10d_rendezvous_running_the_command_as_is():
    argv = LAUNCHERS.get("torchrun").argv(place(cluster(), 2)[:1], COMMAND, [], interface="eth0", ssh=None,
                                          forwarded=())
    assert argv[:3] == ["python3", "-m", "torch.distributed.run"]
    assert "--standalone" in argv and "--nproc-per-node=2" in argv and "--nnodes=1" in argv
    assert argv[argv.index("--no-python") + 1:] == ["--", *COMMAND]  # `--`: torchrun reads none of its flags


def test_torchrun_on_several_hosts_starts_one_agent_per_host_through_mpirun_with_checked_host_keys():
    inv = Inventory("inv", (Host(name="a", address="10.9.0.1", slots=2), Host(name="b", address="10.9.0.2", slots=1)))
    argv = LAUNCHERS.get("torchrun").argv(place(inv, 3), COMMAND, ["NCCL_DEBUG"], interface="ib0",
                                          ssh=SshOptions(2222), forwarded=("PATH",))
    assert argv[0] == "mpirun"
    assert "StrictHostKeyChecking=yes" in argv[argv.index("plm_rsh_args") + 1]
    first, second = " ".join(argv).split(" : ")
    assert "-np 1 -H 10.9.0.1:1 python3 -m torch.distributed.run --nnodes=2 --nproc-per-node=2" in first
    assert "--rdzv-backend=c10d --rdzv-endpoint=10.9.0.1:29400" in first and "is_host=true" in first
    assert "-np 1 -H 10.9.0.2:1" in second and "--nproc-per-node=1" in second and "is_host=false" in second
    assert "--rdzv-endpoint=10.9.0.1:29400" in second
    assert second.endswith("--no-python -- " + " ".join(COMMAND))
    assert argv[argv.index("NCCL_DEBUG") - 1] == "-x"


def test_torchrun_in_a_slurm_job_starts_the_node_wrapper_once_per_node_inside_the_runtime_wrapper():
    wrapped = ["bash", "-c", 'repro_in_docker "$@"', "repro_in_docker", *COMMAND]
    argv = LAUNCHERS.get("torchrun").batch_argv(Allocation(nodes=2, tasks=4, tasks_per_node=2), wrapped, [],
                                                interface="eth0")
    assert argv[:5] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    at = argv.index("bash")
    assert argv[at:at + 4] == wrapped[:4]
    assert argv[at + 4:at + 10] == ["python3", "-m", "repro.workloads.torchrun", "--nproc-per-node", "2", "--"]
    assert argv[at + 10:] == COMMAND
    with pytest.raises(InputError, match="unevenly"):
        LAUNCHERS.get("torchrun").batch_argv(Allocation(nodes=2, tasks=3), COMMAND, [], interface="eth0")


def test_torchrun_refuses_a_program_that_is_not_a_repro_workload():
    with pytest.raises(InputError, match=r"python -m repro\.workloads"):
        LAUNCHERS.get("torchrun").argv(place(cluster(), 1), ["tf_cnn_benchmarks.py"], [], interface="eth0",
                                       ssh=None, forwarded=())


def test_node_wrapper_finds_the_rendezvous_from_the_slurm_step():
    env = {"SLURM_STEP_NUM_NODES": "2", "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.5", "SLURM_JOB_ID": "1234",
           "SLURM_NODEID": "1"}
    assert batch_options(env, 4, 29400) == ["--nnodes=2", "--nproc-per-node=4", "--rdzv-backend=c10d",
                                            "--rdzv-endpoint=10.0.0.5:29634", "--rdzv-id=slurm-1234",
                                            "--rdzv-conf=is_host=false"]
    assert batch_options({**env, "SLURM_NODEID": "0"}, 4, 29400)[-1] == "--rdzv-conf=is_host=true"
    with pytest.raises(WorkloadError, match="not inside a Slurm job step"):
        batch_options({}, 4, 29400)


def test_mpirun_passes_the_rendezvous_torch_needs():
    argv = LAUNCHERS.get("mpirun").argv(place(cluster(), 3), COMMAND, [], interface="eth0", ssh=SshOptions(22),
                                        forwarded=())
    assert argv[argv.index("MASTER_ADDR=10.9.0.1") - 1] == "-x"
    assert "MASTER_PORT=29500" in argv and argv[-len(COMMAND):] == COMMAND


def test_mpirun_on_this_machine_alone_takes_a_free_port_for_the_rendezvous():
    import socket

    local = Inventory("local", (Host(name="localhost", address="127.0.0.1", slots=2, local=True),))
    argv = LAUNCHERS.get("mpirun").argv(place(local, 2), COMMAND, [], interface="lo", ssh=None, forwarded=())
    assert "MASTER_ADDR=127.0.0.1" in argv
    port = int(next(a for a in argv if a.startswith("MASTER_PORT="))[len("MASTER_PORT="):])
    with socket.socket() as taken:  # one a running job holds is never given
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        held = taken.getsockname()[1]
        ports = {int(next(a for a in LAUNCHERS.get("mpirun").argv(place(local, 2), COMMAND, [], interface="lo",
                                                                  ssh=None, forwarded=())
                          if a.startswith("MASTER_PORT="))[len("MASTER_PORT="):]) for _ in range(20)}
    assert 1024 < port < 65536 and held not in ports


# --------------------------------------------------------------------------- rank variables


def test_torchrun_variables_are_taken_as_they_are_even_under_mpirun():
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1",
           "MASTER_PORT": "1234", "TORCHELASTIC_RUN_ID": "x", "OMPI_COMM_WORLD_RANK": "0",
           "OMPI_COMM_WORLD_SIZE": "2"}
    r = rank_environment(env)
    assert (r.rank, r.size, r.local_rank, r.local_size, r.master_addr, r.master_port, r.source) == (
        3, 4, 1, 2, "10.0.0.1", 1234, "torchrun")


def test_open_mpi_ranks_are_mapped_with_the_rendezvous_mpirun_passed():
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
           "OMPI_COMM_WORLD_LOCAL_SIZE": "2", "MASTER_ADDR": "10.9.0.1", "MASTER_PORT": "29500"}
    assert rank_environment(env).variables() == {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1",
                                                 "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.9.0.1",
                                                 "MASTER_PORT": "29500"}


def test_srun_ranks_meet_on_the_node_srun_ran_on_at_a_port_of_the_job():
    env = {"SLURM_PROCID": "2", "SLURM_NTASKS": "4", "SLURM_LOCALID": "0", "SLURM_NODEID": "1",
           "SLURM_STEP_TASKS_PER_NODE": "2(x2)", "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.7", "SLURM_JOB_ID": "4321"}
    r = rank_environment(env)
    assert (r.rank, r.size, r.local_rank, r.local_size, r.master_addr, r.master_port, r.source) == (
        2, 4, 0, 2, "10.0.0.7", 29821, "srun")


def test_mpirun_inside_a_slurm_job_meets_on_mpiruns_host():
    # Open MPI 4.1's URI of mpirun as a rank sees it (mpirun --mca oob_tcp_if_include eth0 inside an allocation)
    env = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "SLURM_JOB_ID": "17",
           "OMPI_MCA_orte_hnp_uri": "4222877696.0;tcp://10.123.44.1:41265"}
    r = rank_environment(env)
    assert (r.master_addr, r.master_port) == ("10.123.44.1", 29517)
    several = "2107310080.0;tcp://192.0.2.2,10.123.43.254:34725;tcp6://[fd00::2]:54215"
    assert rank_environment({**env, "OMPI_MCA_orte_hnp_uri": several}).master_addr == "192.0.2.2"


def test_pmix_rank_takes_the_size_from_slurm():
    r = rank_environment({"PMIX_RANK": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "1",
                          "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.7"})
    assert (r.rank, r.size, r.local_rank, r.source) == (1, 2, 1, "pmix")


def test_a_lone_process_needs_no_launcher():
    r = rank_environment({})
    assert (r.rank, r.size, r.master_addr, r.source) == (0, 1, "127.0.0.1", "single")


def test_several_ranks_without_a_rendezvous_address_say_what_is_missing():
    with pytest.raises(WorkloadError, match=r"MASTER_ADDR is not set.*mpirun"):
        rank_environment({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"})
    with pytest.raises(WorkloadError, match="not a rank of a world of 2"):
        rank_environment({"RANK": "2", "WORLD_SIZE": "2"})


@pytest.mark.parametrize(("text", "node", "expected"), [("2(x3)", "2", 2), ("3,1", "1", 1), ("2(x2),1", "2", 1),
                                                       ("4", "0", 4), ("2(x2)", "5", None), ("", "0", None)])
def test_slurm_tasks_per_node_is_read_for_this_node(text, node, expected):
    assert slurm_local_size({"SLURM_STEP_TASKS_PER_NODE": text, "SLURM_NODEID": node}) == expected
