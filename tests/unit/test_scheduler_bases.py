"""Schedulers, launchers and runtimes declare every member the pipeline calls: a misspelt method is refused when
the class is made, and a plug-in that is not one is refused when it is registered (issue 30, item 1)."""

from __future__ import annotations

import pytest

from repro.launch.launchers import LAUNCHERS, Launcher
from repro.launch.runtimes import RUNTIMES, Runtime
from repro.launch.schedulers import SCHEDULERS, Scheduler


def test_a_misspelt_scheduler_method_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match=r"chekc looks like a misspelling of Scheduler.check"):
        class Typo(Scheduler):
            name = "typo"

            def chekc(self, runtime, launcher, backends=()):
                pass

            def execute(self, plan, runtime, timeout, progress=None):
                pass


def test_a_misspelt_launcher_method_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match=r"batch_arg looks like a misspelling of Launcher.batch_argv"):
        class Typo(Launcher):
            name = "typo"

            def argv(self, placement, command, env_names, *, interface, ssh, forwarded):
                return command

            def batch_arg(self, allocation, command, env_names, *, interface):
                return command


def test_a_batch_scheduler_without_prepare_and_an_in_batch_launcher_without_batch_argv_are_refused():
    with pytest.raises(TypeError, match="batch scheduler but has no prepare"):
        class Batch(Scheduler):
            name = "b"
            batch = True

            def check(self, runtime, launcher, backends=()):
                pass

            def execute(self, plan, runtime, timeout, progress=None):
                pass
    with pytest.raises(TypeError, match="in_batch but has no batch_argv"):
        class Half(Launcher):
            name = "half"
            in_batch = True

            def argv(self, placement, command, env_names, *, interface, ssh, forwarded):
                return command


def test_registries_refuse_plug_ins_that_do_not_declare_the_members():
    class Loose:
        name = "loose"

        def execute(self, plan, runtime, timeout, progress=None):
            pass

    for registry in (SCHEDULERS, LAUNCHERS):
        with pytest.raises(TypeError, match="must be an instance"):
            registry.add("loose", Loose())
        assert "loose" not in registry
    with pytest.raises(TypeError, match=r"must be a subclass of repro.launch.runtimes.Runtime"):
        RUNTIMES.add("loose", Loose)
    assert "loose" not in RUNTIMES


def test_a_runtime_needs_a_form_to_run_in_and_spells_its_members_right():
    class Nothing(Runtime):
        name = "nothing"

    with pytest.raises(TypeError, match=r"no plan\(\) and run\(\)"):
        RUNTIMES.add("nothing", Nothing)

    class BatchWithoutJob(Runtime):
        name = "batchless"
        batch_only = True

    with pytest.raises(TypeError, match=r"batch-only but has no job\(\)"):
        RUNTIMES.add("batchless", BatchWithoutJob)
    assert "nothing" not in RUNTIMES and "batchless" not in RUNTIMES
    with pytest.raises(TypeError, match=r"misspelling of Runtime\.cleanup_stale"):
        class Misspelt(Runtime):
            name = "misspelt"

            def cleanup_stal(self, hosts):
                return []


def test_kubernetes_asks_the_runtime_s_capability_not_its_name():
    from repro.errors import InputError
    from repro.launch.schedulers.kubernetes import Kubernetes

    assert [n for n in RUNTIMES if RUNTIMES.get(n).image_based] == ["docker"]
    with pytest.raises(InputError, match="the host runtime does not run under --scheduler kubernetes"):
        Kubernetes.check(Kubernetes.__new__(Kubernetes), "host", "mpirun")
    Kubernetes.check(Kubernetes.__new__(Kubernetes), "docker", "mpirun")


def test_the_built_ins_keep_their_capabilities():
    assert [n for n in LAUNCHERS if LAUNCHERS.get(n).in_batch] == ["mpirun", "srun", "torchrun"]
    assert LAUNCHERS.get("srun").batch_only and LAUNCHERS.get("srun").batch_note("pmix") == "srun --mpi=pmix"
    assert "srun --mpi=none" in LAUNCHERS.get("srun").mpi_problem("none", [], None)
    assert LAUNCHERS.get("mpirun").mpi_problem("pmix", [], {"rsh"}) is not None
    assert [n for n in SCHEDULERS if SCHEDULERS.get(n).batch] == ["slurm", "kubernetes"]
    assert SCHEDULERS.get("slurm").launcher == "srun" and SCHEDULERS.get("direct").launcher is None


def test_the_options_the_cli_offers_are_the_schedulers_own():
    from repro.launch.schedulers import options_of

    for name in SCHEDULERS:
        assert options_of(name) is SCHEDULERS.get(name).options
    assert [o.flag for o in options_of("slurm")] == ["--partition", "--account", "--time-limit", "--sbatch",
                                                     "--slurm-mpi"]
    assert options_of("direct") == ()
