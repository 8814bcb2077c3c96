#!/usr/bin/env bash
# A real multi-host test cluster on one machine: every host is a network namespace on a private
# bridge, with its own sshd (own host key, own ~/.ssh), optionally its own Docker engine, and an
# Ansible inventory that follows docs/design.md's inventory contract. See docs/testing.md.
#
#   cluster.sh up [N] [--docker] [--slurm]
#                                    create hosts h1..hN (default 2); recovers from a partial run;
#                                    --slurm: munged, slurmctld on h1 and a slurmd per host
#   cluster.sh down                  remove everything (idempotent)
#   cluster.sh status                one line per host; exit 1 unless every part is healthy
#   cluster.sh inventory             print the inventory path
#   cluster.sh exec HOST CMD...      run CMD inside HOST (its network namespace and its ~/.ssh)
#   cluster.sh fault KIND HOST       KIND: sshd-stop sshd-start link-down link-up engine-kill engine-start
#                                    slurmd-kill slurmd-start
#
# Environment: REPRO_CLUSTER_NAME (default rc; [a-z][a-z0-9]{0,7}), REPRO_CLUSTER_DIR (state dir,
# default /tmp/repro-cluster-$NAME), REPRO_CLUSTER_OCTET (third octet of 10.123.X.0/24, default derived
# from the name), REPRO_CLUSTER_BASE_IMAGE (default debian:12; empty: load none), REPRO_PYTHON (default
# $REPRO_VENV/bin/python, REPRO_VENV defaulting to the checkout's .venv).
# REPRO_CLUSTER_SLURM_TIMEOUT, REPRO_CLUSTER_SLURMD_TIMEOUT (see tests/cluster/slurm.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PYTHON=${REPRO_PYTHON:-${REPRO_VENV:-$REPO/.venv}/bin/python}
NAME=${REPRO_CLUSTER_NAME:-rc}
STATE=${REPRO_CLUSTER_DIR:-/tmp/repro-cluster-$NAME}
BRIDGE=$NAME-br
BASE_IMAGE=${REPRO_CLUSTER_BASE_IMAGE-debian:12}
LOCKFILE=/run/lock/repro-cluster-$NAME.lock
MACHINE_LOCK=/run/lock/repro-machine.lock # what every cluster shares on the machine (prepare_machine)
# shellcheck source=/dev/null # checked on its own (tests/integration/test_slurm_cluster.py)
source "$HERE/slurm.sh"

SSH_TIMEOUT=${REPRO_CLUSTER_SSH_TIMEOUT:-30}         # seconds for an sshd to answer
DOCKER_TIMEOUT=${REPRO_CLUSTER_DOCKER_TIMEOUT:-120}  # seconds for a dockerd to answer
STOP_TIMEOUT=${REPRO_CLUSTER_STOP_TIMEOUT:-30}       # seconds a daemon gets after SIGTERM
IMAGE_TIMEOUT=${REPRO_CLUSTER_IMAGE_TIMEOUT:-900}    # seconds to build and load the base image

die() { echo "cluster $NAME: error: $*" >&2; exit 1; }
say() { echo "cluster $NAME: $*" >&2; }

[[ $NAME =~ ^[a-z][a-z0-9]{0,7}$ ]] ||
  die "REPRO_CLUSTER_NAME must match [a-z][a-z0-9]{0,7} (it prefixes interface names of at most 15 characters)"
