"""repro's playbooks are linted by ansible-lint's production profile with no rule skipped (the lint run itself
is scripts/lint.sh's, once per test run), and every role follows the project's role conventions
(role-prefixed defaults, private `_` vars, validate.yml before any change)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
ROLES = sorted(p.name for p in (PLAYBOOKS / "roles").iterdir() if p.is_dir())
EXPECTED_ROLES = {"ssh_trust", "docker", "ofed", "gpudirect", "ipoib", "nfs_dataset", "nvidia"}


def test_lint_config_skips_no_rule():
    config = yaml.safe_load((PLAYBOOKS / ".ansible-lint").read_text())
    assert "skip_list" not in config, "no blanket skip list: justify single lines with `# noqa: rule  # why`"
    assert not config.get("warn_list"), "no rule demoted to a warning"
    assert not config.get("exclude_paths"), "nothing of playbooks/ is left out"
    assert config.get("profile") == "production"


def test_every_noqa_says_why():
    for path in sorted(PLAYBOOKS.rglob("*.y*ml")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "noqa" in line:
                assert re.search(r"#\s*noqa:\s*[\w\[\]-]+\s+#\s*\S.{10,}", line), \
                    f"{path}:{number}: a noqa needs the rule and a comment saying why: {line.strip()}"


def test_the_seven_roles_exist():
    assert set(ROLES) == EXPECTED_ROLES


@pytest.mark.parametrize("role", sorted(EXPECTED_ROLES))
def test_role_follows_the_conventions(role):
    base = PLAYBOOKS / "roles" / role
    defaults = yaml.safe_load((base / "defaults" / "main.yml").read_text())
    assert defaults, f"{role}: defaults/main.yml sets the role's settings"
    assert all(k.startswith(f"{role}_") for k in defaults), f"{role}: defaults must be prefixed {role}_"
    if (base / "vars" / "main.yml").exists():
        private = yaml.safe_load((base / "vars" / "main.yml").read_text())
        assert all(k.startswith(f"_{role}_") for k in private), f"{role}: vars/ holds _{role}_* values only"
    tasks = yaml.safe_load((base / "tasks" / "main.yml").read_text())
    # Validation comes before anything that could change the host (only fact gathering may precede it).
    first = next(t for t in tasks if "ansible.builtin.setup" not in t)
    assert first.get("ansible.builtin.import_tasks") == "validate.yml", f"{role}: tasks/main.yml starts with validate"
    validate = yaml.safe_load((base / "tasks" / "validate.yml").read_text())
    assert validate and all(set(t) & {"ansible.builtin.assert", "ansible.builtin.fail"} for t in validate), \
        f"{role}: validate.yml only asserts"
    text = "\n".join(p.read_text() for p in (base / "tasks").glob("*.yml"))
    assert "skipped: " in text, f"{role}: says why it skips a host"
