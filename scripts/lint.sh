#!/usr/bin/env bash
# The lint stage of scripts/test.sh: every lint and policy check, once, each timed. Runs them all and exits 1
# if any failed (0 if none). Needs the test environment on PATH (scripts/test.sh activates it): ruff,
# lint-imports, ansible-lint and hadolint come from repro's `test` extra, shellcheck from apt.
#
#   scripts/lint.sh
#
# - ruff: repro, tests, bench (no cache: what a fresh clone sees)
# - import-linter: the layer contracts of pyproject.toml ([tool.importlinter])
# - the shell checker: the repository's shell scripts, and the golden sbatch scripts repro renders
#   (tests/unit/test_slurm_script.py keeps them equal to what it renders)
# - hadolint: every Dockerfile repro renders (python -m tests.lint_inputs), with docker/hadolint.yaml;
#   without it hadolint must object to each rule that file ignores (the exceptions matter)
# - ansible-lint: playbooks/, production profile (playbooks/.ansible-lint; tests/unit/test_playbooks_lint.py
#   keeps that profile and no skipped rule)
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1
log() { printf '\033[1m[lint]\033[0m %s\n' "$*" >&2; }

failed=()
check() {  # check NAME COMMAND...: run it, time it, remember a failure
  local name=$1 began=$SECONDS
  shift
  if "$@"; then
    log "$name: ok ($((SECONDS - began)) s)"
  else
    log "$name: FAILED ($((SECONDS - began)) s)"
    failed+=("$name")
  fi
}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

hadolint_all() {
  python -m tests.lint_inputs "$WORK/dockerfiles" || return 1
  hadolint --no-color --config docker/hadolint.yaml "$WORK"/dockerfiles/*.Dockerfile || return 1
  # the exceptions matter: without the configuration hadolint reports every rule it ignores
  local found rule
  found=$(cd "$WORK" && hadolint --no-color dockerfiles/cpu-tf215-defaults.Dockerfile \
    dockerfiles/tf114-cuda10-defaults.Dockerfile)
  for rule in $(python -c 'import sys, yaml; print(" ".join(yaml.safe_load(open(sys.argv[1]))["ignored"]))' \
    docker/hadolint.yaml); do
    grep -q "$rule" <<<"$found" || { echo "hadolint no longer reports $rule: take it out of docker/hadolint.yaml"; return 1; }
  done
}

ansible_lint() {
  (cd playbooks && env -i PATH="$(dirname "$(command -v python)"):/usr/bin:/bin" HOME="$HOME" \
    ANSIBLE_CONFIG="$ROOT/playbooks/ansible.cfg" NO_COLOR=1 ansible-lint -c .ansible-lint --nocolor)
}

check ruff ruff check --no-cache repro tests bench
check import-linter lint-imports --no-cache
check shellcheck shellcheck -x scripts/*.sh tests/cluster/*.sh .ci/run
check shellcheck-sbatch shellcheck --shell=bash --severity=style tests/data/golden/slurm/*.sbatch
check hadolint hadolint_all
check ansible-lint ansible_lint

if [ "${#failed[@]}" -gt 0 ]; then
  log "failed: ${failed[*]}"
  exit 1
fi
