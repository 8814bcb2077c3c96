"""The `slurm` scheduler: every point of a sweep (every repeat of it) is one Slurm job.

A point per job, not the sweep per job, because repro's failure semantics are per point: a point that fails,
times out or loses a node is stored as failed with its reason and the sweep goes on; `--resume` reruns exactly
the missing points; each point gets the node count it needs (a 1-worker point does not hold 8 nodes while it
runs) and its own time limit, and its record names its own job, nodes and end state. The price is one queue
wait per point, which a site's backfill scheduler keeps short for small jobs.

    configure (site settings: inventory + flags) -> check (runtime x launcher, before anything) ->
    plan (pure: the runtime's JobStep + the launcher's batch_argv -> the sbatch script) ->
    prepare (through srun on the nodes: the runtime's checks, the MPI's PMI, host facts into the store) ->
    execute (sbatch, follow with scontrol/squeue, read the output; Ctrl-C: scancel)
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from repro.errors import InputError, LaunchError
from repro.hosts.inventory import Host, Inventory
from repro.hosts.remote import preflight
from repro.launch.launchers import LAUNCHERS, allocation
from repro.launch.placement import Placement
from repro.launch.plan import PlanContext
from repro.launch.runtimes import RUNTIMES, Outcome, Runtime, RuntimeReport
from repro.launch.schedulers import SCHEDULERS, Scheduler
from repro.launch.schedulers import sbatch as render
from repro.launch.schedulers.slurm_client import SlurmClient
from repro.launch.schedulers.slurm_job import run_job
from repro.launch.schedulers.slurm_nodes import SrunNode, components, gather_facts, via
from repro.launch.schedulers.slurm_options import OPTIONS
from repro.launch.schedulers.slurm_site import SlurmSite, minutes, site_from
from repro.results.provenance import HostFacts
from repro.results.record import Settings
from repro.secrets import is_secret


@SCHEDULERS.register("slurm", instance=True)
class Slurm(Scheduler):
    """Points as Slurm batch jobs (see the module docstring)."""

    name = "slurm"
    launcher = "srun"  # the default launcher under Slurm: what sites use
    batch = True
    options = OPTIONS

    def __init__(self, site: SlurmSite | None = None, nodes: tuple[Host, ...] = (), timeout: float = 1800.0) -> None:
        self.site = site
        self.nodes = nodes
        self.timeout = timeout
        self.version: str | None = None
        self.plugins: list[str] = []

    def configure(self, inventory: Inventory, flags: Mapping[str, Any], timeout: float) -> Slurm:
        """This scheduler for one sweep: the site's settings from the inventory and the flags, checked."""
        return Slurm(site_from(inventory.hosts, flags, inventory.path), inventory.hosts, timeout)

    def check(self, runtime: str, launcher: str, backends: tuple[str, ...] = ("mpi",)) -> None:
        """Refuse, before anything, a runtime, launcher or Horovod controller that cannot run inside a Slurm job."""
        if "gloo" in backends:
            raise InputError("Horovod's Gloo controller is not supported under --scheduler slurm: its rendezvous "
                             "needs a host list fixed before the job starts, and Slurm chooses the nodes",
                             hint="use --backends mpi (srun --mpi=pmix or mpirun wire the ranks up)")
        cls = RUNTIMES.get(runtime)
        starter = LAUNCHERS.get(launcher)
        if not starter.in_batch:
            raise InputError(f"the {launcher} launcher cannot start ranks inside a Slurm allocation",
                             hint="use --launcher srun or mpirun")
        allowed = cls.batch_launchers
        if allowed is not None and launcher not in allowed:
            raise InputError(f"the {runtime} runtime runs its ranks with {' or '.join(allowed)} inside a Slurm job, "
                             f"not {launcher}", hint=f"use --launcher {allowed[0]}")
        if self.site is not None:
            problem = starter.mpi_problem(self.site.pmi, [], None)
            if problem:
                raise InputError(problem, hint="use --slurm-mpi pmix")

    def plan(self, point: Settings, placement: tuple[Placement, ...], runtime: str,
             ctx: PlanContext) -> render.BatchPlan:
        """The point's job (pure): the script, where it goes and how it is submitted."""
        if self.site is None:
            raise LaunchError("the slurm scheduler was not configured with the site's settings")
        job_name = f"repro-{ctx.run_id}"
        # NCCL's files in the job's shared directory, beside its output, kept as it is; a container binds it at its
        # own path, which must then be absolute (relative: to the submit directory, the ranks' working directory
        # on the nodes but not in a container)
        workdir, contained = self.site.workdir, RUNTIMES.get(runtime).needs_image
        unbound = bool(ctx.nccl_dir) and contained and not posixpath.isabs(workdir)
        ctx = replace(ctx, nccl_dir=None if unbound or not ctx.nccl_dir else f"{workdir}/{job_name}.nccl")
        step = RUNTIMES.get(runtime).job(point, placement, ctx, self.nodes)
        if unbound:
            step = replace(step, notes=(*step.notes, "NCCL's INFO lines are not kept: a container binds only an "
                                        f"absolute repro_slurm_workdir, not {workdir}"))
        nccl_dir = ctx.nccl_dir if "NCCL_DEBUG_FILE" in step.env else None  # a runtime that cannot bind it: none
        if nccl_dir:
            step = replace(step, setup=(f"mkdir -p {shlex.quote(nccl_dir)}  # NCCL makes no directory",
                                        *step.setup))
        shape = allocation(placement, self.site.pmi)
        first = placement[0].host
        batch = LAUNCHERS.get(ctx.launcher).batch_argv(shape, step.command, list(step.env), interface=first.interface)
        launch = render.launch_argv(batch, step)
        script = render.render(point, step, launch, runtime=runtime, launcher=ctx.launcher, site=self.site,
                               allocation=shape, job_name=job_name,
                               time_limit=self.site.time_limit or minutes(self.timeout))
        path = f"{self.site.workdir}/{job_name}.sbatch"
        client = SlurmClient(self.site)
        secrets = {k: v for k, v in step.env.items() if is_secret(k, str(v))}
        submit = client.argv(["sbatch", "--parsable", path], secrets)
        return render.BatchPlan(point, placement, runtime, ctx.launcher, step.env, launch, submit, script=script,
                                script_path=path, submit_argv=submit, submit_env=secrets, job_name=job_name,
                                site=self.site, allocation=shape, nccl_dir=nccl_dir)

    def prepare(self, runtime: Runtime, hosts: list[Host], *, backend: str, keep_facts: Callable[[str, HostFacts], Any],
                launcher: str, progress: Callable[[str], None]) -> RuntimeReport:
        """Before the first job: the submit host answers, Slurm's version and MPI plugins, the runtime's checks and
        the MPI's wire-up through srun on the nodes, and every node's facts into the store (as `repro prepare`)."""
        site = self.site
        assert site is not None
        if site.submit_host is not None:
            problems = preflight([site.submit_host])
            if problems:
                raise LaunchError(f"cannot reach the Slurm submit host {site.submit_host.name}: "
                                  f"{problems[site.submit_host.name]}")
        with SlurmClient(site) as client:
            self.version = client.version()
            if self.version is None:
                raise LaunchError(f"Slurm does not answer on {client.host.name} (sinfo --version failed)",
                                  hint="check repro_slurm_submit_host and repro_slurm_conf")
            self.plugins = client.mpi_plugins()
            if site.partition:
                client.must(["scontrol", "show", "partition", site.partition.split(",")[0]],
                            what=f"partition {site.partition}")
        progress(f"checking the {runtime.name} runtime for {', '.join(h.name for h in hosts)} (through srun)")
        report = runtime.prepare(hosts, backend, via=via(site), progress=progress)
        self._check_mpi(runtime, hosts[0], launcher)
        facts, missing = gather_facts(site, hosts)
        for name, found in facts.items():
            keep_facts(name, found)
        if missing:
            progress("no host facts from " + "; ".join(f"{k}: {v}" for k, v in missing.items()))
        note = LAUNCHERS.get(launcher).batch_note(site.pmi)
        progress(f"Slurm {self.version} on {site.submit_name}, launcher {launcher}" + (f" ({note})" if note else "")
                 + f"; host facts of {', '.join(facts) or 'no node'} gathered through srun")
        return report

    def _check_mpi(self, runtime: Runtime, host: Host, launcher: str) -> None:
        """Refuse, before submitting, a launcher that cannot wire this MPI up (probed on a node with ompi_info)."""
        site = self.site
        assert site is not None
        starter = LAUNCHERS.get(launcher)
        need = starter.mpi_need
        if need is None:
            return
        argv: list[str] | None = ["ompi_info", "--parsable"]
        if need.in_runtime:
            argv = runtime.node_command(argv, host)
        found = None
        if argv is not None:
            with SrunNode(site, host) as node:
                res = node.run(argv)
            found = components(res.stdout, need.framework) if res.ok else None
        problem = starter.mpi_problem(site.pmi, self.plugins, found)
        if problem:
            raise LaunchError(f"refusing to submit: {problem}")

    def execute(self, plan: Any, runtime: Runtime, timeout: float,
                progress: Callable[[str], None] | None = None) -> Outcome:
        if not isinstance(plan, render.BatchPlan):
            raise LaunchError("the slurm scheduler runs plans it made itself (Slurm.plan)")
        return run_job(plan, {h.name: h for h in self.nodes}, self.version, self.plugins, progress)

