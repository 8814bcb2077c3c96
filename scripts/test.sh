#!/usr/bin/env bash
# Set up this machine and run repro's whole test suite: the lint stage (scripts/lint.sh), unit tests (pure
# logic, fast) and integration tests against real components (Docker engines, SSH servers, Ansible, MPI
# across network-namespace hosts; see docs/testing.md). Extra arguments go to pytest. It prints the time of
# each phase (setup, lint, unit, integration) and the 30 slowest tests.
#
#   scripts/test.sh [PYTEST ARGS...]              this checkout's .venv, ~/.cache/repro, the machine's dockerd
#   scripts/test.sh --fresh [PYTEST ARGS...]      on a new machine: this command (as CI runs it) inside a
#                                                 privileged container made from a freshly bootstrapped Debian
#                                                 12, with a fresh clone of the checkout (scripts/new-machine.sh)
#   scripts/test.sh --fresh-here [PYTEST ARGS...] lighter: on this machine, with an empty Docker engine of its
#                                                 own, an empty repro cache and a new virtual environment, all
#                                                 in a temporary directory that is removed afterwards
#
# --fresh proves what a new machine does (nothing of this machine's /run, /etc, packages or caches leaks in);
# --fresh-here proves the build of the images, wheels and environment from nothing, in less time.
# --fresh-here starts its own dockerd (own socket, data root and exec root under the temporary directory,
# DOCKER_HOST pointing at it) and never touches the machine's dockerd; XDG_CACHE_HOME and REPRO_VENV
# point into the temporary directory, so the Debian base image, the Horovod wheel and TensorFlow are
# built or downloaded again. REPRO_FRESH_DIR=DIR uses DIR (created, and kept afterwards) instead.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
log() { printf '\033[1m[test]\033[0m %s\n' "$*" >&2; }

FRESH=0
case "${1:-}" in
  --fresh)
    shift
    exec scripts/new-machine.sh bash scripts/test.sh "$@"
    ;;
  --fresh-here)
    FRESH=1
    shift
    ;;
esac

# -- fresh mode: a temporary machine state, torn down on every exit path ---------------------------
FRESH_DIR=
KEEP_FRESH_DIR=0
PYTEST_PID=
BASE_PID=

# A --fresh run killed with SIGKILL cannot clean up: the next one stops its dockerd and removes its
# directory (each records the pid of its test.sh in owner.pid).
sweep_stale_fresh_dirs() {
  local dir owner
  for dir in /tmp/repro-fresh.*; do
    [ -f "$dir/owner.pid" ] || continue
    owner=$(cat "$dir/owner.pid" 2>/dev/null || true)
    if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then continue; fi
    log "removing $dir, left by a --fresh run that was killed (pid $owner)"
    REPRO_DOCKER_ROOT="$dir/docker" tests/cluster/local-docker.sh stop || true
    rm -rf --one-file-system "$dir" || true
  done
}

# shellcheck disable=SC2317 # run by the EXIT trap
fresh_teardown() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$PYTEST_PID" ] && kill -0 "$PYTEST_PID" 2>/dev/null; then
    pkill -TERM -P "$PYTEST_PID" 2>/dev/null || true # the xdist workers first: each tears its cluster down
    kill -TERM "$PYTEST_PID" 2>/dev/null || true
    wait "$PYTEST_PID" 2>/dev/null || true
  fi
  if [ -n "$BASE_PID" ] && kill -0 "$BASE_PID" 2>/dev/null; then
    kill -INT "$BASE_PID" 2>/dev/null || true # its Python unmounts what debootstrap mounted, then exits
    wait "$BASE_PID" 2>/dev/null || true
  fi
  if [ -n "$FRESH_DIR" ]; then
    REPRO_DOCKER_ROOT="$FRESH_DIR/docker" tests/cluster/local-docker.sh stop || rc=1
    if [ "$KEEP_FRESH_DIR" = 1 ]; then
      log "kept $FRESH_DIR"
    else
      rm -rf --one-file-system "$FRESH_DIR" || log "could not remove $FRESH_DIR"
    fi
  fi
  exit "$rc"
}

