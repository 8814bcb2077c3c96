# shellcheck shell=bash disable=SC2153 # STATE, NAME and the rest are set by cluster.sh
# The Slurm part of the test cluster (`cluster.sh up N --slurm`), sourced by cluster.sh: one munged for the
# whole cluster (its own socket and key), slurmctld on h1, one slurmd per host, every daemon started here
# in its host's namespaces and stopped by its pid file. Uses cluster.sh's globals and helpers (NAME,
# STATE, NET, HOSTS, dir_of, ns_of, addr_of, alive, say, die, stop_pidfile). See docs/testing.md.

SLURM_TIMEOUT=${REPRO_CLUSTER_SLURM_TIMEOUT:-60}   # seconds for munged, slurmctld and the nodes to answer
SLURMD_TIMEOUT=${REPRO_CLUSTER_SLURMD_TIMEOUT:-10} # slurm.conf SlurmdTimeout: a dead slurmd is DOWN after it
SLURM_PARTITION=debug
SLURM_CPUS=2 # per node, as slurm.conf declares it (config_overrides: not the hardware)
PMIX_LIB=/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so # what Slurm's mpi/pmix dlopens (libpmix-dev)

slurm_conf() { echo "$STATE/slurm/slurm.conf"; }
slurmd_dir() { echo "$(dir_of "$1")/slurmd"; }
munge_dir() { echo "$STATE/munge"; }

