"""How repro reads Slurm (pure): `scontrol -o` records, `srun --mpi=list`, time limits and exit codes, the one-line
reason a job did not give a result (from the end states the test cluster's Slurm 22.05.8 reports), whether an
MPI can be wired up by srun's PMI plugin, and the nodes a record names."""

from __future__ import annotations

import pytest

from repro.hosts.inventory import Host
from repro.launch.placement import Placement
from repro.launch.schedulers.slurm_client import parse_mpi_list, parse_record
from repro.launch.schedulers.slurm_job import failure, placed, returncode, seconds, srun_reason
from repro.launch.schedulers.slurm_nodes import components, pmi_problem, slurm_mpirun_problem

# what `scontrol show job -o` printed on the test cluster (abridged)
COMPLETED = ("JobId=11 JobName=repro-b969b683 UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901750 "
             "Nice=0 Account=(null) QOS=(null) JobState=COMPLETED Reason=None Dependency=(null) Requeue=0 "
             "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:01:08 TimeLimit=00:30:00 TimeMin=N/A "
             "SubmitTime=2026-11-22T17:29:08 StartTime=2026-11-22T17:29:09 EndTime=2026-11-22T17:30:17 "
             "Partition=debug AllocNode:Sid=localhost:29062 NodeList=h[1-2] BatchHost=h1 NumNodes=2 "
             "Command=/root/repro-slurm/repro-b969b683.sbatch WorkDir=/root Power= ")
H1, H2 = Host(name="h1", address="10.1.0.1"), Host(name="h2", address="10.1.0.2")
TWO = (Placement(H1, 1), Placement(H2, 1))


def job(**fields: str) -> dict[str, str]:
    return {**parse_record(COMPLETED), **fields}


def test_a_scontrol_record_is_read_with_values_that_hold_blanks():
    f = parse_record(COMPLETED + "Comment=two words here")
    assert (f["JobId"], f["JobState"], f["NodeList"], f["ExitCode"]) == ("11", "COMPLETED", "h[1-2]", "0:0")
    assert f["AllocNode:Sid"] == "localhost:29062" and f["Comment"] == "two words here" and f["Power"] == ""


def test_srun_mpi_list_of_slurm_22_05_names_every_plugin():
    text = ("MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\n"
            "specific pmix plugin versions available: pmix_v4\n")
    assert parse_mpi_list(text) == ["pmix", "none", "cray_shasta", "pmi2", "pmix_v4"]
    assert parse_mpi_list("srun: MPI types are...\nsrun: none\nsrun: pmi2\nsrun: openmpi\n") == ["none", "pmi2",
                                                                                              "openmpi"]


@pytest.mark.parametrize(("text", "value"), [("00:01:00", 60), ("30", 1800), ("5:30", 330), ("1:00:00", 3600),
                                             ("1-00:00:00", 86400), ("2-03", 183600), ("UNLIMITED", None),
                                             (None, None)])
def test_slurm_time_limits_in_seconds(text, value):
    assert seconds(text) == value


@pytest.mark.parametrize(("code", "value"), [("0:0", 0), ("3:0", 3), ("0:15", 143), ("0:9", 137), (None, None)])
def test_the_batch_script_exit_status_from_slurm_s_code_and_signal(code, value):
    assert returncode(code) == value


def test_a_completed_job_has_no_failure_of_its_own():
    assert failure(job(), [], "REPRO_RESULT {}", "", TWO, "srun") is None


def test_the_time_limit_gives_a_timed_out_reason():
    why = failure(job(JobState="TIMEOUT", Reason="TimeLimit", TimeLimit="00:01:00", ExitCode="0:15"), [], "",
                  "slurmstepd: error: *** JOB 61 ON h1 CANCELLED AT 2026-11-22T17:46:20 DUE TO TIME LIMIT ***",
                  TWO, "srun")
    assert why == "timed out: the job reached its time limit of 00:01:00 (Slurm TIMEOUT)"


