"""Secrets never reach disk or output: planted in manifests (env, a pip URL with a token) and in repro's own
environment, then a real bench (host runtime), compare, dry run, show; every byte written and printed is searched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
CPU = ROOT / "stacks" / "cpu-tf215.yaml"
SECRETS = {
    "old_password": "Hunter2-old-7c1e",
    "new_password": "Hunter2-new-9d2f",
    "pip_token": "PipTok-5a9b3c7d1e",
    "api_token": "ghp_0123456789abcdefghijABCDEFGHIJ0123",
    "process_env": "EnvOnly-8e6f4a2b",
}


def stack(tmp: Path, name: str, password: str) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(
        f"extends: {CPU}\n"
        f"env:\n  DB_PASSWORD: {password}\n  API_TOKEN: {SECRETS['api_token']}\n  NCCL_DEBUG: WARN\n"
        "packages:\n  pip:\n"
        f"    - \"private-pkg @ https://deploy:{SECRETS['pip_token']}@pypi.corp.example/private_pkg-1.0-py3-none-any.whl\"\n"
    )
    return path


def repro(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": SECRETS["process_env"]}
    proc = subprocess.run([sys.executable, "-m", "repro", *args], cwd=ROOT, env=env, text=True, capture_output=True,
                          timeout=900, check=False)
    assert not check or proc.returncode == 0, f"repro {' '.join(args)}: {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return proc


def test_secrets_reach_neither_the_store_nor_any_output(tmp_path):
    store = tmp_path / "store"
    old, new = stack(tmp_path, "old", SECRETS["old_password"]), stack(tmp_path, "new", SECRETS["new_password"])
    common = ["--hosts", str(ROOT / "inventories" / "localhost"), "--runtime", "host", "--workers", "1",
              "--warmup-steps", "1", "--steps", "3", "--batch-size", "4", "--repeats", "1", "--store", str(store)]
    printed = []
    for path in (old, new):
        for _ in range(2):
            printed.append(repro("bench", "--stack", str(path), *common))
    printed.append(repro("bench", "--stack", str(new), *common, "--dry-run"))
    compared = repro("compare", str(old), str(new), "--store", str(store))
    printed += [compared, repro("compare", str(old), str(new), "--store", str(store), "--format", "json"),
                repro("show", str(new)), repro("show", str(new), "--json"), repro("results", "--store", str(store))]
    ids = [line.split()[0] for line in printed[-1].stdout.splitlines()[2:] if line.strip()]
    printed += [repro("results", "--store", str(store), "show", i, "--json") for i in ids]
    assert "env.DB_PASSWORD changed (value redacted)" in compared.stdout, compared.stdout
    assert "<redacted:" in printed[4].stdout  # the dry run shows where a secret goes, not the secret
    written = [p for p in store.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in written)
    for name, secret in SECRETS.items():
        for proc in printed:
            assert secret not in proc.stdout and secret not in proc.stderr, f"{name} printed by {proc.args[3:5]}"
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"{name} written to {path}"
