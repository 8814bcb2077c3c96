"""Secrets by name and by shape: replaced by a marker that tells two secrets apart but never holds one."""

from __future__ import annotations

import pytest

from repro.compare.align import Change
from repro.results.redact import fingerprint, is_redacted, marker, redact_argv, redact_text, redact_tree

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
