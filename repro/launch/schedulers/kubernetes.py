"""The `kubernetes` scheduler: every point of a sweep (every repeat of it) is one Trainer v2 TrainJob (or, by the
site's choice, one MPI Operator MPIJob), created and followed with `kubectl`.

A point per job for the reasons Slurm has one (repro/launch/schedulers/slurm.py): per-point failures, `--resume`,
node counts and time limits. The inventory's hosts stand for the cluster's nodes as under Slurm: the placement
gives the pod count (numNodes) and the processes per pod (numProcPerNode); Kubernetes chooses the nodes, and the
record names the ones it chose.

    configure (site settings: inventory repro_k8s_* + flags) -> check (docker runtime, mpirun/torchrun) ->
    plan (pure: kube_render's objects, refused by kube_check before anything is submitted) ->
    execute (kube_run: kubectl apply, follow the job and its pods, collect every pod's log, delete)

The objects are checked offline (kube_check: Trainer's API types, the pod templates against the Kubernetes
schema, the CRDs' create-time CEL rules, and the site's own CRD files with --crds). What only a real cluster shows
is in docs/kubernetes.md.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from repro.errors import InputError, LaunchError
from repro.hosts.inventory import Host, Inventory
from repro.launch.launchers import LAUNCHERS, Allocation
from repro.launch.placement import Placement
from repro.launch.plan import CONTAINER_DATA, LaunchPlan, PlanContext, run_env
from repro.launch.runtimes import RUNTIMES, Outcome, Runtime
from repro.launch.schedulers import SCHEDULERS, Scheduler, kube_check, kube_render
from repro.launch.schedulers.kube_options import OPTIONS
from repro.launch.schedulers.kube_render import KubeJob
from repro.launch.schedulers.kube_site import KubeSite, kubectl, site_from
from repro.launch.workloads import program
from repro.manifest.frameworks import FRAMEWORKS
from repro.results.record import Settings
from repro.secrets import is_secret, redact_argv, redact_text
from repro.workloads.torchrun import script_words

POD_INTERFACE = "eth0"  # a pod's network interface (the CNI's veth inside the pod)
POD_NCCL_DIR = "/tmp"  # every pod has it: NCCL makes no directory
RESOURCES = {"trainjob": "trainjobs.trainer.kubeflow.org", "mpijob": "mpijobs.kubeflow.org"}


def policy_of(point: Settings, framework: str | None) -> str:
    """The training policy of a point on a stack of `framework`: its workload's framework's (torch for PyTorch, MPI
    for TF+Horovod and framework-free workloads)."""
    name = program(point.workload, framework).spec.framework
    return FRAMEWORKS.get(name).kube_policy if name else "mpi"


@dataclass(frozen=True)
class KubePlan(LaunchPlan):
    """A point as Kubernetes objects: what is applied, and how it is deleted."""

    objects: tuple[dict[str, Any], ...] = ()
    manifest: str = ""
    job_name: str = ""
    resource: str = ""  # the job's resource (trainjobs.trainer.kubeflow.org, mpijobs.kubeflow.org)
    run_label: str = ""  # RUN_LABEL=run id: selects the job's pods
    delete_argv: list[str] = field(default_factory=list)
    site: KubeSite | None = None

    def describe(self) -> list[str]:
        """The point, the manifests (secret values never rendered; shown redacted anyway) and the commands."""
        lines = [LaunchPlan.describe(self)[0], f"# {shlex.join(self.exec_argv)} <<'EOF'"]
        lines += [f"    {line}" for line in redact_text(self.manifest).splitlines()]
        lines.append("# EOF")
        lines.append("# on Ctrl-C, the time limit or a failure (and after the logs are read), repro runs:")
        lines.append(f"#   {shlex.join(redact_argv(self.delete_argv))}")
        return lines

    def files(self) -> dict[str, str]:
        """The files `--emit DIR` writes: the point's manifests, exactly what `kubectl apply` is given."""
        return {f"{self.job_name}.yaml": self.manifest}


