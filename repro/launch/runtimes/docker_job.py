"""The `docker` runtime inside a Slurm job (pure): a worker container per node, started and removed by the job.

Containers are children of the Docker engine, not of slurmstepd, so Slurm can neither track nor kill them.
The job therefore runs one *worker* task per node for its whole length (a background `srun --overlap` step):
it starts the node's container (labelled with the job id) and waits on it. The container lives only while its
worker does: its main process reads a FIFO the worker holds open, and ends at end-of-file, when the worker is
gone however it went (even SIGKILL, or its slurmd killed with it); `--rm` then removes it. At the normal end
the script removes the containers and the workers return; scancel and the time limit send every task SIGTERM,
and the worker's trap removes its container at once. A container whose node died with the engine still up
(crashed before its worker could end) is removed by the next repro job on that node (`repro_docker_reap`).

The ranks run in the node's container through `docker exec`, with the step's Slurm, PMIx and MPI environment;
the PMIx server's directories (SlurmdSpoolDir, TmpFS) are bound into the container at the same paths, so
Open MPI inside it wires up through srun --mpi=pmix as on the host. Under mpirun (the host's, inside the
allocation) the daemons Slurm starts on each node run `docker exec` for their ranks, which reach them through
the host's /tmp (bound in) and network: the image's Open MPI must match the host's, as for any hybrid launch.
"""

from __future__ import annotations

import shlex

from repro.hosts.inventory import DEFAULT_DOCKER_HOST, Host
from repro.launch.plan import CONTAINER_DATA, PlanContext
from repro.launch.runtimes import NODE_PATH_FUNCTION, JobStep

WAIT_TRIES = 300  # x 0.2 s: how long a rank waits for its node's container
# the environment a rank gets from srun besides the point's own
STEP_ENV = ("SLURM_*", "SLURMD_*", "PMIX_*", "PMI_*", "OMPI_*", "PRTE_*")


def engine_function(nodes: tuple[Host, ...]) -> str:
    """repro_docker: the docker CLI aimed at this node's engine (the inventory's repro_docker_host)."""
    special = [h for h in nodes if h.docker_host != DEFAULT_DOCKER_HOST]
    lines = ["# The docker CLI aimed at this node's engine (each host's repro_docker_host in the inventory)."]
    if not special:
        return "\n".join([*lines, 'repro_docker() { docker "$@"; }'])
    lines += ["repro_docker() {", "  case ${SLURMD_NODENAME:-} in"]
    lines += [f'    {shlex.quote(h.name)}) docker -H {shlex.quote(h.docker_host)} "$@" ;;' for h in special]
    lines += ['    *) docker "$@" ;;', "  esac", "}"]
    return "\n".join(lines)


STOP_FUNCTION = """\
# Remove this node's worker container (its worker task then returns).
repro_docker_stop() { repro_docker rm --force "repro-$SLURM_JOB_ID-$SLURMD_NODENAME" >/dev/null 2>&1 || true; }"""

REAP_FUNCTION = """\
# Remove this node's containers (and lifelines in TmpFS, $1) of repro jobs that Slurm no longer runs.
repro_docker_reap() {
  local live id job file
  live=$(squeue --noheader --format=%i 2>/dev/null) || return 0
  live=" ${live//$'\\n'/ } "
  for id in $(repro_docker ps --all --quiet --filter label=repro.slurm.job); do
    job=$(repro_docker inspect --format '{{index .Config.Labels "repro.slurm.job"}}' "$id" 2>/dev/null) || continue
    if [[ $live != *" $job "* ]]; then
      repro_docker rm --force "$id" >/dev/null 2>&1 && echo "repro: removed container $id of ended job $job" >&2
    fi
  done
  for file in "$1"/repro-*.lifeline; do
    job=${file##*/repro-}
    job=${job%%-*}
    if [[ -p $file && $live != *" $job "* ]]; then rm -f "$file"; fi
  done
}"""


