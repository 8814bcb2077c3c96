"""Launch planning, sweep expansion and record collection: pure logic, no hosts touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.launch import collect
from repro.launch.launchers import LAUNCHERS, SshOptions, for_backend
from repro.launch.placement import host_list, place
from repro.launch.plan import FORWARDED_HOST, PlanContext, env_input
from repro.launch.points import SweepSpec, expand, point_key, sweep_id
from repro.launch.runtimes import Outcome, RuntimeReport, plan_point
from repro.manifest import load_stack
from repro.manifest.software import from_host_probe, mismatches
from repro.results.record import StackRef, SweepRef
from repro.secrets import marker, redact_argv, redact_env

ROOT = Path(__file__).resolve().parents[2]
CPU = load_stack(ROOT / "stacks" / "cpu-tf215.yaml")
GPU = load_stack(ROOT / "stacks" / "tf114-cuda10.yaml")


def plan_of(point, inventory, runtime, **ctx):
    """The plan of `point` on `inventory` (placed), with the launcher its controller needs."""
    context = PlanContext(launcher=for_backend(point.backend), **{"framework": "tensorflow", **ctx})
    return plan_point(point, place(inventory, point.workers), runtime, context)


def cluster(slots: int = 1, hosts: int = 2) -> Inventory:
    return Inventory("inv", tuple(
        Host(name=f"h{i}", address=f"10.9.0.{i}", slots=slots, docker_host=f"unix:///s/h{i}.sock")
        for i in range(1, hosts + 1)))


def test_placement_fills_hosts_in_order_up_to_their_slots():
    inv = cluster(slots=4)
    assert [(p.host.name, p.ranks) for p in place(inv, 6)] == [("h1", 4), ("h2", 2)]
    assert host_list(place(inv, 8)) == "10.9.0.1:4,10.9.0.2:4"  # seed 003: -H 192.168.11.1:4,192.168.11.2:4


def test_too_many_workers_is_an_input_error():
    with pytest.raises(InputError, match="do not fit"):
        place(cluster(), 3)


def test_weak_scaling_keeps_the_per_worker_batch():
    points = expand(SweepSpec(workers=(1, 2, 4), batch_sizes=(32,), scaling="weak"), CPU.stack)
    assert [(p.workers, p.batch_per_worker, p.global_batch) for p in points] == [(1, 32, 32), (2, 32, 64), (4, 32, 128)]


def test_strong_scaling_divides_the_global_batch():
    points = expand(SweepSpec(workers=(1, 2, 4, 8), batch_sizes=(64,), scaling="strong"), CPU.stack)
    assert [(p.workers, p.batch_per_worker, p.global_batch) for p in points] == [
        (1, 64, 64), (2, 32, 64), (4, 16, 64), (8, 8, 64)]  # seed 002: BS per processor 16, 8, 4...
    with pytest.raises(InputError, match="divide evenly"):
        expand(SweepSpec(workers=(3,), batch_sizes=(64,), scaling="strong"), CPU.stack)


def test_stack_defaults_fill_what_the_sweep_leaves_open():
    (p,) = expand(SweepSpec(workers=(2,)), CPU.stack)
    b = CPU.stack.benchmark
    assert (p.model, p.batch_per_worker, p.warmup_steps, p.steps, p.xla) == (b.model, b.batch_size, b.warmup_steps,
                                                                             b.steps, b.xla)


def test_point_keys_and_sweep_ids_are_stable_and_distinct():
    a = expand(SweepSpec(workers=(1, 2)), CPU.stack)
    b = expand(SweepSpec(workers=(1, 2)), CPU.stack)
    assert [point_key(p) for p in a] == [point_key(p) for p in b]
    assert point_key(a[0]) != point_key(a[1])
    assert sweep_id("h", "inv", a, 1) == sweep_id("h", "inv", b, 1) != sweep_id("h", "inv", a, 2)


def test_mpirun_line_keeps_host_key_checking_on_and_forwards_env():
    ssh = SshOptions(50000, "/root/.ssh/k", "/root/.ssh/kh")
    argv = LAUNCHERS.get("mpirun").argv(place(cluster(), 2), ["python3", "-m", "x"], ["NCCL_DEBUG"], interface="ib0",
                                        ssh=ssh, forwarded=FORWARDED_HOST)
    joined = " ".join(argv)
    assert argv[:2] == ["mpirun", "--allow-run-as-root"] and argv[-3:] == ["python3", "-m", "x"]
    assert "-H 10.9.0.1:1,10.9.0.2:1" in joined
    rsh = argv[argv.index("plm_rsh_args") + 1]
    assert "-p 50000" in rsh and "StrictHostKeyChecking=yes" in rsh and "UserKnownHostsFile=/root/.ssh/kh" in rsh
    assert "StrictHostKeyChecking=no" not in joined
    assert "btl_tcp_if_include ib0" in joined
    assert argv[argv.index("NCCL_DEBUG") - 1: argv.index("NCCL_DEBUG") + 1] == ["-x", "NCCL_DEBUG"]


def test_gloo_backend_wraps_mpirun_with_the_rendezvous_launcher():
    (p,) = expand(SweepSpec(workers=(2,), backends=("gloo",)), CPU.stack)
    plan = plan_of(p, cluster(), "docker", stack_env={}, gpu=False, run_id="r1", image="img:1")
    argv = plan.launch_argv
    assert argv[:3] == ["python3", "-m", "repro.workloads.gloo"]
    assert argv[argv.index("--hosts") + 1] == "10.9.0.1:1,10.9.0.2:1"
    assert argv[argv.index("--") + 1] == "mpirun"
    assert "--ulimit" not in plan.containers[0].run_argv  # memlock only where RDMA needs it


def test_docker_plan_starts_one_labelled_container_per_host_without_privileges():
    (p,) = expand(SweepSpec(workers=(2,)), GPU.stack)
    inv = Inventory("inv", tuple(Host(name=f"n{i}", address=f"10.0.0.{i}", slots=1, gpus=4,
                                      docker_host="unix:///var/run/docker.sock", dataset_dir="/imagenet")
                                 for i in (1, 2)))
    plan = plan_of(p, inv, "docker", stack_env=dict(GPU.stack.env), gpu=True, run_id="r9",
                   image="repro/stack:abc", ssh_port=50000, infiniband=True)
    (c1, c2) = plan.containers
    run = c1.run_argv
    assert "--privileged" not in run
    for flag in (["--network", "host"], ["--cap-add", "IPC_LOCK"], ["--gpus", "all"], ["--device", "/dev/infiniband"],
                 ["--volume", "/imagenet:/data:ro"], ["--label", "repro.run=r9"], ["--ulimit", "memlock=-1"]):
        assert any(run[i:i + 2] == flag for i in range(len(run))), flag
    assert run[-5:] == ["/usr/sbin/sshd", "-D", "-e", "-p", "50000"]
    assert c2.remove_argv[-3:] == ["rm", "--force", "repro-r9-n2"]
    assert plan.env["NCCL_NET_GDR_LEVEL"] == "3" and plan.env["NCCL_SOCKET_IFNAME"] == "eth0"
    text = "\n".join(plan.describe())
    assert text.count("docker -H") == 5  # 2 runs, 1 exec, 2 removals


def test_host_runtime_refuses_mismatched_software():
    found = {"python": "3.11.2", "tensorflow": "2.14.0", "horovod": "0.28.1",
             "horovod_built": {"mpi": True, "gloo": False}, "mpi": "mpirun (Open MPI) 4.1.4"}
    problems = mismatches(CPU.stack, from_host_probe(found), where="host", backend="gloo")
    assert "tensorflow: pinned 2.15.1, found 2.14.0" in problems
    assert "horovod gloo controller: needed by --backends gloo, found Gloo not built in" in problems
    ok = {**found, "tensorflow": "2.15.1", "horovod_built": {"mpi": True, "gloo": True}}
    assert mismatches(CPU.stack, from_host_probe(ok), where="host", backend="gloo") == []


def _result(addresses_by_rank):
    return {"format": "repro.workload/1", "workload": "cnn", "settings": {},
            "world": {"size": len(addresses_by_rank), "controller": "mpi"},
            "software": {"tensorflow": "2.15.1"},
            "ranks": [{"rank": i, "local_rank": 0, "hostname": "same", "addresses": a, "device": "CPU",
                       "warmup_times": [1.0], "step_times": [0.5, 0.5], "items_per_step": 32}
                      for i, a in enumerate(addresses_by_rank)],
            "metrics": {}}


def test_collect_maps_ranks_to_hosts_by_address_not_hostname():
    (p,) = expand(SweepSpec(workers=(2,)), CPU.stack)
    plan = plan_of(p, cluster(), "docker", stack_env={"API_TOKEN": "s3cret"}, gpu=False, run_id="r", image="img")
    ctx = collect.Context(StackRef(name="cpu", hash="abc"), RuntimeReport(), SweepRef(id="sw", point=point_key(p)),
                          "docker")
    out = "noise\nREPRO_RESULT " + json.dumps(_result([["10.9.0.1"], ["10.9.0.2", "172.17.0.1"]])) + "\n"
    rec = collect.record(p, plan, ctx, Outcome(out, "", 0, 3.2))
    assert rec.status == "ok"
    assert [r.host for r in rec.ranks] == ["h1", "h2"]
    assert rec.settings.hosts == 2 and rec.settings.workers == 2
    assert rec.env["API_TOKEN"] == marker("s3cret")


@pytest.mark.parametrize("addresses", [[["10.9.0.1"]], [["10.9.0.1"], ["10.9.0.2"], ["10.9.0.2"]]],
                         ids=["fewer", "more"])
def test_collect_refuses_a_result_whose_rank_count_is_not_the_points_workers(addresses):
    """Each rank alone in a world of one (Gloo under a plain mpirun), or more processes than asked: failed, not ok."""
    (p,) = expand(SweepSpec(workers=(2,)), CPU.stack)
    plan = plan_of(p, cluster(), "docker", stack_env={}, gpu=False, run_id="r", image="img")
    ctx = collect.Context(StackRef(name="cpu", hash="abc"), RuntimeReport(), SweepRef(id="sw", point=point_key(p)),
                          "docker")
    out = "REPRO_RESULT " + json.dumps(_result(addresses)) + "\n"
    rec = collect.record(p, plan, ctx, Outcome(out, "", 0, 3.2))
    assert rec.status == "failed", rec
    assert rec.failure == (f"the workload reported {len(addresses)} rank(s) in a world of {len(addresses)}, but the "
                           "point has 2 worker(s): the launcher did not start the job the point describes")


def test_collect_without_a_result_is_a_failed_record_with_the_reason():
    (p,) = expand(SweepSpec(workers=(1,)), CPU.stack)
    plan = plan_of(p, cluster(), "host", stack_env={}, gpu=False, run_id="r")
    ctx = collect.Context(StackRef(name="cpu", hash="abc"), RuntimeReport(), SweepRef(id="sw", point=point_key(p)),
                          "host")
    rec = collect.record(p, plan, ctx, Outcome("Traceback...", "boom", 1, 1.0))
    assert rec.status == "failed" and "exit 1" in rec.failure and "boom" in rec.log_tail


def test_redaction_of_secrets_in_env_and_argv():
    env = redact_env({"HF_TOKEN": "abc", "NCCL_DEBUG": "INFO", "PIP_INDEX_URL": "https://u:pw@pypi.local/simple",
                      "SSH_KEY_FILE": "/k"})
    assert env == {"HF_TOKEN": marker("abc"), "NCCL_DEBUG": "INFO",
                   "PIP_INDEX_URL": f"https://{marker('u:pw')}@pypi.local/simple", "SSH_KEY_FILE": "/k"}
    assert redact_argv(["-x", "DB_PASSWORD=hunter2", "--url=http://a:b@c"]) == [
        "-x", f"DB_PASSWORD={marker('hunter2')}", f"--url=http://{marker('a:b')}@c"]


def test_ssh_options_reach_ssh_intact_through_open_mpi():
    from repro.launch.launchers.mpirun import rsh_args

    # ssh's own defaults (~/.ssh/config written by `repro prepare --tags ssh_trust`): no -i, no quotes
    assert rsh_args(SshOptions(22)) == ("-p 22 -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=10")
    # a ~ path reaches ssh as written (Open MPI keeps quotes literally; ssh expands ~ itself)
    text = rsh_args(SshOptions(22, "~/.ssh/id_ed25519", "~/.ssh/known_hosts"))
    assert "-i ~/.ssh/id_ed25519" in text and "UserKnownHostsFile=~/.ssh/known_hosts" in text and "'" not in text
    for bad in ("/keys/my key", "/k -oProxyCommand=nc", "-oProxyCommand=x", "/k'", "/k;rm", "$(id)"):
        with pytest.raises(InputError, match="cannot be passed to ssh through mpirun intact"):
            rsh_args(SshOptions(22, bad))


def test_the_host_runtime_across_hosts_uses_ssh_defaults_unless_the_inventory_names_a_key():
    (p,) = expand(SweepSpec(workers=(2,)), CPU.stack)
    plan = plan_of(p, cluster(), "host", stack_env={}, gpu=False, run_id="r")
    rsh = plan.launch_argv[plan.launch_argv.index("plm_rsh_args") + 1]
    assert "-i " not in rsh and "UserKnownHostsFile" not in rsh and "StrictHostKeyChecking=yes" in rsh
    assert plan.exec_argv[0] == "env" and plan.exec_argv[-len(plan.launch_argv):] == plan.launch_argv


def test_tf_cnn_benchmarks_output_becomes_an_ok_record_through_the_import_parser():
    log = ROOT / "tests" / "data" / "logs" / "generated" / "tf_cnn_benchmarks_tf2.15_horovod_2ranks_tagged_cpu.log"
    (p,) = expand(SweepSpec(workload="tf_cnn_benchmarks", workers=(2,), models=("resnet20",), batch_sizes=(16,),
                            data_format="NHWC", steps=30, warmup_steps=3), CPU.stack)
    plan = plan_of(p, cluster(), "host", stack_env={}, gpu=False, run_id="r")
    assert "--model=resnet20" in plan.launch_argv and "--num_batches=30" in plan.launch_argv
    ctx = collect.Context(StackRef(name="cpu", hash="abc"), RuntimeReport(), SweepRef(id="sw", point=point_key(p)),
                          "host")
    rec = collect.record(p, plan, ctx, Outcome(log.read_text(), "", 0, 60.0))
    assert rec.status == "ok", rec.failure
    assert rec.reported_images_per_sec == 33.11  # rank 0's `total images/sec`, the program's own figure
    assert [r.host for r in rec.ranks] == ["h1", "h2"] and all(r.items_per_step == 16 for r in rec.ranks)
    # a point that asked for something else than what ran is refused, not mislabelled
    other = p.model_copy(update={"batch_per_worker": 32})
    assert collect.record(other, plan, ctx, Outcome(log.read_text(), "", 0, 60.0)).status == "failed"


def test_secret_variables_reach_the_command_through_stdin_never_its_arguments():
    """env_command/env_input run for real (a local Remote under repro's supervisor): a secret by name and one by
    shape arrive in the command's environment, quotes, blanks and newlines intact; no argument holds them."""
    from repro.hosts.remote import Remote
    from repro.launch.plan import env_command, env_input

    env = {"DB_PASSWORD": "p'w \"x\"\nline2", "NOTIFY_URL": "https://bot:UrlPw@hooks.example.org/n", "PLAIN": "1"}
    argv = env_command(env, ["sh", "-c", 'printf "%s|%s|%s" "$DB_PASSWORD" "$NOTIFY_URL" "$PLAIN"'])
    assert not any("p'w" in a or "UrlPw" in a for a in argv) and "PLAIN=1" in argv
    with Remote(Host(name="here", address="127.0.0.1", local=True)) as remote:
        proc = remote.start(argv, input=env_input(env))
        assert proc.wait(30) == 0
    assert proc.output()[0] == "|".join(env.values())
    assert env_command({"PLAIN": "1"}, ["true"]) == ["env", "PLAIN=1", "true"] and env_input({"PLAIN": "1"}) is None


def test_docker_exec_takes_secret_values_on_its_stdin_and_names_them_in_the_dry_run():
    (p,) = expand(SweepSpec(workers=(2,)), CPU.stack)
    env = {**CPU.stack.env, "DB_PASSWORD": "DbPw-41c9", "NOTIFY_URL": "https://bot:UrlPw-77e2@hooks.example.org/n"}
    plan = plan_of(p, cluster(), "docker", stack_env=env, run_id="r1", image="repro/stack:abc", ssh_port=50000)
    argv = plan.exec_argv
    assert not any("DbPw-41c9" in a or "UrlPw-77e2" in a for a in argv)
    assert argv[argv.index("exec") + 1] == "-i" and "--env" in argv and "repro-env" in argv
    assert env_input(plan.env) == b"DB_PASSWORD=DbPw-41c9\0NOTIFY_URL=https://bot:UrlPw-77e2@hooks.example.org/n\0"
    assert "# on the standard input of the command below: DB_PASSWORD, NOTIFY_URL" in "\n".join(plan.describe())