# Unix socket paths under the state dir (the engines' containerd sockets) must stay below 100 characters.
[[ $STATE =~ ^/[A-Za-z0-9._/-]+$ && ${#STATE} -le 50 ]] ||
  die "REPRO_CLUSTER_DIR must be an absolute path of at most 50 plain characters (got '$STATE')"
if [[ -n ${REPRO_CLUSTER_OCTET:-} ]]; then
  OCTET=$REPRO_CLUSTER_OCTET
  if ! [[ $OCTET =~ ^[0-9]+$ ]] || ((OCTET < 1 || OCTET > 254)); then die "REPRO_CLUSTER_OCTET must be 1..254"; fi
else
  OCTET=$(($(printf '%s' "$NAME" | cksum | cut -d' ' -f1) % 250 + 2))
fi
NET=10.123.$OCTET # test-only subnet: hosts .1 .. .N, the bridge .254

# -- naming -----------------------------------------------------------------------------------------
ns_of() { echo "$NAME-h$1"; }
addr_of() { echo "$NET.$1"; }
dir_of() { echo "$STATE/h$1"; }
sock_of() { echo "unix://$STATE/h$1/docker.sock"; }

# A zombie counts as gone: it holds no port, socket or mount, and init may take its time to reap it.
alive() {
  local stat
  [[ ${1:-} =~ ^[0-9]+$ ]] && stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

load_state() {
  [[ -f $STATE/cluster.env ]] || die "not up (no $STATE/cluster.env); run: $0 up"
  SLURM=0
  # shellcheck source=/dev/null
  source "$STATE/cluster.env" # HOSTS=N DOCKER=0|1 SLURM=0|1, written by `up`
}

# HOST may be h2, 2 or rc-h2; prints the index.
host_index() {
  local host=$1 i
  i=${host#"$NAME"-}
  i=${i#h}
  if ! [[ $i =~ ^[0-9]+$ ]] || ((10#$i < 1 || 10#$i > HOSTS)); then die "no host '$host' (hosts: h1..h$HOSTS)"; fi
  echo "$((10#$i))"
}

# Serializes up, down and faults of one cluster. Daemons must not inherit fd 9 (they would hold the lock).
lock() {
  local deadline=$((SECONDS + 300)) pid
  mkdir -p /run/lock # a new container's /run may lack it
  while :; do
    exec 9>"$LOCKFILE"
    flock -w 5 9 && return 0
    # Daemons started by an older cluster.sh inherited the lock and hold it for ever: start a new lock file.
    for pid in $(find /proc/[0-9]*/fd -lname "$LOCKFILE" 2>/dev/null | cut -d/ -f3 | sort -u); do
      if [[ $(cat "/proc/$pid/comm" 2>/dev/null) =~ ^(sshd|dockerd|containerd|munged|slurmctld|slurmd)$ ]]; then
        say "$LOCKFILE is held by a daemon (pid $pid) an earlier cluster.sh started; using a new lock file"
        rm -f "$LOCKFILE"
        continue 2
      fi
    done
    ((SECONDS < deadline)) || die "another cluster.sh holds $LOCKFILE for over 300s"
  done
}

# ssh as the cluster admin; host-key checking stays strict against the cluster's known_hosts.
ssh_admin() {
  ssh -F none -i "$STATE/cluster_key" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o UserKnownHostsFile="$STATE/known_hosts" -o StrictHostKeyChecking=yes \
    -o ConnectTimeout=5 -o LogLevel=ERROR "$@"
}

# Run a command inside host $1: its network namespace (ip netns exec also gives it its own /sys), its
# own hostname (UTS namespace) and a private mount namespace where the host's own ssh dir is
# bind-mounted over /root/.ssh and its own hosts file over /etc/hosts. Like real hosts, each one's
# name resolves to its cluster address (Horovod's Gloo, for one, finds peers by hostname).
# On a cluster with Slurm, SLURM_CONF points at its slurm.conf and USER is set, as in a login session
# (srun passes the environment on to the job; ch-run, for one, refuses to run without USER).
host_exec() {
  local i=$1
  shift
  if ((${SLURM:-0})); then set -- env SLURM_CONF="$(slurm_conf)" USER="${USER:-$(id -un)}" "$@"; fi
  # shellcheck disable=SC2016 # $0, $1, $2 and $@ belong to the inner sh
  ip netns exec "$(ns_of "$i")" unshare --mount --uts --propagation slave \
    sh -c 'mount --bind "$0" /root/.ssh && mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"' \
    "$(dir_of "$i")/ssh" "$(dir_of "$i")/hosts" "h$i" "$@"
}

# Each host's /etc/hosts: localhost, and every cluster host by its name (hN) and address.
write_hosts_files() {
  local i j
  for ((i = 1; i <= HOSTS; i++)); do
    {
      echo "# /etc/hosts of host h$i in repro test cluster $NAME"
      echo "127.0.0.1 localhost"
      echo "::1 localhost ip6-localhost ip6-loopback"
      for ((j = 1; j <= HOSTS; j++)); do echo "$(addr_of "$j") h$j"; done
    } >"$(dir_of "$i")/hosts"
  done
}

# -- the machine's own state, shared by every cluster ------------------------------------------------

# Two clusters may start at the same moment (scripts/test.sh runs the SSH cluster and the Slurm cluster on two
# pytest-xdist workers). What they share on the machine -- sshd's privilege separation directory, the mount
# point of each host's ~/.ssh, the mount point for each engine's /run/containerd, iproute2's /run/netns -- is
# created with operations that cannot fail on "exists" (mkdir -p, install -d), under one machine-wide lock, and /run/netns
# is made a mount point here once (the first `ip netns add` on a machine does that, and two at once race).
prepare_machine() {
  local probe=repro-init-$$
  mkdir -p /run/lock
  (
    flock -w 120 8 || die "another cluster.sh holds $MACHINE_LOCK for over 120s"
    install -d -m 755 /run/sshd      # sshd's privilege separation directory
    install -d -m 700 /root/.ssh     # mount point of each host's own ~/.ssh
    install -d -m 755 /run/containerd # mount point of each engine's own /run/containerd
    if ! mountpoint -q /run/netns 2>/dev/null; then
      ip netns add "$probe" && ip netns delete "$probe"
    fi
  ) 8>"$MACHINE_LOCK" 9>&-
}

# -- teardown ---------------------------------------------------------------------------------------

# stop_pid PID COMM: TERM, wait STOP_TIMEOUT, then KILL; only if PID still runs COMM (pids get reused).
stop_pid() {
  local pid=$1 comm=$2 deadline
  alive "$pid" || return 0
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + STOP_TIMEOUT))
  while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
  if alive "$pid"; then
    say "$comm (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
  fi
}

stop_pidfile() {
  local file=$1 comm=$2
  [[ -f $file ]] || return 0
  stop_pid "$(cat "$file" 2>/dev/null || true)" "$comm"
  rm -f "$file"
}

# Every process that belongs to this cluster: inside one of its namespaces, or naming its state dir on
# its command line (the engines' containerd and shims), plus all their descendants (containers) --
# but never this script or its ancestors, whatever their command lines say.
cluster_pids() {
  local ns seeds
  seeds=$({
    for ns in $(ip netns list 2>/dev/null | awk -v p="^$NAME-h[0-9]+\$" '$1 ~ p {print $1}'); do
      ip netns pids "$ns" 2>/dev/null || true
    done
    grep -lzF "$STATE/" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3 || true
  } | sort -un)
  [[ -n $seeds ]] || return 0
  ps -e -o pid=,ppid=,stat= | awk -v seeds="$seeds" -v self="$$" '
    $3 ~ /^Z/ { next }
    { n++; pid[n] = $1; ppid[n] = $2; parent[$1] = $2 }
    END {
      m = split(seeds, s, "\n")
      for (k = 1; k <= m; k++) keep[s[k]]
      do {
        grew = 0
        for (k = 1; k <= n; k++) if ((ppid[k] in keep) && !(pid[k] in keep)) { keep[pid[k]]; grew = 1 }
      } while (grew)
      for (p = self; p > 1 && (p in parent); p = parent[p]) skip[p]
      for (p in keep) if ((p in parent) && !(p in skip)) print p
    }'
}

kill_leftovers() {
  local pids deadline
  pids=$(cluster_pids)
  [[ -n $pids ]] || return 0
  # shellcheck disable=SC2086 # word splitting of the pid list is intended
  kill -TERM $pids 2>/dev/null || true
  deadline=$((SECONDS + 10))
  while ((SECONDS < deadline)); do
    pids=$(cluster_pids)
    [[ -n $pids ]] || return 0
    sleep 0.2
  done
  say "killing processes that outlived SIGTERM: $(echo "$pids" | tr '\n' ' ')"
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  deadline=$((SECONDS + 10))
  while [[ -n $(cluster_pids) ]] && ((SECONDS < deadline)); do sleep 0.2; done
}

# Mount points at or below the state dir, deepest first (dockerd's overlay and netns mounts if any
# leaked into this namespace; the state dir has no spaces, so mountinfo needs no unescaping).
mounts_below() {
  awk -v d="$STATE" '$5 == d || index($5, d "/") == 1 {print length($5), $5}' /proc/self/mountinfo |
    sort -rn | cut -d' ' -f2-
}

unmount_all() {
  local point
  for point in $(mounts_below); do
    umount "$point" 2>/dev/null || umount -l "$point" 2>/dev/null || say "cannot unmount $point"
  done
}

teardown() {
  local dir ns link
  slurm_teardown
  for dir in "$STATE"/h*/; do
    [[ -d $dir ]] || continue
    # Kill containers first: dockerd would give each one SIGTERM and 10s (PID 1 ignores SIGTERM).
    if [[ -S $dir/docker.sock ]] && alive "$(cat "$dir/dockerd.pid" 2>/dev/null || true)"; then
      timeout 30 docker -H "unix://$dir/docker.sock" ps -q 2>/dev/null |
        timeout 30 xargs -r docker -H "unix://$dir/docker.sock" kill >/dev/null 2>&1 || true
    fi
    stop_pidfile "$dir/dockerd.pid" dockerd
    stop_pidfile "$dir/dockerd.launch.pid" dockerd
    stop_pidfile "$dir/sshd.pid" sshd
  done
  kill_leftovers
  unmount_all
  for ns in $(ip netns list 2>/dev/null | awk -v p="^$NAME-h[0-9]+\$" '$1 ~ p {print $1}'); do
    ip netns delete "$ns" 2>/dev/null || say "cannot delete namespace $ns"
  done
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' |
    grep -xE "$NAME-h[0-9]+" || true); do
    ip link delete "$link" 2>/dev/null || true
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
  if [[ -e $STATE ]]; then
    [[ -z $(mounts_below) ]] || die "still mounted below $STATE: $(mounts_below | tr '\n' ' '); not deleting it"
    rm -rf --one-file-system "$STATE"
  fi
}

leftovers_exist() {
  [[ -e $STATE ]] || ip link show "$BRIDGE" >/dev/null 2>&1 ||
    ip netns list 2>/dev/null | awk -v p="^$NAME-h[0-9]+\$" '$1 ~ p {f=1} END {exit !f}'
}

# -- hosts ------------------------------------------------------------------------------------------

create_bridge() {
  local used
  used=$(ip -o -4 addr show | awk -v n="$NET." 'index($4, n) == 1 {print $2}' | sort -u | tr '\n' ' ')
  [[ -z $used ]] || die "subnet $NET.0/24 is already used by: $used; set REPRO_CLUSTER_OCTET to another 1..254"
  ip link add "$BRIDGE" type bridge
  sysctl -qw "net.ipv6.conf.$BRIDGE.disable_ipv6=1" 2>/dev/null || true
  ip addr add "$NET.254/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

create_host() {
  local i=$1 ns dir
  ns=$(ns_of "$i")
  dir=$(dir_of "$i")
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip link add "$ns" type veth peer name eth0 netns "$ns"
  sysctl -qw "net.ipv6.conf.$ns.disable_ipv6=1" 2>/dev/null || true
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
  ip link set "$ns" master "$BRIDGE" up
  ip -n "$ns" addr add "$(addr_of "$i")/24" dev eth0
  ip -n "$ns" link set eth0 up

  mkdir -m 700 "$dir" "$dir/ssh"
  ssh-keygen -q -t ed25519 -N '' -C "root@$ns" -f "$dir/ssh_host_ed25519_key"
  {
    echo "# ~/.ssh/authorized_keys of host h$i ($(addr_of "$i")) in repro test cluster $NAME"
    cat "$STATE/cluster_key.pub"
  } >"$dir/ssh/authorized_keys"
  chmod 600 "$dir/ssh/authorized_keys"
  cat >"$dir/sshd_config" <<EOF
# sshd of host h$i in repro test cluster $NAME (written by tests/cluster/cluster.sh)
ListenAddress $(addr_of "$i"):22
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
X11Forwarding no
PrintMotd no
AcceptEnv LANG LC_*
MaxStartups 64:30:128
MaxSessions 64
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
  if ((SLURM)); then echo "SetEnv SLURM_CONF=$(slurm_conf)" >>"$dir/sshd_config"; fi
  /usr/sbin/sshd -t -f "$dir/sshd_config" || die "sshd rejects $dir/sshd_config"
}

start_sshd() {
  local i=$1 dir
  dir=$(dir_of "$i")
  # sshd daemonizes; it and every session it starts keep the private mount namespace, so they see
  # this host's own ~/.ssh.
  host_exec "$i" /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log" </dev/null 9>&- ||
    die "sshd of h$i did not start; see $dir/sshd.log"
}

wait_sshd() {
  local i=$1 deadline
  deadline=$((SECONDS + SSH_TIMEOUT))
  until ssh_admin "root@$(addr_of "$i")" true 2>/dev/null; do
    ((SECONDS < deadline)) || die "sshd of h$i did not answer within ${SSH_TIMEOUT}s; see $(dir_of "$i")/sshd.log"
    sleep 0.2
  done
}

start_dockerd() {
  local i=$1 dir pid deadline
  dir=$(dir_of "$i")
  mkdir -p "$dir/docker" "$dir/run" /run/containerd # the last: mount point for the engine's own /run/containerd
  [[ -f $dir/daemon.json ]] || echo '{}' >"$dir/daemon.json" # never read the machine's /etc/docker/daemon.json
  # nsenter --net, not ip netns exec (which remounts /sys: dockerd then finds no cgroups). The private
  # mount namespace keeps the engine's overlay and netns mounts out of the machine's mount table, and
  # the tmpfs on /run/containerd keeps dockerd from adopting a system containerd that runs in the root
  # network namespace (its containers would live there too).
  # Its own hostname and /etc/hosts too: containers with host networking take both from the engine.
  # shellcheck disable=SC2016 # $1, $2 and $@ belong to the inner sh
  setsid nsenter --net="/var/run/netns/$(ns_of "$i")" unshare --mount --uts --propagation slave \
    sh -c 'mount -t tmpfs -o mode=0711 repro-containerd /run/containerd && mount --bind "$1" /etc/hosts &&
      hostname "$2" && shift 2 && exec dockerd "$@"' dockerd "$dir/hosts" "h$i" \
    --config-file "$dir/daemon.json" --data-root "$dir/docker" --exec-root "$dir/run" \
    --pidfile "$dir/dockerd.pid" -H "$(sock_of "$i")" \
    --iptables=false --ip6tables=false --bridge=none --storage-driver=overlay2 \
    </dev/null >>"$dir/dockerd.log" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$dir/dockerd.launch.pid"
  deadline=$((SECONDS + DOCKER_TIMEOUT))
  until timeout 10 docker -H "$(sock_of "$i")" info >/dev/null 2>&1; do
    alive "$pid" || die "dockerd of h$i exited; last lines of $dir/dockerd.log:$(printf '\n')$(tail -n 15 "$dir/dockerd.log")"
    ((SECONDS < deadline)) || die "dockerd of h$i did not answer within ${DOCKER_TIMEOUT}s; see $dir/dockerd.log"
    sleep 0.3
  done
}

kill_dockerd() {
  local i=$1 dir pid pids
  dir=$(dir_of "$i")
  pid=$(cat "$dir/dockerd.pid" 2>/dev/null || cat "$dir/dockerd.launch.pid" 2>/dev/null || true)
  if ! alive "$pid" || [[ $(cat "/proc/$pid/comm" 2>/dev/null) != dockerd ]]; then die "dockerd of h$i does not run"; fi
  # A crash of the whole engine: dockerd and its containerd (a child in its own session) die at once.
  pids="$pid $(pgrep -P "$pid" -x containerd || true)"
  # shellcheck disable=SC2086
  kill -KILL $pids
  for pid in $pids; do
    local deadline=$((SECONDS + 10))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  done
  # A killed process may stay a zombie until init reaps it, and dockerd would take a zombie pid in
  # containerd.pid for a live containerd and wait for it in vain.
  rm -f "$dir/dockerd.pid" "$dir/dockerd.launch.pid" "$dir/run/containerd/containerd.pid"
}

load_base_image() {
  local i args=()
  for ((i = 1; i <= HOSTS; i++)); do args+=(--docker-host "$(sock_of "$i")"); done
  [[ -x $PYTHON ]] || die "no python at $PYTHON (set REPRO_PYTHON)"
  say "loading base image $BASE_IMAGE into the engines"
  PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" timeout "$IMAGE_TIMEOUT" \
    "$PYTHON" -m repro.image.base "$BASE_IMAGE" "${args[@]}" >/dev/null ||
    die "could not put $BASE_IMAGE into the engines (see the messages above)"
}

write_known_hosts() {
  local i
  for ((i = 1; i <= HOSTS; i++)); do
    echo "$(addr_of "$i") $(cut -d' ' -f1,2 "$(dir_of "$i")/ssh_host_ed25519_key.pub")"
  done >"$STATE/known_hosts"
}

write_inventory() {
  local i
  {
    echo "# Inventory of repro test cluster $NAME, written by tests/cluster/cluster.sh; see docs/design.md"
    echo "all:"
    echo "  children:"
    echo "    workers:"
    echo "      hosts:"
    for ((i = 1; i <= HOSTS; i++)); do
      echo "        h$i:"
      echo "          ansible_host: $(addr_of "$i")"
      echo "          ansible_port: 22"
      echo "          ansible_user: root"
      echo "          ansible_ssh_private_key_file: $STATE/cluster_key"
      echo "          ansible_ssh_common_args: '-o UserKnownHostsFile=$STATE/known_hosts -o StrictHostKeyChecking=yes'"
      echo "          ansible_python_interpreter: /usr/bin/python3"
      echo "          repro_known_hosts: $STATE/known_hosts"
      echo "          repro_slots: 1"
      echo "          repro_gpus: 0"
      echo "          repro_interface: eth0"
      if ((DOCKER)); then echo "          repro_docker_host: $(sock_of "$i")"; fi
    done
    if ((SLURM)); then
      echo "      vars:"
      echo "        repro_scheduler: slurm"
      echo "        repro_slurm_conf: $(slurm_conf)"
      echo "        repro_slurm_partition: $SLURM_PARTITION"
      echo "        repro_slurm_submit_host: h1"
      echo "        repro_slurm_version: '$(slurm_version)'"
    fi
  } >"$STATE/inventory.yml"
}

write_description() {
  local i sep="" docker_host
  {
    printf '{\n  "format": "repro.testcluster/1",\n  "name": "%s",\n  "state_dir": "%s",\n' "$NAME" "$STATE"
    printf '  "subnet": "%s.0/24",\n  "bridge": "%s",\n  "bridge_address": "%s.254",\n' "$NET" "$BRIDGE" "$NET"
    printf '  "docker": %s,\n' "$( ((DOCKER)) && echo true || echo false)"
    if ((SLURM)); then
      printf '  "slurm": {"conf": "%s", "partition": "%s", "version": "%s", "controller": "h1", "submit_host": "h1",\n' \
        "$(slurm_conf)" "$SLURM_PARTITION" "$(slurm_version)"
      printf '            "cluster_name": "%s", "munge_socket": "%s/munge.sock", "jobcomp": "%s/slurm/jobcomp.txt",\n' \
        "$NAME" "$(munge_dir)" "$STATE"
      printf '            "spool_dir": "%s/%%n/slurmd/spool", "cpus_per_node": %s, "slurmd_timeout_s": %s},\n' \
        "$STATE" "$SLURM_CPUS" "$SLURMD_TIMEOUT"
    else
      printf '  "slurm": null,\n'
    fi
    printf '  "key": "%s/cluster_key",\n  "known_hosts": "%s/known_hosts",\n' "$STATE" "$STATE"
    printf '  "inventory": "%s/inventory.yml",\n  "hosts": [' "$STATE"
    for ((i = 1; i <= HOSTS; i++)); do
      docker_host=null
      if ((DOCKER)); then docker_host="\"$(sock_of "$i")\""; fi
      printf '%s\n    {"name": "h%s", "namespace": "%s", "address": "%s", "ssh_dir": "%s/ssh", "docker_host": %s}' \
        "$sep" "$i" "$(ns_of "$i")" "$(addr_of "$i")" "$(dir_of "$i")" "$docker_host"
      sep=,
    done
    printf '\n  ]\n}\n'
  } >"$STATE/cluster.json"
}

# -- commands ---------------------------------------------------------------------------------------

UP_DONE=0
up_failed() {
  local log
  ((UP_DONE)) && return 0
  for log in "$STATE"/h*/sshd.log "$STATE"/h*/dockerd.log "$STATE"/munge/munged.log "$STATE"/slurm/ctld/slurmctld.log \
    "$STATE"/h*/slurmd/slurmd.log; do
    [[ -s $log ]] || continue
    echo "--- last lines of $log" >&2
    tail -n 15 "$log" >&2
  done
  if [[ -n ${REPRO_CLUSTER_KEEP_FAILED:-} ]]; then
    say "up failed; leaving the partial cluster for inspection (REPRO_CLUSTER_KEEP_FAILED)"
  else
    say "up failed; tearing the partial cluster down"
    teardown || true
  fi
}

cmd_up() {
  local docker=0 slurm=0 hosts=2 arg i started=$SECONDS
  for arg in "$@"; do
    case $arg in
      --docker) docker=1 ;;
      --slurm) slurm=1 ;;
      [0-9]*)
        if ! [[ $arg =~ ^[0-9]+$ ]] || ((10#$arg < 1 || 10#$arg > 100)); then die "N must be 1..100"; fi
        hosts=$((10#$arg))
        ;;
      *) die "up: unknown argument '$arg' (usage: up [N] [--docker] [--slurm])" ;;
    esac
  done
  [[ $EUID -eq 0 ]] || die "needs root (network namespaces, sshd, dockerd)"
  for arg in ip sshd ssh ssh-keygen unshare nsenter flock setsid mountpoint; do
    command -v "$arg" >/dev/null || [[ -x /usr/sbin/$arg ]] || die "$arg is not installed"
  done
  if ((docker)); then
    if ! command -v dockerd >/dev/null || ! command -v docker >/dev/null; then
      die "--docker needs docker.io (dockerd, docker)"
    fi
  fi
  if ((slurm)); then slurm_check_tools; fi
  lock
  if leftovers_exist; then
    say "removing leftovers of an earlier run"
    teardown
  fi
  trap up_failed EXIT
  trap 'exit 130' INT TERM
  HOSTS=$hosts
  DOCKER=$docker
  SLURM=$slurm
  mkdir -p "$(dirname "$STATE")"
  mkdir -m 700 "$STATE"
  printf 'HOSTS=%s\nDOCKER=%s\nSLURM=%s\n' "$HOSTS" "$DOCKER" "$SLURM" >"$STATE/cluster.env"
  ssh-keygen -q -t ed25519 -N '' -C "repro-cluster-$NAME-admin" -f "$STATE/cluster_key"
  prepare_machine
  create_bridge
  for ((i = 1; i <= HOSTS; i++)); do create_host "$i"; done
  write_hosts_files
  write_known_hosts
  for ((i = 1; i <= HOSTS; i++)); do start_sshd "$i"; done
  for ((i = 1; i <= HOSTS; i++)); do wait_sshd "$i"; done
  # Host to host, across the bridge (a FORWARD policy of DROP with br_netfilter would stop this).
  for ((i = 2; i <= HOSTS; i++)); do
    host_exec 1 ssh -F none -i "$STATE/cluster_key" -o IdentitiesOnly=yes -o BatchMode=yes \
      -o UserKnownHostsFile="$STATE/known_hosts" -o StrictHostKeyChecking=yes -o ConnectTimeout=5 \
      "root@$(addr_of "$i")" true ||
      die "h1 cannot reach h$i over SSH although the machine can (is bridged traffic filtered? iptables -S FORWARD)"
  done
  if ((DOCKER)); then
    for ((i = 1; i <= HOSTS; i++)); do start_dockerd "$i"; done
    if [[ -n $BASE_IMAGE ]]; then load_base_image; fi
  fi
  if ((SLURM)); then slurm_up; fi
  write_inventory
  write_description
  UP_DONE=1
  say "up: $HOSTS host(s) on $NET.0/24$( ((DOCKER)) && echo ' with Docker engines')$( ((SLURM)) &&
    echo " with Slurm (SLURM_CONF=$(slurm_conf))") in $((SECONDS - started))s"
  echo "$STATE/inventory.yml"
}

cmd_down() {
  local started=$SECONDS
  [[ $EUID -eq 0 ]] || die "needs root"
  lock
  teardown
  say "down ($((SECONDS - started))s)"
}

cmd_status() {
  local i ok=0 dir ns line sshd_pid
  if [[ ! -f $STATE/cluster.env ]]; then
    echo "cluster $NAME: down"
    leftovers_exist && echo "cluster $NAME: leftovers exist; run: $0 down"
    return 1
  fi
  load_state
  echo "cluster $NAME: $HOSTS host(s) on $NET.0/24, state $STATE, inventory $STATE/inventory.yml"
  for ((i = 1; i <= HOSTS; i++)); do
    dir=$(dir_of "$i")
    ns=$(ns_of "$i")
    line="h$i $(addr_of "$i") ns=$ns"
    if ip netns list | awk '{print $1}' | grep -qxF "$ns"; then line+=" netns:ok"; else line+=" netns:MISSING"; ok=1; fi
    if [[ $(cat "/sys/class/net/$ns/operstate" 2>/dev/null) == up ]]; then line+=" link:up"; else line+=" link:DOWN"; ok=1; fi
    sshd_pid=$(cat "$dir/sshd.pid" 2>/dev/null || true)
    if alive "$sshd_pid" && ssh_admin -o ConnectTimeout=2 "root@$(addr_of "$i")" true 2>/dev/null; then
      line+=" sshd:ok"
    else
      line+=" sshd:DOWN"
      ok=1
    fi
    if ((DOCKER)); then
      if timeout 10 docker -H "$(sock_of "$i")" info >/dev/null 2>&1; then
        line+=" docker:ok($(sock_of "$i"))"
      else
        line+=" docker:DOWN"
        ok=1
      fi
    fi
    if ((SLURM)); then line+=" $(slurm_node_status "$i")" || ok=1; fi
    echo "$line"
  done
  return "$ok"
}

cmd_fault() {
  local kind=${1:-} host=${2:-} i
  [[ -n $kind && -n $host ]] ||
    die "usage: fault sshd-stop|sshd-start|link-down|link-up|engine-kill|engine-start|slurmd-kill|slurmd-start HOST"
  load_state
  i=$(host_index "$host")
  lock
  case $kind in
    sshd-stop) stop_pidfile "$(dir_of "$i")/sshd.pid" sshd ;;
    sshd-start)
      if alive "$(cat "$(dir_of "$i")/sshd.pid" 2>/dev/null || true)"; then say "sshd of h$i runs already"; else start_sshd "$i"; fi
      wait_sshd "$i"
      ;;
    link-down) ip link set "$(ns_of "$i")" down ;; # the machine's end of the cable: both directions go dark
    link-up)
      ip link set "$(ns_of "$i")" up
      local deadline=$((SECONDS + 15))
      until [[ $(cat "/sys/class/net/$(ns_of "$i")/operstate" 2>/dev/null) == up ]] &&
        ip -n "$(ns_of "$i")" link show eth0 | grep -q LOWER_UP; do
        ((SECONDS < deadline)) || die "link of h$i did not come up within 15s"
        sleep 0.1
      done
      ;;
    engine-kill | engine-start)
      ((DOCKER)) || die "cluster $NAME has no Docker engines (up --docker)"
      if [[ $kind == engine-kill ]]; then kill_dockerd "$i"; else start_dockerd "$i"; fi
      ;;
    slurmd-kill | slurmd-start)
      ((SLURM)) || die "cluster $NAME has no Slurm (up --slurm)"
      if [[ $kind == slurmd-kill ]]; then
        kill_slurmd "$i"
      else
        if alive "$(cat "$(slurmd_dir "$i")/slurmd.pid" 2>/dev/null || true)"; then
          say "slurmd of h$i runs already"
        else
          start_slurmd "$i"
        fi
        wait_nodes "h$i"
      fi
      ;;
    *) die "unknown fault '$kind' (sshd-stop sshd-start link-down link-up engine-kill engine-start slurmd-kill slurmd-start)" ;;
  esac
  say "fault $kind h$i: done"
}

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; }

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  inventory)
    [[ -f $STATE/inventory.yml ]] || die "not up (no $STATE/inventory.yml)"
    echo "$STATE/inventory.yml"
    ;;
  exec)
    [[ $# -ge 2 ]] || die "usage: exec HOST CMD..."
    load_state
    i=$(host_index "$1")
    shift
    host_exec "$i" "$@" # its exit status is this script's
    ;;
  fault) cmd_fault "$@" ;;
  -h | --help | help) usage ;;
  *) usage; exit 2 ;;
esac
