"""Without Ansible (no repro[hosts]), a YAML inventory reads to the same hosts as through ansible-inventory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from repro.errors import BackendUnavailable, InventoryError
from repro.hosts import inventory as inventory_module
from repro.hosts.inventory import inventory_from_listing, load_inventory
from repro.hosts.inventory_yaml import listing

ROOT = Path(__file__).resolve().parents[2]


def _fields(inv):
    return [(h.name, h.address, h.port, h.user, h.slots, h.gpus, h.interface, h.docker_host, h.dataset_dir,
             h.infiniband, h.local) for h in inv.hosts]


@pytest.mark.parametrize("name", ["localhost", "c4140"])
def test_a_yaml_inventory_lists_the_same_without_ansible(name):
    path = ROOT / "inventories" / name
    assert _fields(inventory_from_listing(listing(path), path)) == _fields(load_inventory(path))


def test_group_vars_children_and_host_vars_follow_ansibles_precedence(tmp_path):
    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars: {repro_slots: 1, repro_gpus: 0}\n  children:\n    workers:\n      vars: {repro_slots: 2}\n"
        "      hosts:\n        n1: {ansible_host: 10.0.0.1}\n        n2: {ansible_host: 10.0.0.2, repro_slots: 3}\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "workers.yml").write_text("repro_interface: ib0\nrepro_slots: 4\n")
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / "n2.yml").write_text("repro_slots: 5\n")
    inv = inventory_from_listing(listing(tmp_path), tmp_path)
    assert [(h.name, h.slots, h.interface) for h in inv.hosts] == [("n1", 4, "ib0"), ("n2", 5, "ib0")]
    venv_tool = Path(inventory_module.sys.executable).parent / "ansible-inventory"
    if shutil.which("ansible-inventory") or venv_tool.exists():
        assert _fields(inv) == _fields(load_inventory(tmp_path))


def test_what_only_ansible_reads_says_which_extra_gives_it(tmp_path):
    ini = tmp_path / "hosts.ini"
    ini.write_text("[workers]\nn1 ansible_host=10.0.0.1\n")
    with pytest.raises(BackendUnavailable, match="only YAML inventories") as info:
        listing(ini)
    assert "pip install 'repro[hosts]'" in info.value.render()
    ranged = tmp_path / "r.yml"
    ranged.write_text("all:\n  hosts:\n    node[01:04]:\n")
    with pytest.raises(BackendUnavailable, match="host range"):
        listing(ranged)


@pytest.mark.parametrize(("text", "line", "message"), [
    ("all:\n  vars: [a, b]\n  hosts:\n    n1:\n", 2, "'vars' of group all must be a mapping"),
    ("all:\n  children: [workers]\n", 2, "'children' of group all must be a mapping"),
    ("all:\n  children:\n    workers:\n      hosts: n1\n", 4, "'hosts' of group workers must be a mapping"),
    ("all:\n  hosts:\n    n1: {ansible_port: 22\n", 4, "YAML"),
    ("all:\n  hosts:\n    n1:\n  bad: [\n", 5, "YAML"),
])
def test_a_malformed_yaml_inventory_read_without_ansible_is_an_error_at_file_line(tmp_path, text, line, message):
    path = tmp_path / "hosts.yml"
    path.write_text(text)
    with pytest.raises(InventoryError) as info:
        inventory_from_listing(listing(path), path)
    (diag,) = info.value.diagnostics
    assert diag.location is not None and diag.location.file == str(path) and diag.location.line == line, diag
    assert message in diag.message, diag


def test_a_huge_integer_in_a_yaml_inventory_read_without_ansible_is_a_bad_value_not_a_crash(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    n1:\n      ansible_port: " + "9" * 5000 + "\n")
    with pytest.raises(InventoryError) as info:
        inventory_from_listing(listing(path), path)
    (diag,) = info.value.diagnostics
    assert diag.location.line == 4 and "expected a whole number" in diag.message, diag
