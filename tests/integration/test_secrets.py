"""Secrets never reach disk or output: planted in manifests (env, a pip URL with a token) and in repro's own
environment, then a real bench (host runtime, the probe workload), compare, dry run, show; every byte written
and printed is searched."""

from __future__ import annotations

import json
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
    "mysql_pwd": "MysqlPwd-3b7e9a",
    "tf_var": "TfVarPw-5d1c8e",
    "tf_token": "TfTok-9a4f2c61",
    "slack": "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/S1ackPathSecret4e8b",
    "hf_env": "hf_PlantedHuggingFaceTokenValue0123456",
    "wandb_env": "WandbKey-7c2e5a91",
}
# the real-world names of issue 26, in the manifest's env and in repro's own environment
NAMED = {"MYSQL_PWD": SECRETS["mysql_pwd"], "TF_VAR_db_password": SECRETS["tf_var"],
         "TF_TOKEN_app_terraform_io": SECRETS["tf_token"], "NOTIFY_URL": SECRETS["slack"]}


def stack(tmp: Path, name: str, password: str, *, pip_url: bool = True) -> Path:
    path = tmp / f"{name}.yaml"
    path.write_text(
        f"extends: {CPU}\n"
        f"env:\n  DB_PASSWORD: {password}\n  API_TOKEN: {SECRETS['api_token']}\n  NCCL_DEBUG: WARN\n"
        + "".join(f"  {k}: \"{v}\"\n" for k, v in NAMED.items()) + (
            "packages:\n  pip:\n"
            f"    - \"private-pkg @ https://deploy:{SECRETS['pip_token']}@pypi.corp.example/private_pkg-1.0-py3-none-any.whl\"\n"
            if pip_url else "")
    )
    return path


def repro(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": SECRETS["process_env"], "HF_TOKEN": SECRETS["hf_env"],
           "WANDB_API_KEY": SECRETS["wandb_env"], **NAMED}
    proc = subprocess.run([sys.executable, "-m", "repro", *args], cwd=ROOT, env=env, text=True, capture_output=True,
                          timeout=900, check=False)
    assert not check or proc.returncode == 0, f"repro {' '.join(args)}: {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return proc


def test_secrets_reach_neither_the_store_nor_any_output(tmp_path):
    store = tmp_path / "store"
    old, new = stack(tmp_path, "old", SECRETS["old_password"]), stack(tmp_path, "new", SECRETS["new_password"])
    # the probe workload: the secrets travel through the runtime, launcher, records and output, not TensorFlow
    common = ["--hosts", str(ROOT / "inventories" / "localhost"), "--runtime", "host", "--workers", "1",
              "--workload", "probe", "--warmup-steps", "1", "--steps", "3", "--batch-size", "4", "--repeats", "1",
              "--store", str(store)]
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
    # the dry run shows where a secret goes (redacted, or named as read from the command's standard input), not it
    assert "<redacted:" in printed[4].stdout or "on the standard input of the command below" in printed[4].stdout
    written = [p for p in store.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in written)
    for name, secret in SECRETS.items():
        for proc in printed:
            assert secret not in proc.stdout and secret not in proc.stderr, f"{name} printed by {proc.args[3:5]}"
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"{name} written to {path}"


def test_secrets_reach_no_dry_run_import_or_listing_in_any_format(tmp_path):
    """The cheap paths, each in every format: bench dry runs (docker, host, Slurm), prepare --dry-run with
    become passwords in the inventory and -e, import of a log whose tail holds NAME=value secrets, results,
    compare and show; then every byte under the store and every byte printed is searched."""
    store = tmp_path / "store"
    old, new = stack(tmp_path, "old", SECRETS["old_password"]), stack(tmp_path, "new", SECRETS["new_password"])
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    workers:\n      hosts:\n        localhost:\n"
                         "          ansible_connection: local\n"
                         f"          ansible_become_password: {SECRETS['old_password']}\n")
    log = tmp_path / "run.log"
    log.write_text((ROOT / "tests" / "data" / "logs" / "tf_cnn_benchmarks_1gpu.log").read_text()
                   + "".join(f"{k}={v}\n" for k, v in NAMED.items())
                   + f"pip install --index-url https://deploy:{SECRETS['pip_token']}@pypi.corp/simple x\n")
    printed = []
    plain = stack(tmp_path, "plain", SECRETS["new_password"], pip_url=False)  # a pip URL cannot go into an image
    for runtime, scheduler in (("docker", "direct"), ("host", "direct"), ("host", "slurm"), ("docker", "slurm")):
        printed.append(repro("bench", "--stack", str(plain if runtime == "docker" else new), "--hosts",
                             str(ROOT / "inventories" / "localhost"), "--runtime", runtime, "--scheduler", scheduler,
                             "--workers", "1", "--dry-run"))
    refused = repro("bench", "--stack", str(new), "--hosts", str(ROOT / "inventories" / "localhost"), "--runtime",
                    "docker", "--workers", "1", "--dry-run", check=False)
    assert refused.returncode == 2 and "packages.pip" in refused.stderr, refused.stderr
    printed.append(repro("prepare", "--hosts", str(inventory), "--stack", str(new), "--dry-run",
                         "-e", f"ansible_become_pass={SECRETS['new_password']}"))
    for path in (old, new):
        printed.append(repro("import", str(log), "--stack", str(path), "--store", str(store)))
    formats = ("table", "markdown", "csv", "json")
    listed = [repro("results", "--store", str(store), "--format", f) for f in formats]
    printed += listed
    printed += [repro("compare", str(old), str(new), "--store", str(store), "--format", f, check=False)
                for f in formats]
    printed += [repro("show", str(new)), repro("show", str(new), "--json")]
    ids = [r["id"] for r in json.loads(listed[-1].stdout)]
    printed.append(refused)
    printed += [repro("results", "--store", str(store), "show", i, *j) for i in ids for j in ((), ("--json",))]
    assert len(ids) == 2 and ("<redacted:" in printed[4].stdout
                              or "on the standard input of the command below" in printed[4].stdout)
    written = [p for p in store.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in written)
    for name, secret in SECRETS.items():
        for proc in printed:
            assert secret not in proc.stdout and secret not in proc.stderr, f"{name} printed by {proc.args[3:6]}"
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"{name} written to {path}"
