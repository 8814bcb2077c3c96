#!/usr/bin/env bash
# Run a command in a new Debian 12 machine made on this one: a privileged container from a freshly
# bootstrapped Debian 12 (debootstrap from Debian's archive, nothing of this machine's /run, /etc, packages,
# caches or kernel-visible leftovers in it), holding a fresh clone of this checkout with the working tree's
# changes on top. `scripts/test.sh --fresh` runs the test command so (`bash .ci/run`, as CI does); what passes
# there passes on a new machine. See docs/testing.md.
#
#   scripts/new-machine.sh [COMMAND...]      default: bash .ci/run
#
# What the new machine has: Debian 12 minbase and what a new development or CI machine of this project comes
# with (Python 3 with venv, pip and headers, a C/C++ toolchain, CMake, git, CA certificates) -- nothing else;
# the command installs what it needs, as on a new machine. It reaches Debian's archive and PyPI as this
# machine does: this machine's apt sources and configuration, pip configuration (files, PIP_* variables and
# the local directories they name, read-only) and CA bundle are copied in. It shares this machine's kernel and
# network stack (host networking; its test clusters take names of their own, REPRO_CLUSTER_NAME=nm).
#
# Everything lives in a temporary directory (REPRO_NEW_MACHINE_DIR=DIR: that one, kept afterwards) with a
# Docker engine of its own; the machine's engine, caches and .venv are never touched. Removed on every exit
# path; a run killed with SIGKILL is cleaned up by the next one. Prints the time of each phase.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
log() { printf '\033[1m[new-machine]\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (a privileged container and a Docker engine of its own)"
[ $# -gt 0 ] || set -- bash .ci/run

SUITE=bookworm
MIRROR=${REPRO_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CLUSTER_NAME="nm"
# What a new machine of this project has before any of its own scripts run (see the header).
MACHINE_PACKAGES=(python3 python3-venv python3-pip python3-dev build-essential cmake git ca-certificates)
STARTED=$SECONDS
phase() { log "$1: $((SECONDS - $2)) s"; }

# -- this machine: the tools to make the new one ----------------------------------------------------------
phase_start=$SECONDS
missing=()
for p in docker.io debootstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} on this machine"
  env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then # no service starts while installing (as scripts/setup.sh)
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
  fi
  rc=0
  env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  [ -z "$policy" ] || rm -f "$policy"
  [ "$rc" = 0 ] || die "apt-get install ${missing[*]} failed (exit $rc)"
fi

# -- a temporary directory, torn down on every exit path --------------------------------------------------
DIR=
KEEP=0
CONTAINER=
# Interfaces the new machine's test clusters make live in this machine's network stack (host networking).
delete_cluster_links() {
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}' |
    grep -E "^${CLUSTER_NAME}[a-z0-9]*-(br|h[0-9]+)$" || true); do
    ip link delete "$link" 2>/dev/null || true
  done
}
# A run killed with SIGKILL leaves its directory, engine and links: the next run removes them.
sweep_stale() {
  local dir owner
  for dir in /tmp/repro-new-machine.*; do
    [ -f "$dir/owner.pid" ] || continue
    owner=$(cat "$dir/owner.pid" 2>/dev/null || true)
    if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then continue; fi
    log "removing $dir, left by a run that was killed (pid $owner)"
    DOCKER_HOST=unix://$dir/docker/docker.sock REPRO_DOCKER_ROOT=$dir/docker tests/cluster/local-docker.sh stop || true
    delete_cluster_links
    rm -rf --one-file-system "$dir" || true
  done
}
# shellcheck disable=SC2317 # run by the EXIT trap
teardown() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$CONTAINER" ]; then
    # SIGTERM first: the test command inside tears its clusters down (scripts/test.sh's traps)
    timeout 120 docker stop -t 90 "$CONTAINER" >/dev/null 2>&1 || true
    docker rm -f "$CONTAINER" >/dev/null 2>&1 || true
  fi
  if [ -n "$DIR" ]; then
    tests/cluster/local-docker.sh stop || rc=1
    delete_cluster_links
    if [ "$KEEP" = 1 ]; then
      log "kept $DIR"
    else
      rm -rf --one-file-system "$DIR" || log "could not remove $DIR"
    fi
  fi
  log "the whole run: $((SECONDS - STARTED)) s (exit $rc)"
  exit "$rc"
}
sweep_stale
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -n "${REPRO_NEW_MACHINE_DIR:-}" ]; then
  DIR=$REPRO_NEW_MACHINE_DIR
  KEEP=1
  [ ! -e "$DIR" ] || die "REPRO_NEW_MACHINE_DIR $DIR exists; give a new path"
  mkdir -p "$DIR"
