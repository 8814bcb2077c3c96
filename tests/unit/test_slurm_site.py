"""Site settings of `repro bench --scheduler slurm` (pure): from the inventory's repro_slurm_* variables and the
flags, every value checked before anything is rendered or submitted; combinations that cannot work in a Slurm
job refused with the reason; `--dry-run` prints the job script and the submit command and touches nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from repro.cli import main
from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.launch.schedulers.slurm import Slurm
from repro.launch.schedulers.slurm_site import minutes, site_from

ROOT = Path(__file__).resolve().parents[2]
STACK = str(ROOT / "stacks" / "cpu-tf215.yaml")


def hosts(**vars_) -> tuple[Host, ...]:
    return tuple(Host(name=f"n{i}", address=f"10.0.0.{i}", vars=dict(vars_)) for i in (1, 2))


def test_the_inventory_gives_the_site_and_flags_override_it():
    site = site_from(hosts(repro_slurm_partition="debug", repro_slurm_account="a1", repro_slurm_submit_host="n2",
                           repro_slurm_conf="/etc/slurm/slurm.conf", repro_slurm_extra=["--qos=low"]),
                     {"repro_slurm_partition": "gpu", "repro_slurm_extra": ("--qos=high", "--exclusive")})
    assert (site.partition, site.account, site.submit_host.name, site.conf) == ("gpu", "a1", "n2",
                                                                              "/etc/slurm/slurm.conf")
    assert site.extra == ("--qos=high", "--exclusive") and site.pmi == "pmix" and site.time_limit is None
    assert site_from(hosts(), {}).submit_host.name == "n1"  # no submit host named: the first worker


@pytest.mark.parametrize(("var", "value", "message"), [
    ("repro_slurm_partition", "debug\n#SBATCH --uid=0", "--partition: expected a partition name"),
    ("repro_slurm_partition", "-p x", "--partition: expected"),
    ("repro_slurm_account", "a b", "--account: expected an account name"),
    ("repro_slurm_time", "30 min", "--time-limit: expected a Slurm time limit"),
    ("repro_slurm_mpi", "pmix;id", "--slurm-mpi: expected an srun --mpi plugin"),
    ("repro_slurm_extra", ("--qos=high\n--uid=0",), "--sbatch: expected one sbatch option per line"),
    ("repro_slurm_extra", ("echo hi",), "--sbatch: expected one sbatch option"),
    ("repro_slurm_extra", ("--nodes=8",), "sets --nodes, which repro sets"),
    ("repro_slurm_extra", ("-o /tmp/x",), "sets --output"),
])
def test_a_flag_that_could_add_a_line_or_contradict_repro_is_refused_naming_the_flag(var, value, message):
    with pytest.raises(InputError, match=message):
        site_from(hosts(), {var: value})


@pytest.mark.parametrize(("var", "value", "message"), [
    ("repro_slurm_submit_host", "login9", "is not a host of the inventory's workers"),
    ("repro_slurm_workdir", "out dir", "repro_slurm_workdir: expected a directory path"),
    ("repro_slurm_gpus_per_node", "four", "repro_slurm_gpus_per_node: expected a whole number"),
    ("repro_slurm_time", "1:2:3:4", "repro_slurm_time: expected a Slurm time limit"),
])
def test_a_bad_inventory_variable_is_refused_naming_the_variable(var, value, message):
    with pytest.raises(InputError, match=message):
        site_from(hosts(**{var: value}), {})


@pytest.mark.parametrize(("limit", "ok"), [("30", True), ("5:00", True), ("1:30:00", True), ("2-00", True),
                                            ("1-12:00:00", True), ("UNLIMITED", False), ("1h", False)])
def test_time_limits_take_slurm_s_forms(limit, ok):
    if ok:
        assert site_from(hosts(), {"repro_slurm_time": limit}).time_limit == limit
    else:
        with pytest.raises(InputError):
            site_from(hosts(), {"repro_slurm_time": limit})


def test_the_default_time_limit_is_the_point_timeout_in_whole_minutes_rounded_up():
    assert (minutes(1800), minutes(61), minutes(5)) == ("30", "2", "1")


@pytest.mark.parametrize(("runtime", "launcher", "backends", "message"), [
    ("pyxis", "mpirun", ("mpi",), "runs its ranks with srun inside a Slurm job, not mpirun"),
    ("host", "gloo", ("mpi",), "the gloo launcher cannot start ranks inside a Slurm allocation"),
    ("host", "srun", ("gloo",), "Gloo controller is not supported under --scheduler slurm"),
])
def test_combinations_that_cannot_work_in_a_job_are_refused_before_anything(runtime, launcher, backends, message):
    slurm = Slurm().configure(Inventory("i", hosts()), {}, 600.0)
    with pytest.raises(InputError, match=message):
        slurm.check(runtime, launcher, backends)


def test_srun_without_pmi_is_refused_with_the_reason():
    slurm = Slurm().configure(Inventory("i", hosts()), {"repro_slurm_mpi": "none"}, 600.0)
    with pytest.raises(InputError, match="without PMI"):
        slurm.check("host", "srun")


def inventory_file(tmp_path: Path, **vars_) -> Path:
    data = {"all": {"children": {"workers": {"hosts": {"node1": {"ansible_host": "10.9.0.1"},
                                                        "node2": {"ansible_host": "10.9.0.2"}},
                                              "vars": {"repro_slurm_partition": "debug", **vars_}}}}}
    path = tmp_path / "site.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_dry_run_prints_the_script_and_submit_command_and_touches_nothing(tmp_path, capsys):
    store = tmp_path / "store"
    code = main(["bench", "--stack", STACK, "--hosts", str(inventory_file(tmp_path)), "--scheduler", "slurm",
                 "--runtime", "host", "--workers", "1,2", "--repeats", "1", "--account", "proj",
                 "--sbatch=--qos=high", "--dry-run", "--store", str(store)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.count("#!/bin/bash") == 2
    assert out.count("[node1] sbatch --parsable repro-slurm/repro-dry-run.sbatch") == 2
    assert "    #SBATCH --account=proj" in out and "    #SBATCH --qos=high" in out and "    #SBATCH --nodes=2" in out
    assert "srun --mpi=pmix" in out
    assert not (store / "runs").exists() and not list(tmp_path.glob("**/*.sbatch"))


@pytest.mark.parametrize(("args", "message"), [
    (["--scheduler", "slurm", "--runtime", "pyxis", "--launcher", "mpirun"], "not mpirun"),
    (["--scheduler", "slurm", "--backends", "gloo"], "Gloo controller is not supported"),
    (["--runtime", "charliecloud"], "the charliecloud runtime runs inside a batch job only"),
    (["--launcher", "srun"], "the srun launcher runs inside a batch job only"),
    (["--partition", "debug"], "--partition: site settings of --scheduler slurm; --scheduler direct takes none"),
    (["--scheduler", "kubernetes", "--partition", "debug"], "--partition: site settings of --scheduler slurm"),
    (["--scheduler", "slurm", "--namespace", "ml"], "--namespace: site settings of --scheduler kubernetes"),
    (["--scheduler", "slurm", "--partition", "a\nb"], "--partition: expected a partition name"),
])
def test_the_cli_refuses_what_cannot_work_with_exit_2(tmp_path, capsys, args, message):
    code = main(["bench", "--stack", STACK, "--hosts", str(inventory_file(tmp_path)), "--dry-run",
                 "--store", str(tmp_path / "store"), *args])
    assert code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("line", ["--qos=high --nodes=99", "--qos high --nodes 99", "--qos=high -N 99",
                                  "--comment=a --wrap=b", "--nod=99", "--ntasks-per=4", "--outp=/tmp/x",
                                  "--qos='high' x"])
def test_a_second_option_on_one_sbatch_line_or_an_abbreviated_owned_option_is_refused(line):
    """sbatch splits an #SBATCH line into words: `--qos=high --nodes=99` set --nodes behind repro's check."""
    with pytest.raises(InputError, match="--sbatch"):
        site_from(hosts(), {"repro_slurm_extra": (line,)})
    assert site_from(hosts(), {"repro_slurm_extra": ("--qos high",)}).extra == ("--qos high",)