@SCHEDULERS.register("kubernetes", instance=True)
class Kubernetes(Scheduler):
    """Points as Trainer v2 TrainJobs or MPIJobs, through kubectl (see the module docstring)."""

    name = "kubernetes"
    launcher = "mpirun"  # inside the launcher pod (torch points run torchrun, whatever is asked)
    batch = True
    options = OPTIONS

    def __init__(self, site: KubeSite | None = None, timeout: float = 1800.0) -> None:
        self.site = site
        self.timeout = timeout
        self.version: str | None = None

    def configure(self, inventory: Inventory, flags: Mapping[str, Any], timeout: float) -> Kubernetes:
        """This scheduler for one sweep: the site's settings from the inventory and the flags, checked."""
        return Kubernetes(site_from(inventory.hosts, flags, inventory), timeout)

    def check(self, runtime: str, launcher: str, backends: tuple[str, ...] = ("mpi",)) -> None:
        """Refuse, before anything, what the pods cannot run: a runtime other than the stack's image, another
        launcher than mpirun/torchrun, Horovod's Gloo controller (its rendezvous needs the hosts beforehand)."""
        if not RUNTIMES.get(runtime).image_based:
            raise InputError(f"the {runtime} runtime does not run under --scheduler kubernetes: the pods run the "
                             "stack's image", hint="use --runtime docker (the image `repro up` built and locked)")
        if launcher not in ("mpirun", "torchrun"):
            raise InputError(f"the {launcher} launcher cannot start ranks in a TrainJob or MPIJob",
                             hint="use --launcher mpirun (TF+Horovod) or torchrun (PyTorch workloads)")
        if "gloo" in backends:
            raise InputError("Horovod's Gloo controller is not supported under --scheduler kubernetes",
                             hint="use --backends mpi (mpirun reads the operator's hostfile)")

    def job(self, point: Settings, placement: tuple[Placement, ...], ctx: PlanContext) -> KubeJob:
        """The KubeJob of a point (pure): image, command, environment, pods and processes per pod."""
        if self.site is None:
            raise LaunchError("the kubernetes scheduler was not configured with the site's settings")
        if ctx.image is None:
            raise LaunchError("the kubernetes scheduler needs the stack's image (run `repro up STACK` first)")
        if point.data not in (None, "synthetic"):
            raise InputError(f"--data {point.data}: a data set in the pods needs a volume, which repro does not "
                             "render yet", hint="use synthetic data under --scheduler kubernetes")
        per_pod = {p.ranks for p in placement}
        if len(per_pod) != 1:
            raise InputError(f"{point.workers} workers do not spread evenly over {len(placement)} pods "
                             f"({', '.join(f'{p.host.name}x{p.ranks}' for p in placement)}): every pod of a "
                             "TrainJob or MPIJob runs the same number of processes",
                             hint="choose worker counts that are a multiple of the hosts' slots")
        procs = per_pod.pop()
        policy = policy_of(point, ctx.framework)
        # NCCL's INFO lines to each pod's /tmp, out of the output the pod's log gives the parser; they go with the
        # pod (not read back yet: a Kubernetes run's record has no `fabric`)
        env = run_env(ctx.stack_env, interface=POD_INTERFACE, gpu=ctx.gpu,
                      nccl_dir=POD_NCCL_DIR if ctx.nccl_dir else None)
        command = program(point.workload, ctx.framework).command(point, ctx.python or "python3",
                                                        data=CONTAINER_DATA if point.data == "real" else point.data)
        if policy == "mpi":
            shape = Allocation(nodes=len(placement), tasks=point.workers, tasks_per_node=procs)
            argv = LAUNCHERS.get("mpirun").batch_argv(shape, command, list(env), interface=POD_INTERFACE)
            argv = [argv[0], "--mca", "plm_rsh_args", kube_render.RSH_ARGS, *argv[1:]]
        else:
            argv = ["torchrun", *script_words(command, no_python=False)]  # torchrun -m -- module ... (PET_* env)
        registry = self.site.registry
        gpus = self.site.gpus_per_pod if self.site.gpus_per_pod is not None else (procs if ctx.gpu else 0)
        return KubeJob(
            name=f"repro-{ctx.run_id}".lower(), run_id=ctx.run_id, policy=policy,
            image=f"{registry.rstrip('/')}/{ctx.image}" if registry else ctx.image, command=tuple(argv),
            env=tuple(sorted((k, v) for k, v in env.items() if not is_secret(k, v))),
            secret_env=tuple(sorted(k for k, v in env.items() if is_secret(k, v))),
            nodes=len(placement), procs_per_node=procs, gpus_per_pod=gpus,
            deadline_s=max(1, math.ceil(self.timeout)), site=self.site)

    def plan(self, point: Settings, placement: tuple[Placement, ...], runtime: str, ctx: PlanContext) -> KubePlan:
        """The point's objects, checked offline (InputError naming each refused field), and the kubectl commands."""
        job = self.job(point, placement, ctx)
        objects = kube_render.render(job)
        kube_check.check(objects, job.site.crds)
        manifest = kube_render.to_yaml(objects)
        if redact_text(manifest) != manifest:  # a secret outside `env` (a command argument): never applied in clear
            raise InputError(f"{point.workload}: a value that looks like a secret would be in the job's "
                             "manifest outside its environment",
                             hint="pass secrets as environment variables: they reach the pods from the site's "
                             f"Secret ({job.site.env_secret})")
        resource = RESOURCES[job.site.kind]
        env = {**dict(job.env), **{k: "" for k in job.secret_env}}
        return KubePlan(point, placement, runtime, "torchrun" if job.policy == "torch" else "mpirun", env,
                        list(job.command), kubectl(job.site, "apply", "-f", "-"), objects=tuple(objects),
                        manifest=manifest, job_name=job.name, resource=resource,
                        run_label=f"{kube_render.RUN_LABEL}={job.run_id}",
                        delete_argv=kubectl(job.site, "delete", resource, job.name, "--ignore-not-found",
                                            "--wait=false"),
                        site=job.site)

    def prepare(self, runtime: Runtime, hosts: list[Host], *, backend: str, keep_facts: Callable[[str, Any], Any],
                launcher: str, progress: Callable[[str], None]) -> Any:
        """Before the first job: kubectl answers, and the cluster's version (the nodes are the cluster's to
        check: repro neither reaches them over SSH nor gathers their facts)."""
        from repro.launch.runtimes import RuntimeReport
        from repro.launch.schedulers.kube_run import server_version

        assert self.site is not None
        self.version = server_version(self.site)
        progress(f"Kubernetes {self.version} (kubectl's current context), namespace {self.site.namespace}, "
                 f"{self.site.kind}")
        image = getattr(runtime, "image", None)
        return RuntimeReport(image=image)

    def execute(self, plan: Any, runtime: Runtime, timeout: float,
                progress: Callable[[str], None] | None = None) -> Outcome:
        if not isinstance(plan, KubePlan):
            raise LaunchError("the kubernetes scheduler runs plans it made itself (Kubernetes.plan)")
        from repro.launch.schedulers.kube_run import run_job

        return run_job(plan, timeout, self.version, progress)