else
  DIR=$(mktemp -d /tmp/repro-new-machine.XXXXXX) # short: unix socket paths below it stay under 108 bytes
fi
echo $$ >"$DIR/owner.pid"
export REPRO_DOCKER_ROOT=$DIR/docker
export DOCKER_HOST=unix://$REPRO_DOCKER_ROOT/docker.sock
tests/cluster/local-docker.sh ensure
phase "this machine's tools and a Docker engine of its own" "$phase_start"

# -- a freshly bootstrapped Debian 12 ----------------------------------------------------------------------
phase_start=$SECONDS
log "debootstrap $SUITE from $MIRROR"
debootstrap --variant=minbase "$SUITE" "$DIR/rootfs" "$MIRROR" >"$DIR/debootstrap.log" 2>&1 ||
  die "debootstrap failed; last lines of $DIR/debootstrap.log:$(printf '\n'; tail -n 15 "$DIR/debootstrap.log")"
tar -C "$DIR/rootfs" -c . | docker import - repro-new-machine/debian:12 >/dev/null
rm -rf --one-file-system "$DIR/rootfs"
phase "Debian 12 bootstrapped" "$phase_start"

# -- the machine image: what a new machine has, and how it reaches Debian's archive and PyPI -----------
phase_start=$SECONDS
ctx=$DIR/context
mkdir -p "$ctx/files/etc" "$ctx/files/root/.config"
cp -a /etc/apt "$ctx/files/etc/apt"
rm -rf "$ctx/files/etc/apt/auth.conf.d" # credentials stay on this machine (an archive that needs them is not Debian's)
# this machine's sources replace debootstrap's (where it has no sources.list, an empty one: no source twice)
[ -e "$ctx/files/etc/apt/sources.list" ] || : >"$ctx/files/etc/apt/sources.list"
mkdir -p "$ctx/files/etc/ssl/certs"
cp -L /etc/ssl/certs/ca-certificates.crt "$ctx/files/etc/ssl/certs/host-ca-certificates.crt"
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$ctx/files/etc/pip.conf"
[ ! -d /etc/xdg/pip ] || { mkdir -p "$ctx/files/etc/xdg" && cp -a /etc/xdg/pip "$ctx/files/etc/xdg/pip"; }
[ ! -d "$HOME/.config/pip" ] || cp -a "$HOME/.config/pip" "$ctx/files/root/.config/pip"
cat >"$ctx/Dockerfile" <<EOF
FROM repro-new-machine/debian:12
COPY files/ /
# the packages a new machine comes with; the archive's CA bundle is this machine's (a TLS-intercepting proxy's
# certificate included), installed after ca-certificates so that its own update does not replace it
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      ${MACHINE_PACKAGES[*]} >/dev/null && rm -rf /var/lib/apt/lists/* && \\
    cp /etc/ssl/certs/host-ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
WORKDIR /root/repro
EOF
docker build -q --network host -t repro-new-machine/machine "$ctx" >/dev/null 2>"$DIR/build.log" ||
  die "building the machine image failed:$(printf '\n'; tail -n 20 "$DIR/build.log")"
phase "the machine image (${MACHINE_PACKAGES[*]})" "$phase_start"

# -- a fresh clone of this checkout, with the working tree's changes --------------------------------------
phase_start=$SECONDS
git clone -q --no-hardlinks "$ROOT" "$DIR/repro"
git -C "$ROOT" ls-files -z --modified --others --exclude-standard |
  tar -C "$ROOT" --null --ignore-failed-read -T - -c | tar -C "$DIR/repro" -x
git -C "$ROOT" ls-files -z --deleted | (cd "$DIR/repro" && xargs -0 -r rm -f)
changed=$(git -C "$ROOT" status --porcelain | wc -l)
log "clone of $(git -C "$ROOT" rev-parse --short HEAD)$( [ "$changed" = 0 ] || echo " with $changed changed path(s) of the working tree")"

# pip's configuration may name local directories (find-links, file:// indexes, constraints): the new machine
# sees them read-only where this one does.
mounts=()
while IFS= read -r path; do
  [ -e "$path" ] || continue
  case "$path" in /etc/* | "$HOME"/*) continue ;; esac # copied into the image above
  mounts+=(-v "$path:$path:ro")
done < <({ python3 -m pip config list 2>/dev/null | sed -E "s/^[^=]*='(.*)'$/\1/"; env | sed -nE 's/^PIP_[A-Z_]+=(.*)$/\1/p'; } |
  tr ' ' '\n' | sed -E 's#^file://##; s#/simple/?$##' | grep '^/' | sort -u)
# The project's shared/ folder beside the checkout (reference material some tests read, e.g. the Kubeflow CRDs),
# read-only where CI's clone has it too: beside the clone, as ../shared.
[ ! -d "$ROOT/../shared" ] || mounts+=(-v "$(cd "$ROOT/../shared" && pwd):/root/shared:ro")
pip_env=()
while IFS= read -r name; do pip_env+=(-e "$name"); done < <(env | sed -nE 's/^(PIP_[A-Z_]+)=.*/\1/p')
# A privileged container, as far as this machine allows: `--privileged` asks for every capability, and runc
# fails ("unable to apply caps") where this process's bounding set lacks one (a VM sandbox that drops
# CAP_SYS_RESOURCE, for one). So: every capability this machine has, no seccomp or AppArmor profile, no masked
# /proc paths, every device, and /sys read-write (the machine's, with its cgroup hierarchies, which the new
# machine's Docker engines and `ip netns exec` need), which is what --privileged gives. /sys/fs/cgroup is named
# on its own: otherwise Docker still mounts its read-only view of the container's own cgroups there, under the
# machine's, and the new machine's runc picks that one (its root is the container's cgroup, so the path runc
# derives for a container's cgroup mount does not exist: "error mounting cgroup to rootfs ... stat
# /sys/fs/cgroup/<id>", every `docker run` and `docker build` RUN step).
CAPS=(chown dac_override dac_read_search fowner fsetid kill setgid setuid setpcap linux_immutable net_bind_service
  net_broadcast net_admin net_raw ipc_lock ipc_owner sys_module sys_rawio sys_chroot sys_ptrace sys_pacct sys_admin
  sys_boot sys_nice sys_resource sys_time sys_tty_config mknod lease audit_write audit_control setfcap mac_override
  mac_admin syslog wake_alarm block_suspend audit_read perfmon bpf checkpoint_restore)
