"""Secrets by name and by shape: replaced by a marker that tells two secrets apart but never holds one."""

from __future__ import annotations

import pytest

from repro.compare.align import Change
from repro.secrets import fingerprint, is_redacted, is_secret_name, marker, redact_argv, redact_text, redact_tree

SECRETS = {
    "url": "https://alice:S3cr3t-pw@pypi.corp.example/simple",
    "token_user": "https://ghp_0123456789abcdefghijABCDEFGHIJ0123@github.com/org/repo.git",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "slack": "xoxb-1234567890-abcdefghij",
    "hf": "hf_abcdefghijklmnopqrstuvwxyz0123456789",
    "query": "https://s3.example/bucket/obj?X-Amz-Credential=a&signature=0ddba11deadbeef&x=1",
    "bearer": "Authorization: Bearer abc.def-ghi_jkl012345",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_secret_shapes_are_replaced_in_any_text(name):
    text = f"pip install --index-url {SECRETS[name]} horovod"
    out = redact_text(text)
    assert is_redacted(out) and out.startswith("pip install --index-url ") and out.endswith(" horovod")
    for part in ("S3cr3t-pw", "ghp_0123456789", "AKIAIOSFODNN7EXAMPLE", "xoxb-1234567890", "hf_abcdefghij",
                 "0ddba11deadbeef", "abc.def-ghi_jkl012345", "dozjgNryP4J3"):
        assert part not in out


def test_values_are_redacted_by_key_name_anywhere_in_a_tree_and_plain_values_stay():
    tree = {"env": {"DB_PASSWORD": "hunter2", "API_KEY": "k", "NCCL_IB_HCA": "mlx5", "HOROVOD_FUSION_THRESHOLD": "64",
                    "SSH_KEY_FILE": "/k", "PORT": 5},
            "packages": {"pip": [SECRETS["url"], "numpy==1.26"]}, "n": 3}
    out = redact_tree(tree)
    assert out["env"]["DB_PASSWORD"] == marker("hunter2") and out["env"]["API_KEY"] == marker("k")
    assert out["env"]["NCCL_IB_HCA"] == "mlx5" and out["env"]["HOROVOD_FUSION_THRESHOLD"] == "64"
    assert out["env"]["SSH_KEY_FILE"] == "/k" and out["env"]["PORT"] == 5 and out["n"] == 3
    assert out["packages"]["pip"][1] == "numpy==1.26" and "S3cr3t" not in out["packages"]["pip"][0]
    assert redact_tree(out) == out  # idempotent: a marker is never re-redacted


def test_argv_pairs_are_redacted_as_env_is():
    argv = ["env", "DB_PASSWORD=hunter2", "mpirun", "-x", "DB_PASSWORD", "--env", "TOKEN=t0k", "python", "--x=1"]
    out = redact_argv(argv)
    assert out[1] == f"DB_PASSWORD={marker('hunter2')}" and out[6] == f"TOKEN={marker('t0k')}"
    assert out[4] == "DB_PASSWORD" and out[-1] == "--x=1"


def test_a_changed_secret_is_reported_as_changed_without_either_value():
    old, new = marker("hunter2"), marker("hunter3")
    assert old != new and fingerprint("hunter2") == fingerprint("hunter2")
    assert Change("env.DB_PASSWORD", old, new).render() == "env.DB_PASSWORD changed (value redacted)"
    assert Change("env.X", "a", "b").render() == "env.X: a → b"


@pytest.mark.parametrize("name", ["MYSQL_PWD", "TF_VAR_db_password", "TF_TOKEN_app_terraform_io", "PGPASSWORD",
                                  "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "HF_TOKEN",
                                  "WANDB_API_KEY", "OPENAI_API_KEY", "SLACK_WEBHOOK_URL", "ansible_become_pass",
                                  "ansible_become_password", "ansible_ssh_pass", "SENTRY_DSN", "api-key"])
def test_real_world_secret_names_are_secret(name):
    assert is_secret_name(name)
    assert redact_tree({"env": {name: "hunter2-x"}})["env"][name] == marker("hunter2-x")


@pytest.mark.parametrize("name", ["PWD", "OLDPWD", "NCCL_IB_HCA", "TF_ENABLE_ONEDNN_OPTS", "HOROVOD_FUSION_THRESHOLD",
                                  "SSH_AUTH_SOCK", "SSH_KEY_FILE", "AWS_REGION", "sort_keys", "monkey"])
def test_ordinary_names_are_not(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize("secret", [
    "https://hooks.slack.com/services/T0AAAAAAA/B0BBBBBBB/abcdefghijklmnopqrstuvwx",
    "https://discord.com/api/webhooks/123456789/abcdefghijklmnopqrstuvwx",
    "mysql://root:p@ss@w0rd@db.example:3306/bench",
    "redis://:topsecretvalue@cache:6379/0",
    "xoxp-1234567890-abcdefghijkl", "xapp-1-A0000000000-1234567890-abcdef",
    "github_pat_11ABCDEFG0abcdefghijklmn_opqrstuvwxyz0123456789",
    "ASIAIOSFODNN7EXAMPLE", "sk-proj-abcdefghijklmnopqrstuvwx",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
])
def test_more_secret_shapes_are_replaced_anywhere_in_a_text(secret):
    tail = secret.split("@")[-1] if "://" in secret and "@" in secret else ""
    out = redact_text(f"curl -X POST {secret} -d x")
    assert is_redacted(out) and out.startswith("curl -X POST ") and out.endswith(" -d x")
    for part in ("p@ss@w0rd", "topsecretvalue", "abcdefghijklmnopqrstuvwx", "1234567890-abcdef", "IOSFODNN7",
                 "opqrstuvwxyz", "SyA1234567890"):
        assert part not in out, out
    assert tail in out


@pytest.mark.parametrize(("text", "secret"), [
    ("MYSQL_PWD=hunter2x ./run", "hunter2x"),
    ("export TF_VAR_db_password='two words'", "two words"),
    ('{"ansible_become_pass": "s3cr3t-b"}', "s3cr3t-b"),
    ("HF_TOKEN: abcdefgh1234", "abcdefgh1234"),
    ("--password hunter2x", None),
])
def test_name_equals_value_in_free_text_is_redacted_by_name(text, secret):
    out = redact_text(text)
    if secret is None:  # a bare option and its value are two argv words: redact_argv's job
        assert redact_argv(text.split())[1] == marker("hunter2x")
        return
    assert secret not in out and is_redacted(out), out
    assert redact_text("NCCL_DEBUG=INFO PATH=/usr/bin") == "NCCL_DEBUG=INFO PATH=/usr/bin"


def test_an_error_refusing_a_value_does_not_echo_the_credential_in_it(tmp_path, capsys):
    from repro.cli import main

    with pytest.raises(SystemExit):
        main(["up", "x.yaml", "--pip-index", "https://u:Sup3rS3cret@pypi.corp/simple\n"])
    err = capsys.readouterr().err
    assert "Sup3rS3cret" not in err and "--pip-index" in err, err
    stack = tmp_path / "s.yaml"
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    stack.write_text(f"extends: {root / 'stacks' / 'cpu-tf215.yaml'}\nenv:\n  DB_PASSWORD: \"Hunter2-x\\u0007\"\n"
                     "packages:\n  pip:\n    - \"pkg @ https://deploy:PipTok-5a9b@pypi.corp/p.whl ; x\"\n")
    assert main(["show", str(stack)]) == 2
    err = capsys.readouterr().err
    assert "Hunter2-x" not in err and "PipTok-5a9b" not in err and "env.DB_PASSWORD" in err, err
