#!/usr/bin/env bash
# Set up this machine for repro: Debian packages and a virtual environment in .venv with repro and what the
# chosen job runs. Idempotent; a second run takes seconds.
#
#   scripts/setup.sh demo        TensorFlow's job on this machine: MPI, TensorFlow and a Horovod compiled against it
#   scripts/setup.sh torch       PyTorch's job on this machine: MPI and the CPU wheel of torch (no compiler)
#   scripts/setup.sh test        both, and Docker, SSH, debootstrap and the test tools
#   scripts/setup.sh wheelhouse  only the Horovod wheel in the cache (what image builds install)
#
# Environment: REPRO_VENV (the virtual environment, default .venv), XDG_CACHE_HOME (the wheelhouse
# is ${XDG_CACHE_HOME:-~/.cache}/repro/wheelhouse), REPRO_PYTHON_BIN (the Python to create it with),
# REPRO_TORCH_INDEX (where torch's CPU wheel comes from; default PyTorch's CPU index when it answers).
set -euo pipefail

MODE=${1:-test}
case "$MODE" in
  demo|torch|test|wheelhouse) ;;
  *) echo "usage: scripts/setup.sh [demo|torch|test|wheelhouse]" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${REPRO_VENV:-$ROOT/.venv}
TF_VERSION=2.15.1
HOROVOD_VERSION=0.28.1
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/repro
log() { printf '\033[1m[setup]\033[0m %s (at %d s)\n' "$*" "$SECONDS" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Debian packages -------------------------------------------------------------------------
packages=(openmpi-bin openssh-client python3-venv)
if [ "$MODE" != torch ]; then
  packages+=(libopenmpi-dev build-essential cmake python3-dev)  # Horovod compiles against TensorFlow and MPI
fi
if [ "$MODE" = test ]; then
  packages+=(docker.io openssh-server debootstrap iproute2 procps psmisc)
  # The Slurm test cluster (tests/cluster/cluster.sh up --slurm): Slurm 22.05, munge, the unversioned
  # libpmix.so that Slurm's pmix plugin dlopens, Charliecloud, and shellcheck for the rendered scripts.
  packages+=(slurm-wlm slurmctld slurmd slurm-client munge libpmix-dev charliecloud-runtime charliecloud-builders
    shellcheck)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # Debian's policy-rc.d: no service (munged, slurmd, sshd, dockerd) starts in the machine's own namespace
  # while installing; the test harness starts its own. A policy-rc.d that is already there is kept.
  policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\n# written by repro scripts/setup.sh during apt-get install\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod 755 "$policy"
  fi
  rc=0
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    rc=$?
  if [ -n "$policy" ]; then as_root rm -f "$policy"; fi
  [ "$rc" = 0 ] || { echo "setup: apt-get install failed (exit $rc)" >&2; exit "$rc"; }
fi

# --- Python environment ----------------------------------------------------------------------
PY=${REPRO_PYTHON_BIN:-python3}
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$MODE:$pyver" in
  *:3.10|*:3.11|torch:3.12|torch:3.13) ;;
  torch:*) echo "setup: repro needs Python 3.10 or later; $PY is $pyver (set REPRO_PYTHON_BIN)" >&2; exit 2 ;;
  *) echo "setup: TensorFlow $TF_VERSION needs Python 3.10-3.11; $PY is $pyver (set REPRO_PYTHON_BIN)" >&2; exit 2 ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }
pip install --upgrade pip wheel setuptools

if [ "$MODE" != torch ] && { ! "$VENV/bin/python" -c "import tensorflow" 2>/dev/null \
   || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow-cpu"))' 2>/dev/null)" != "$TF_VERSION" ]; }; then
  log "installing tensorflow-cpu $TF_VERSION"
  pip install "tensorflow-cpu==$TF_VERSION"
fi