bounding=$((16#$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)))
PRIVILEGES=(--cap-add ALL --security-opt seccomp=unconfined --security-opt apparmor=unconfined
  --security-opt systempaths=unconfined --device-cgroup-rule 'a *:* rwm' -v /sys:/sys -v /sys/fs/cgroup:/sys/fs/cgroup)
for i in "${!CAPS[@]}"; do
  if (((bounding >> i) & 1)); then continue; fi
  PRIVILEGES+=(--cap-drop "${CAPS[$i]^^}")
  log "this machine's processes lack CAP_${CAPS[$i]^^}: the new machine does too"
done
mkdir -p "$DIR/tmp" "$DIR/var-lib-docker"
chmod 1777 "$DIR/tmp"
phase "the clone" "$phase_start"

# -- the command, on the new machine --------------------------------------------------------------------
# /tmp and /var/lib/docker are directories of this machine's disk: the new machine's engines and test clusters
# keep overlay data roots there (overlayfs cannot stack on the container's own).
log "running on the new machine: $*"
phase_start=$SECONDS
CONTAINER=repro-new-machine-$$
rc=0
docker run --name "$CONTAINER" "${PRIVILEGES[@]}" --network host --shm-size 8g --init \
  -v "$DIR/repro:/root/repro" -v "$DIR/tmp:/tmp" -v "$DIR/var-lib-docker:/var/lib/docker" "${mounts[@]}" \
  "${pip_env[@]}" -e CI=true -e REPRO_CLUSTER_NAME=$CLUSTER_NAME \
  ${REPRO_TEST_WORKERS:+-e REPRO_TEST_WORKERS="$REPRO_TEST_WORKERS"} \
  repro-new-machine/machine "$@" </dev/null &
# in the background, so that INT and TERM reach the traps at once: the teardown stops the container
wait $! || rc=$?
phase "the command (exit $rc)" "$phase_start"
exit "$rc"