def test_a_node_that_died_is_named():
    why = failure(job(JobState="NODE_FAIL", Reason="NodeDown", ExitCode="0:15"), ["h2"], "",
                  "srun: error: Node failure on h2", TWO, "srun")
    assert why == "node h2 failed under the job (Slurm NODE_FAIL, NodeDown)"


def test_a_failed_job_says_which_rank_failed_where():
    stderr = "srun: error: h2: task 1: Exited with exit code 2\nsrun: launch/slurm: _step_signal: Terminating"
    why = failure(job(JobState="FAILED", Reason="NonZeroExitCode", ExitCode="2:0"), [], "", stderr, TWO, "srun")
    assert why == "rank 1 on h2 exited with status 2"
    workload = "repro-workload error: unknown model 'resnet9000'\nsrun: error: h1: task 0: Exited with exit code 2"
    assert failure(job(JobState="FAILED", ExitCode="2:0"), [], "", workload, TWO, "srun") == \
        "the workload failed: unknown model 'resnet9000'"


def test_open_mpi_without_the_pmi_of_srun_is_explained():
    text = "[h1:1234] OMPI was not built with SLURM's PMI support and therefore cannot execute."
    assert "use --slurm-mpi pmix" in srun_reason(text)


def test_other_end_states_are_said_plainly():
    assert "cancelled outside repro" in failure(job(JobState="CANCELLED"), [], "", "", TWO, "srun")
    assert failure(job(JobState="OUT_OF_MEMORY"), [], "", "", TWO, "srun") == \
        "the job ran out of memory (Slurm OUT_OF_MEMORY)"
    assert failure(None, [], "", "", TWO, "srun").startswith("Slurm no longer knows the job")


OMPI_INFO = "mca:pmix:ext3x:version:mca:2.1.0\nmca:pmix:flux:version:mca:2.1.0\nmca:pmix:isolated:version:mca:2.1.0\n" \
            "mca:plm:rsh:version:mca:2.1.0\nmca:plm:slurm:version:mca:2.1.0\nompi:version:full:4.1.4\n"


def test_debian_s_open_mpi_has_pmix_only_so_pmi2_is_refused_with_the_reason():
    found = components(OMPI_INFO, "pmix")
    assert found == {"ext3x", "flux", "isolated"}
    plugins = ["pmix", "none", "cray_shasta", "pmi2", "pmix_v4"]
    assert pmi_problem("pmix", plugins, found) is None and pmi_problem("pmix_v4", plugins, found) is None
    assert "built without PMI-2" in pmi_problem("pmi2", plugins, found)
    assert "has no --mpi=pmi1 plugin" in pmi_problem("pmi1", plugins, found)
    assert pmi_problem("pmi2", plugins, found | {"s2"}) is None
    assert pmi_problem("pmi2", plugins, None) is None  # not Open MPI: nothing refused on a guess
    assert "no PMIx client" in pmi_problem("pmix", plugins, {"s1", "s2", "isolated"})


def test_mpirun_inside_an_allocation_needs_open_mpi_with_slurm_support():
    assert slurm_mpirun_problem(components(OMPI_INFO, "plm")) is None
    assert "no slurm" in slurm_mpirun_problem({"rsh", "isolated"})
    assert slurm_mpirun_problem(components("mpiexec: command not found", "plm")) is None


def test_records_name_the_nodes_slurm_allocated_filled_as_requested():
    hosts = {"h1": H1, "h2": H2}
    got = placed((Placement(H1, 2), Placement(H2, 1)), ["h2", "h3"], hosts)
    assert [(p.host.name, p.host.address, p.ranks) for p in got] == [("h2", "10.1.0.2", 2), ("h3", "h3", 1)]
    assert placed(TWO, ["h1"], hosts) == TWO  # a record Slurm lost the nodes of keeps the request
