"""Secrets, one rule everywhere (issue 38 item 3): the names and pasted forms people use are redacted."""

from __future__ import annotations

import pytest

from repro.hosts.prepare import parse_extra_vars
from repro.secrets import is_secret_name, redact_env, redact_text, redact_tree

SECRET = "Zq9-S3cr3t-Vx"


@pytest.mark.parametrize("name", ["SSHPASS", "SLURM_JWT", "DB_PW", "db_pw", "MYSQL_PW", "SLURM_JWT_KEY"])
def test_these_names_are_secret(name):
    assert is_secret_name(name)
    assert SECRET not in str(redact_env({name: SECRET}))


@pytest.mark.parametrize("name", ["PWD", "NCCL_P2P_LEVEL", "SLURM_NTASKS", "HOROVOD_FUSION_THRESHOLD"])
def test_these_names_are_not(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize("line", [
    f"mysql -h db -u root -p{SECRET} bench",
    f"mysqldump -p{SECRET} bench > dump.sql",
    f"curl -sS -u alice:{SECRET} https://example.com/x",
    f"curl --user alice:{SECRET} https://example.com/x",
    f"sshpass -p {SECRET} ssh node1",
    f"sshpass -p{SECRET} ssh node1",
    f"docker login -u me -p {SECRET} registry.example.com",
    f"some-tool --password {SECRET} --verbose",
    f"machine api.example.com login bob password {SECRET}",
    f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n-----END OPENSSH PRIVATE KEY-----",
    f"-----BEGIN RSA PRIVATE KEY-----\nMIIEow{SECRET}",  # a log tail cut in the middle of the block
])
def test_pasted_forms_are_redacted_in_text(line):
    out = redact_text(line)
    assert SECRET not in out and "<redacted:" in out, out


@pytest.mark.parametrize("line", ["mysql -p bench", "curl -u alice https://example.com", "password is required",
                                  "docker login --password-stdin", "mpirun -np 4 python x.py --batch 32"])
def test_ordinary_lines_are_kept(line):
    assert redact_text(line) == line


@pytest.mark.parametrize("value", [f"https://u:{SECRET}@example.com/x", "ghp_0123456789abcdefghijABCDEFGHIJ0123"])
def test_a_secret_shaped_value_is_secret_whatever_its_name(value):
    assert value not in str(redact_tree({"PLAIN_NAME": value}))


def test_prepare_extra_variables_show_no_secret_in_the_dry_run_variables():
    from repro.hosts.prepare import plan

    run = plan("/inv", extra_vars=parse_extra_vars([f"db_pw={SECRET}"]))
    assert SECRET not in " ".join(run.argv())
    assert run.extravars["db_pw"] == SECRET  # what runs is the value itself
