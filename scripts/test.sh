#!/usr/bin/env bash
# Set up this machine and run repro's whole test suite: unit tests (pure logic, fast) and
# integration tests against real components (Docker engines, SSH servers, Ansible, MPI across
# network-namespace hosts; see docs/testing.md). Extra arguments go to pytest.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
scripts/setup.sh test
# shellcheck disable=SC1091
. .venv/bin/activate
if [ -x tests/cluster/local-docker.sh ]; then
  tests/cluster/local-docker.sh ensure
fi
# Integration prerequisites missing is a failure here, not a skip.
export REPRO_TESTS_STRICT=1
ruff check repro tests bench
exec python -m pytest tests -p no:cacheprovider "$@"