if [ "$FRESH" = 1 ]; then
  sweep_stale_fresh_dirs
  trap fresh_teardown EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  if [ -n "${REPRO_FRESH_DIR:-}" ]; then
    FRESH_DIR=$REPRO_FRESH_DIR
    KEEP_FRESH_DIR=1
    [ ! -e "$FRESH_DIR" ] || { log "REPRO_FRESH_DIR $FRESH_DIR exists; give a new path"; exit 2; }
    mkdir -p "$FRESH_DIR"
  else
    # short: the engine's containerd socket lives below it (unix socket paths stay under 108 bytes)
    FRESH_DIR=$(mktemp -d /tmp/repro-fresh.XXXXXX)
  fi
  echo $$ >"$FRESH_DIR/owner.pid"
  export XDG_CACHE_HOME=$FRESH_DIR/cache
  export REPRO_VENV=$FRESH_DIR/venv
  export REPRO_DOCKER_ROOT=$FRESH_DIR/docker
  export DOCKER_HOST=unix://$REPRO_DOCKER_ROOT/docker.sock
  mkdir -p "$XDG_CACHE_HOME"
  log "fresh mode in $FRESH_DIR: empty cache, new venv, own dockerd at $DOCKER_HOST"
fi

VENV=${REPRO_VENV:-$ROOT/.venv}
phase_start=$SECONDS
scripts/setup.sh test
log "setup: $((SECONDS - phase_start)) s"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
tests/cluster/local-docker.sh ensure
# Fresh mode: debian:12 (debootstrap from Debian's archive, packed, imported into the engine) is made in the
# background beside the lint stage and the unit tests, which need no engine; the integration tests' base_image
# fixture then finds it in the engine, or waits on the tarball's lock while it is still being built.
if [ "$FRESH" = 1 ]; then
  log "making debian:12 in the background (log: $FRESH_DIR/base-image.log)"
  env --default-signal=INT python -m repro.image.base >"$FRESH_DIR/base-image.log" 2>&1 &
  BASE_PID=$!
fi
# The lint stage: ruff, import-linter, shellcheck, hadolint, ansible-lint, each once (scripts/lint.sh).
phase_start=$SECONDS
scripts/lint.sh
log "lint: $((SECONDS - phase_start)) s"
# Integration prerequisites missing is a failure here, not a skip. Unit tests first (they fail fast), then
# the integration tests; tests/conftest.py prints each phase's time before pytest's summary line, and
# --durations the 30 slowest tests: where the CI budget goes.
export REPRO_TESTS_STRICT=1
# Two pytest-xdist workers: much of the integration time is waiting (on Slurm, on a lost host, on sshd, on a
# time limit), which the other worker fills. tests/conftest.py keeps each test cluster, the README job and each
# integration module on one worker. REPRO_TEST_WORKERS=0 runs everything in one process.
WORKERS=${REPRO_TEST_WORKERS:-2}
[[ $WORKERS =~ ^[0-9]+$ ]] || { log "REPRO_TEST_WORKERS must be a number of workers (0: none)"; exit 2; }
PARALLEL=()
if [ "$WORKERS" -gt 0 ]; then
  PARALLEL=(-n "$WORKERS" --dist loadgroup)
fi
if [ "$FRESH" = 0 ]; then
  exec python -m pytest tests/unit tests/integration -p no:cacheprovider --durations=30 "${PARALLEL[@]}" "$@"
fi
phase_start=$SECONDS
# In the background, so that INT/TERM reach the traps at once (not after pytest ends); the EXIT trap
# sends the workers and pytest SIGTERM, which tests/cluster/fixtures.py turns into a clean teardown of the
# clusters.
python -m pytest tests/unit tests/integration -p no:cacheprovider --durations=30 "${PARALLEL[@]}" "$@" &
PYTEST_PID=$!
status=0
wait "$PYTEST_PID" || status=$?
PYTEST_PID=
log "pytest: $((SECONDS - phase_start)) s; the whole --fresh run: ${SECONDS} s"
exit "$status"
