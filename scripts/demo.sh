#!/usr/bin/env bash
# Set up this machine and run repro's main job on it: did a change to the stack make training faster?
# Two stacks a user would compare are measured interleaved (A B, B A, ... on this machine, inventories/localhost)
# until a sequential test decides; the job ends with the verdict and the `repro compare` line that reprints it.
#   scripts/demo.sh [BENCH OPTION...]               TensorFlow: cpu-tf215 against cpu-tf215-xla (XLA on)
#   scripts/demo.sh torch [BENCH OPTION...]         PyTorch: cpu-torch213-nchw against cpu-torch213 (channels_last)
#   scripts/demo.sh [torch] --no-setup [OPTION...]  the job only, with the python on PATH (scripts/readme-sample.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
framework=tf
if [ "${1:-}" = torch ] || [ "${1:-}" = tf ]; then
  framework=$1
  shift
fi
if [ "${1:-}" = --no-setup ]; then
  shift
  repro() { python -m repro "$@"; }
else
  if [ "$framework" = torch ]; then scripts/setup.sh torch; else scripts/setup.sh demo; fi
  # shellcheck disable=SC1091
  . "${REPRO_VENV:-$ROOT/.venv}/bin/activate"
fi
if [ "$framework" = torch ]; then
  old=cpu-torch213-nchw new=cpu-torch213
else
  old=cpu-tf215 new=cpu-tf215-xla
fi
repro validate --quiet "stacks/$old.yaml" "stacks/$new.yaml"
# The main job: OLD and NEW interleaved on this machine, 1 worker, until the verdict (at most 4 pairs; the first
# look is after 3). Sized for about 2.5 minutes on 2 idle cores: the stacks' own benchmark, ResNet-20, 3 warm-up and
# 20 measured steps of batch 32 (fewer steps make a run mostly its start-up, and the verdict noisier).
repro bench --stack "stacks/$old.yaml" --stack "stacks/$new.yaml" --hosts inventories/localhost --workers 1 \
  --until-verdict --max-pairs 4 "$@"