@pytest.mark.parametrize(("var", "value", "message"), [
    ("repro_slurm_extra", 1.5, "expected sbatch options"),
    ("repro_slurm_extra", {"a": 1}, "expected sbatch options"),
    ("repro_slurm_extra", [2], "expected one sbatch option per line"),
    ("repro_slurm_gpus_per_node", "²", "expected a whole number"),
    ("repro_slurm_gpus_per_node", "٤", "expected a whole number"),
    ("repro_slurm_gpus_per_node", "9" * 5000, "expected a whole number"),
    ("repro_slurm_time", "١٢:٠٠", "expected a Slurm time limit"),
    ("repro_slurm_partition", ["a"], "expected a partition name"),
    ("repro_slurm_submit_host", ["n1"], "expected a host name"),
])
def test_site_variables_of_the_wrong_type_or_with_non_ascii_digits_are_input_errors(var, value, message):
    with pytest.raises(InputError, match=message):
        site_from(hosts(**{var: value}), {})


def test_a_bad_site_variable_is_refused_naming_the_file_and_line_where_it_is_written(tmp_path, capsys):
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  children:\n    workers:\n      vars:\n        repro_slurm_submit_host: local\n"
                   "        repro_slurm_time: '١٢:٠٠'\n      hosts:\n        n1: {ansible_connection: local}\n")
    code = main(["bench", "--stack", STACK, "--hosts", str(inv), "--scheduler", "slurm", "--runtime", "host",
                 "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and f"{inv}:6:" in err and "repro_slurm_time" in err and "internal error" not in err, err