def worker_function(image: str, run_args: list[str]) -> str:
    """repro_docker_worker: one per node for the whole job (see the module docstring)."""
    lines, line = [], ""
    for word in (shlex.quote(a) for a in run_args):
        if line and len(line) + len(word) > 90:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    args = " \\\n    ".join([*lines, line])
    return f"""\
# One task per node for the whole job: this node's worker container, removed however the job ends. Its main
# process reads a lifeline (a FIFO) this task holds open: when the task dies in any way, even by SIGKILL or
# with its slurmd, the container's main process sees end-of-file, and the container stops and goes (--rm).
repro_docker_worker() {{
  local spool tmpfs
  REPRO_CONTAINER="repro-$SLURM_JOB_ID-$SLURMD_NODENAME"
  REPRO_WAITER=""
  spool=$(repro_node_path SlurmdSpoolDir)
  tmpfs=$(repro_node_path TmpFS)
  REPRO_LIFELINE="$tmpfs/$REPRO_CONTAINER.lifeline"
  # the lifeline first: that alone ends the container, even if Slurm's SIGKILL comes before docker rm returns
  trap 'exec 3>&-; rm -f "$REPRO_LIFELINE"; repro_docker rm --force "$REPRO_CONTAINER" >/dev/null 2>&1 || true
        [[ -z $REPRO_WAITER ]] || kill "$REPRO_WAITER" 2>/dev/null || true' EXIT
  trap 'exit 143' TERM INT HUP
  repro_docker_reap "$tmpfs"
  rm -f "$REPRO_LIFELINE"
  mkfifo -m 600 "$REPRO_LIFELINE" || exit 1
  exec 3<>"$REPRO_LIFELINE"
  repro_docker run --detach --rm --name "$REPRO_CONTAINER" --label repro.managed=1 \\
    --label "repro.slurm.job=$SLURM_JOB_ID" --volume "$REPRO_LIFELINE:/run/repro-lifeline" \\
    --volume "$spool:$spool" --volume "$tmpfs:$tmpfs" \\
    {args} \\
    --entrypoint /bin/sh {shlex.quote(image)} -c 'exec cat /run/repro-lifeline >/dev/null' >/dev/null 3>&- || exit 1
  repro_docker wait "$REPRO_CONTAINER" >/dev/null 2>&1 3>&- &
  REPRO_WAITER=$!
  wait "$REPRO_WAITER"
}}"""


def exec_function(env_names: list[str]) -> str:
    """repro_in_docker: one rank in its node's container, with the step's environment and the point's."""
    patterns = " | ".join([*STEP_ENV, *sorted(env_names)])
    return f"""\
# One rank in this node's worker container, with the job step's Slurm, PMIx and MPI environment.
repro_in_docker() {{
  local name="repro-$SLURM_JOB_ID-$SLURMD_NODENAME" env=() var tries=0
  until [[ $(repro_docker inspect --format '{{{{.State.Running}}}}' "$name" 2>/dev/null) == true ]]; do
    if ((++tries > {WAIT_TRIES})); then
      echo "repro-workload error: the worker container $name did not start on $SLURMD_NODENAME" >&2
      return 1
    fi
    sleep 0.2
  done
  for var in $(compgen -e); do
    case $var in
      {patterns}) env+=(--env "$var") ;;
    esac
  done
  repro_docker exec "${{env[@]}}" "$name" "$@"
}}"""


def docker_job(command: list[str], env: dict[str, str], ctx: PlanContext, nodes: tuple[Host, ...], *,
               dataset: str | None, placement_nodes: int) -> JobStep:
    """The docker runtime's JobStep: worker containers on `placement_nodes` nodes, ranks through docker exec."""
    run_args = ["--network", "host", "--cap-add", "IPC_LOCK", "--shm-size", "1g"]
    if ctx.gpu:
        run_args += ["--gpus", "all"]
    if ctx.infiniband:
        run_args += ["--device", "/dev/infiniband", "--ulimit", "memlock=-1"]
    if dataset:
        run_args += ["--volume", f"{dataset}:{CONTAINER_DATA}:ro"]
    if ctx.nccl_dir:  # the job's shared directory of NCCL's files, at its own path
        run_args += ["--volume", f"{ctx.nccl_dir}:{ctx.nccl_dir}"]
    if ctx.launcher != "srun":  # mpirun's daemons run on the host: their session directory is in its /tmp
        run_args += ["--volume", "/tmp:/tmp"]
    worker = ["srun", "--overlap", "--mpi=none", f"--nodes={placement_nodes}", f"--ntasks={placement_nodes}",
              "--ntasks-per-node=1", "--kill-on-bad-exit=0", "bash", "-c", "repro_docker_worker"]
    return JobStep(
        command=["bash", "-c", 'repro_in_docker "$@"', "repro_in_docker", *command], env=env,
        functions=(NODE_PATH_FUNCTION, engine_function(nodes), REAP_FUNCTION, STOP_FUNCTION,
                   worker_function(str(ctx.image), run_args), exec_function(list(env))),
        setup=("# The worker containers, one per node, for the whole job (see repro_docker_worker).",
               shlex.join(worker) + " &", "REPRO_WORKER=$!"),
        teardown=("# the containers go, so every worker returns",
                  shlex.join([*worker[:7], "bash", "-c", "repro_docker_stop"]) + " >/dev/null 2>&1 || true",
                  'wait "$REPRO_WORKER" 2>/dev/null || true'),
    )