slurm_check_tools() {
  local tool missing=()
  for tool in munged munge unmunge mungekey slurmctld slurmd sinfo srun sbatch squeue scontrol scancel; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || missing+=("$tool")
  done
  [[ -e $PMIX_LIB ]] || missing+=("$PMIX_LIB")
  ((${#missing[@]} == 0)) ||
    die "--slurm needs slurm-wlm, slurm-client, munge and libpmix-dev (scripts/setup.sh test); missing: ${missing[*]}"
}

# Version of the installed Slurm (22.05.8).
slurm_version() { slurmd -V | awk '{print $2}'; }

# Run a daemon inside host $1, like a service on that host: its network namespace entered with nsenter
# (ip netns exec remounts /sys and slurmd then finds no cgroup file system), its own hostname, /etc/hosts
# and ~/.ssh in a private mount namespace (the jobs it starts inherit them), its own session, no fd 9.
# Writes the launcher's pid to $2; the daemon's output goes to $3.
host_daemon() {
  local i=$1 pidfile=$2 log=$3 dir
  shift 3
  dir=$(dir_of "$i")
  # shellcheck disable=SC2016 # $0, $1, $2 and $@ belong to the inner sh
  setsid nsenter --net="/var/run/netns/$(ns_of "$i")" unshare --mount --uts --propagation slave \
    sh -c 'mount --bind "$0" /root/.ssh && mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"' \
    "$dir/ssh" "$dir/hosts" "h$i" env SLURM_CONF="$(slurm_conf)" "$@" </dev/null >>"$log" 2>&1 9>&- &
  echo "$!" >"$pidfile"
}

slurm_write_config() {
  local i conf cpus=$SLURM_CPUS nodes=""
  conf=$(slurm_conf)
  mkdir -p "$STATE/slurm/ctld"
  sed -e "s|@NAME@|$NAME|g" -e "s|@NET@|$NET|g" -e "s|@STATE@|$STATE|g" -e "s|@SLURMD_TIMEOUT@|$SLURMD_TIMEOUT|g" \
    "$HERE/slurm.conf.in" >"$conf"
  for ((i = 1; i <= HOSTS; i++)); do
    echo "NodeName=h$i NodeAddr=$(addr_of "$i") CPUs=$cpus RealMemory=1000 State=UNKNOWN"
    nodes+=${nodes:+,}h$i
  done >>"$conf"
  echo "PartitionName=$SLURM_PARTITION Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >>"$conf"
  # slurmd 22.05 always loads a cgroup plugin; cgroup/v1 starts on this machine's hybrid hierarchy even
  # though nothing uses it (proctrack/linuxproc, task/none).
  printf '# cgroup.conf of repro test cluster %s\nCgroupPlugin=cgroup/v1\nCgroupAutomount=no\n' "$NAME" \
    >"$STATE/slurm/cgroup.conf"
  # An empty plugstack.conf beside slurm.conf: never the machine's /etc/slurm/plugstack.conf.
  echo "# plugstack.conf of repro test cluster $NAME: no SPANK plugins" >"$STATE/slurm/plugstack.conf"
  for ((i = 1; i <= HOSTS; i++)); do
    mkdir -p "$(slurmd_dir "$i")/spool"
    mkdir -m 1777 "$(dir_of "$i")/tmp" # TmpFS
  done
}

# munge: one munged serves every host (its socket is a file, and files are shared by the hosts).
start_munged() {
  local dir pid deadline
  dir=$(munge_dir)
  mkdir -m 700 "$dir"
  [[ -f $dir/munge.key ]] || mungekey --create --keyfile="$dir/munge.key"
  chmod 400 "$dir/munge.key"
  setsid munged --foreground --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" \
    </dev/null >>"$dir/munged.out" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$dir/munged.launch.pid"
  deadline=$((SECONDS + SLURM_TIMEOUT))
  until munge --socket="$dir/munge.sock" -n 2>/dev/null | unmunge --socket="$dir/munge.sock" >/dev/null 2>&1; do
    alive "$pid" || die "munged exited; last lines of its log:$(printf '\n')$(tail -n 15 "$dir/munged.log" "$dir/munged.out" 2>&1)"
    ((SECONDS < deadline)) || die "munged did not answer within ${SLURM_TIMEOUT}s; see $dir/munged.log"
    sleep 0.2
  done
}

# slurmctld runs in h1's namespaces: it must find its own name (SlurmctldHost=h1) as the hostname.
start_slurmctld() {
  local deadline pidfile=$STATE/slurm/ctld/slurmctld.launch.pid
  host_daemon 1 "$pidfile" "$STATE/slurm/ctld/slurmctld.out" slurmctld -D -i -f "$(slurm_conf)"
  deadline=$((SECONDS + SLURM_TIMEOUT))
  until SLURM_CONF=$(slurm_conf) timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; do
    alive "$(cat "$pidfile")" ||
      die "slurmctld exited; last lines of its log:$(printf '\n')$(tail -n 15 "$STATE/slurm/ctld/slurmctld.log" 2>&1)"
    ((SECONDS < deadline)) || die "slurmctld did not answer within ${SLURM_TIMEOUT}s; see $STATE/slurm/ctld/slurmctld.log"
    sleep 0.3
  done
}

start_slurmd() {
  local i=$1 dir
  dir=$(slurmd_dir "$i")
  mkdir -p "$dir/spool"
  host_daemon "$i" "$dir/slurmd.launch.pid" "$dir/slurmd.out" slurmd -D -N "h$i" -f "$(slurm_conf)"
}

# Waits until every node in $@ (h1 ...) is usable (idle, mixed or allocated) as slurmctld sees it.
wait_nodes() {
  local deadline node state
  deadline=$((SECONDS + SLURM_TIMEOUT))
  for node in "$@"; do
    while :; do
      state=$(SLURM_CONF=$(slurm_conf) timeout 10 sinfo -h -N -n "$node" -o %T 2>/dev/null | head -n 1 || true)
      [[ $state =~ ^(idle|mixed|allocated)$ ]] && break
      local i=${node#h}
      alive "$(cat "$(slurmd_dir "$i")/slurmd.launch.pid" 2>/dev/null || true)" ||
        die "slurmd of $node exited; last lines of its log:$(printf '\n')$(tail -n 15 "$(slurmd_dir "$i")/slurmd.log" "$(slurmd_dir "$i")/slurmd.out" 2>&1)"
      ((SECONDS < deadline)) ||
        die "node $node is '${state:-unknown}', not idle, after ${SLURM_TIMEOUT}s; see $(slurmd_dir "$i")/slurmd.log"
      sleep 0.5
    done
  done
}

slurm_up() {
  local i nodes=()
  slurm_write_config
  start_munged
  start_slurmctld
  for ((i = 1; i <= HOSTS; i++)); do
    start_slurmd "$i"
    nodes+=("h$i")
  done
  wait_nodes "${nodes[@]}"
}

# A node that dies, as Slurm sees it: its slurmd, every slurmstepd it started and their tasks get SIGKILL.
kill_slurmd() {
  local i=$1 dir pid pids stepds
  dir=$(slurmd_dir "$i")
  pid=$(cat "$dir/slurmd.pid" 2>/dev/null || true)
  if ! alive "$pid" || [[ $(cat "/proc/$pid/comm" 2>/dev/null) != slurmd ]]; then die "slurmd of h$i does not run"; fi
  stepds=$(for p in $(ip netns pids "$(ns_of "$i")" 2>/dev/null); do
    [[ $(cat "/proc/$p/comm" 2>/dev/null) == slurmstepd ]] && echo "$p"
  done || true)
  # A dead node reports nothing. Killing all at once is not enough: a step daemon that outlives its task by
  # a moment tells srun "task 1: Exited with exit code 137", and the job ends FAILED before Slurm notices
  # the node (seen once, in a fresh-mode test run). So the daemons are frozen first, then their tasks, then
  # all of them killed.
  # shellcheck disable=SC2086 # word splitting of the pid lists is intended
  kill -STOP $pid $stepds 2>/dev/null || true
  pids="$pid $(descendants "$pid $stepds")"
  # shellcheck disable=SC2086
  kill -STOP $pids 2>/dev/null || true
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  for pid in $pids; do
    local deadline=$((SECONDS + 10))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  done
  rm -f "$dir/slurmd.pid" "$dir/slurmd.launch.pid"
}

# The pids in $1 (space separated) and all their descendants.
descendants() {
  ps -e -o pid=,ppid= | awk -v seeds="$1" '
    { n++; pid[n] = $1; ppid[n] = $2 }
    END {
      m = split(seeds, s, " ")
      for (k = 1; k <= m; k++) if (s[k] != "") keep[s[k]]
      do {
        grew = 0
        for (k = 1; k <= n; k++) if ((ppid[k] in keep) && !(pid[k] in keep)) { keep[pid[k]]; grew = 1 }
      } while (grew)
      for (p in keep) print p
    }'
}

# Stops the Slurm daemons by their pid files (jobs' processes go with the cluster's other leftovers).
slurm_teardown() {
  local dir
  for dir in "$STATE"/h*/slurmd; do
    [[ -d $dir ]] || continue
    stop_pidfile "$dir/slurmd.pid" slurmd
    stop_pidfile "$dir/slurmd.launch.pid" slurmd
  done
  stop_pidfile "$STATE/slurm/ctld/slurmctld.pid" slurmctld
  stop_pidfile "$STATE/slurm/ctld/slurmctld.launch.pid" slurmctld
  stop_pidfile "$(munge_dir)/munged.pid" munged
  stop_pidfile "$(munge_dir)/munged.launch.pid" munged
}

# One status word per host: slurmd:ok(idle) or slurmd:DOWN(state).
slurm_node_status() {
  local i=$1 state
  state=$(SLURM_CONF=$(slurm_conf) timeout 10 sinfo -h -N -n "h$i" -o %T 2>/dev/null | head -n 1 || true)
  if alive "$(cat "$(slurmd_dir "$i")/slurmd.pid" 2>/dev/null || true)" && [[ $state =~ ^(idle|mixed|allocated)$ ]]; then
    echo "slurmd:ok($state)"
  else
    echo "slurmd:DOWN(${state:-no answer})"
    return 1
  fi
}