# PyTorch for the torch_* workloads, pinned to the CPU build: PyPI's torch is a CUDA build of several GB, PyTorch's
# CPU index (https://download.pytorch.org/whl/cpu) has torch==2.13.0+cpu, which `torch==2.13.0` matches and pip
# prefers. The index is added when it answers (a machine with its own wheel mirror needs no network). Installed in
# the background while Horovod compiles (the compile keeps the cores busy; torch's install is mostly reading and
# unpacking). The Horovod build below only writes a wheel, never into the venv.
TORCH_VERSION=${REPRO_TORCH_VERSION:-2.13.0}
TORCH_INDEX=${REPRO_TORCH_INDEX-https://download.pytorch.org/whl/cpu}
torch_index=()
if [ -n "$TORCH_INDEX" ] && "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' \
   "$TORCH_INDEX/torch/" >/dev/null 2>&1; then
  torch_index=(--extra-index-url "$TORCH_INDEX")
fi
torch_pid=
if { [ "$MODE" = torch ] || [ "$MODE" = test ]; } &&
   [ "$("$VENV/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" != "$TORCH_VERSION" ]; then
  log "installing torch $TORCH_VERSION (in the background)"
  pip install "${torch_index[@]}" "torch==$TORCH_VERSION" &
  torch_pid=$!
  # a failed Horovod build ends this script: never leave the install running behind it
  trap '[ -z "$torch_pid" ] || kill "$torch_pid" 2>/dev/null || true' EXIT
fi

# Horovod compiles against the TensorFlow it finds (about 4 minutes on 2 cores): build it once into
# a wheelhouse keyed by TensorFlow and Python version, reuse it for the venv and for image builds.
WHEELS="$CACHE/wheelhouse/tf$TF_VERSION-py${pyver/./}"
if [ "$MODE" != torch ] && ! ls "$WHEELS"/horovod-"$HOROVOD_VERSION"-*.whl >/dev/null 2>&1; then
  log "building Horovod $HOROVOD_VERSION against TensorFlow $TF_VERSION (once; cached in $WHEELS)"
  mkdir -p "$WHEELS"
  HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_PYTORCH=1 \
    HOROVOD_WITHOUT_MXNET=1 pip wheel --no-deps --no-build-isolation --no-cache-dir \
    "horovod==$HOROVOD_VERSION" -w "$WHEELS"
fi
if [ "$MODE" = wheelhouse ]; then
  log "ready: $(ls "$WHEELS"/horovod-"$HOROVOD_VERSION"-*.whl)"
  exit 0
fi
if [ -n "$torch_pid" ]; then
  rc=0
  wait "$torch_pid" || rc=$?
  [ "$rc" = 0 ] || { echo "setup: installing torch $TORCH_VERSION failed (exit $rc)" >&2; exit "$rc"; }
  torch_pid=
  log "torch $TORCH_VERSION installed"
fi
if [ "$MODE" != torch ] && ! "$VENV/bin/python" -c "import horovod.tensorflow" 2>/dev/null; then
  pip install --no-deps "$WHEELS"/horovod-"$HOROVOD_VERSION"-*.whl
  pip install cloudpickle psutil pyyaml packaging cffi
fi

# The demo runs one framework's workloads on this machine (extra "tf": TensorFlow, Horovod, mpi4py, Horovod already
# installed from the wheelhouse above, so pip keeps it; extra "torch": torch, installed above) and can plot; the
# tests need every extra. The tests run against the checkout as it is edited (editable install); the demo
# installs repro as a user would, a wheel built from the checkout, which also keeps setuptools' notes about
# editable installs out of it.
extras=tf,plot
[ "$MODE" = torch ] && extras=torch,plot
if [ "$MODE" = test ]; then
  extras=workloads,all,test
  log "installing repro (editable) with [$extras]"
  pip install -e "${ROOT}[$extras]"
else
  log "installing repro with [$extras]"
  pip install "${torch_index[@]}" "${ROOT}[$extras]"
fi
log "ready: $("$VENV/bin/repro" --version), $("$VENV/bin/python" -c '
try:
    import tensorflow as t, horovod as h; print("TensorFlow", t.__version__, "Horovod", h.__version__)
except ImportError:
    import torch; print("torch", torch.__version__)' 2>/dev/null)"
