#!/usr/bin/env bash
# Set up this machine and run repro's main job on a local default: validate the shipped stacks,
# then benchmark the CPU stack on this machine (inventories/localhost), 1 and 2 workers.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/setup.sh demo
# shellcheck disable=SC1091
. "${REPRO_VENV:-$ROOT/.venv}/bin/activate"
repro validate --quiet stacks/*.yaml
repro stacks
echo
# The main job: the CPU stack on this machine, 1 and 2 workers, ending with the scaling table.
repro bench --stack stacks/cpu-tf215.yaml --hosts inventories/localhost --workers 1,2 "$@"
