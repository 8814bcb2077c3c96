#!/usr/bin/env bash
# Set up this machine and run repro's main job on a local default: validate the shipped stacks,
# then benchmark the CPU stack on this machine (inventories/localhost), 1 and 2 workers.
#   scripts/demo.sh [BENCH OPTION...]              set up (scripts/setup.sh demo), then the job
#   scripts/demo.sh --no-setup [BENCH OPTION...]   the job only, with the python on PATH (scripts/readme-sample.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [ "${1:-}" = --no-setup ]; then
  shift
  repro() { python -m repro "$@"; }
else
  scripts/setup.sh demo
  # shellcheck disable=SC1091
  . "${REPRO_VENV:-$ROOT/.venv}/bin/activate"
fi
repro validate --quiet stacks/*.yaml
repro stacks
echo
# The main job: the CPU stack on this machine, 1 and 2 workers, ending with the scaling table. Sized to take
# about a minute on 2 idle cores: ResNet-20 (the stack's model), 2 warm-up and 10 measured steps of batch 32 per
# worker, 2 runs of each point (the fewest from which `repro compare` gives a verdict).
repro bench --stack stacks/cpu-tf215.yaml --hosts inventories/localhost --workers 1,2 --repeats 2 \
  --warmup-steps 2 --steps 10 "$@"
