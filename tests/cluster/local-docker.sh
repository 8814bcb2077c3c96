#!/usr/bin/env bash
# Start (or stop) the Docker engine of the machine's own (root) namespace, used for local image
# builds. Idempotent: `ensure` does nothing when `docker info` already answers; `stop` stops only an
# engine this script started. Flags follow /work/shared/TESTBED.md (no iptables, no default bridge).
#
#   tests/cluster/local-docker.sh ensure|stop|status
#
# REPRO_DOCKER_ROOT=DIR (scripts/test.sh --fresh) manages a separate, private engine instead: socket
# DIR/docker.sock (DOCKER_HOST must name it), data root DIR/data, exec root DIR/exec, pid file, log and
# daemon.json in DIR, its own containerd. The machine's usual engine is then never contacted.
set -euo pipefail

ROOT_DIR=${REPRO_DOCKER_ROOT:-}
if [[ -n $ROOT_DIR ]]; then
  [[ $ROOT_DIR == /* ]] || { echo "local-docker: REPRO_DOCKER_ROOT must be absolute" >&2; exit 2; }
  SOCKET=unix://$ROOT_DIR/docker.sock
  [[ ${DOCKER_HOST:-} == "$SOCKET" ]] ||
    { echo "local-docker: with REPRO_DOCKER_ROOT, DOCKER_HOST must be $SOCKET" >&2; exit 2; }
  LOG=$ROOT_DIR/dockerd.log
  PIDFILE=$ROOT_DIR/dockerd.pid
  MARKER=$ROOT_DIR/started.pid
  EXEC_ROOT=$ROOT_DIR/exec
else
  LOG=/var/log/repro-dockerd.log
  PIDFILE=/var/run/docker.pid
  MARKER=/var/run/repro-local-dockerd.pid # pid of the dockerd this script started
  EXEC_ROOT=/var/run/docker # dockerd's default
fi
READY_TIMEOUT=${REPRO_DOCKERD_TIMEOUT:-60}

die() { echo "local-docker: $*" >&2; exit 1; }
say() { echo "local-docker: $*" >&2; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

# runs_as PID COMM: PID is a live process (not a zombie) named COMM.
runs_as() {
  local pid=${1:-} comm=$2 state
  [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]] || return 1
  state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
  [[ -n $state && $state != Z ]]
}

# A pid file outlives its process when the machine's processes are killed (a session or CI job that
# ends), and its pid may belong to another process since. dockerd checks neither file's process name:
# with its own pid file naming a live pid it refuses to start, and with EXEC_ROOT/containerd/
# containerd.pid naming one it adopts that "containerd" and fails after 15 s ("timeout waiting for
# containerd to start"; seen on a reused CI machine, the pid then a kernel worker's).
clear_stale_pidfile() {
  local file=$1 comm=$2 pid
  [[ -f $file ]] || return 0
  pid=$(cat "$file" 2>/dev/null || true)
  runs_as "$pid" "$comm" && return 0
  say "removing $file: pid ${pid:-(none)} is not a running $comm (left by an engine that was killed)"
  rm -f "$file"
}

# The private engine runs in its own mount namespace: its overlay mounts stay out of the machine's
# mount table, and a tmpfs over /run/containerd makes it start its own containerd (below its exec root)
# instead of adopting a system one that the machine's engine may share. unshare execs dockerd: $! is
# dockerd's pid.
start_private() {
  mkdir -p "$ROOT_DIR/data" "$ROOT_DIR/exec" /run/containerd
  [[ -f $ROOT_DIR/daemon.json ]] || echo '{}' >"$ROOT_DIR/daemon.json" # never the machine's /etc/docker/daemon.json
  # shellcheck disable=SC2016 # $@ belongs to the inner sh
  setsid unshare --mount --propagation slave \
    sh -c 'mount -t tmpfs -o mode=0711 repro-containerd /run/containerd && exec dockerd "$@"' dockerd \
    --config-file "$ROOT_DIR/daemon.json" --data-root "$ROOT_DIR/data" --exec-root "$ROOT_DIR/exec" \
    --pidfile "$PIDFILE" -H "$SOCKET" \
    --iptables=false --ip6tables=false --bridge=none --storage-driver=overlay2 </dev/null >>"$LOG" 2>&1 &
}

ensure() {
  if engine_answers; then
    say "the local Docker engine answers already"
    return 0
  fi
  [[ $EUID -eq 0 ]] || die "starting dockerd needs root"
  if [[ -z $ROOT_DIR && -n ${DOCKER_HOST:-} && $DOCKER_HOST != unix:///var/run/docker.sock ]]; then
    die "no engine answers at DOCKER_HOST=$DOCKER_HOST; start that one, or set REPRO_DOCKER_ROOT for a private one"
  fi
  command -v dockerd >/dev/null || die "dockerd is not installed (apt-get install -y docker.io)"
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  if runs_as "$pid" dockerd; then
    say "dockerd (pid $pid) runs but does not answer yet; waiting"
  else
    clear_stale_pidfile "$PIDFILE" dockerd
    clear_stale_pidfile "$EXEC_ROOT/containerd/containerd.pid" containerd
    say "starting dockerd (log: $LOG)"
    if [[ -n $ROOT_DIR ]]; then
      start_private
    else
      setsid dockerd --iptables=false --ip6tables=false --bridge=none --storage-driver=overlay2 \
        --pidfile "$PIDFILE" </dev/null >>"$LOG" 2>&1 &
    fi
    pid=$!
    echo "$pid" >"$MARKER"
  fi
  local deadline=$((SECONDS + READY_TIMEOUT))
  until engine_answers; do
    alive "$pid" || die "dockerd exited; last lines of $LOG:$(printf '\n'; tail -n 20 "$LOG")"
    ((SECONDS < deadline)) || die "dockerd did not answer within ${READY_TIMEOUT}s; see $LOG"
    sleep 0.5
  done
  say "the local Docker engine is ready"
}

stop() {
  local pid
  pid=$(cat "$MARKER" 2>/dev/null || true)
  if ! alive "$pid"; then
    rm -f "$MARKER"
    if engine_answers; then
      say "the running engine was not started by this script; leaving it alone"
    else
      say "no engine started by this script runs"
    fi
    return 0
  fi
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == dockerd ]] || {
    rm -f "$MARKER"
    die "pid $pid is not dockerd any more; leaving it alone"
  }
  say "stopping dockerd (pid $pid)"
  kill -TERM "$pid"
  local deadline=$((SECONDS + 30))
  while alive "$pid" && ((SECONDS < deadline)); do sleep 0.5; done
  if alive "$pid"; then
    say "dockerd did not stop within 30s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$MARKER"
}

case "${1:-}" in
  ensure) ensure ;;
  stop) stop ;;
  status) if engine_answers; then echo "running"; else echo "stopped"; exit 1; fi ;;
  *) echo "usage: $0 ensure|stop|status" >&2; exit 2 ;;
esac
