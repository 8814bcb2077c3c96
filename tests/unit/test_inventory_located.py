"""Inventory rejections the fuzz cases do not reach name file, line and field too (issue 38: "259 of 659
inventory rejections name no file:line"): too many hosts, no hosts, a file that is not UTF-8, a vars file that
is not a mapping."""

from __future__ import annotations

import pytest

from repro.errors import InventoryError
from repro.hosts.inventory import MAX_HOSTS, inventory_from_listing
from repro.hosts.inventory_yaml import listing


def _one(info: pytest.ExceptionInfo[InventoryError]):
    (diag,) = info.value.diagnostics
    return diag


def test_too_many_hosts_names_the_first_host_past_the_limit_where_it_is_written(tmp_path):
    path = tmp_path / "hosts.yml"
    names = [f"h{i}" for i in range(MAX_HOSTS + 1)]
    path.write_text("all:\n  children:\n    workers:\n      hosts:\n" + "".join(f"        {n}:\n" for n in names))
    raw = {"all": {"children": ["workers"]}, "workers": {"hosts": names}, "_meta": {"hostvars": {}}}
    with pytest.raises(InventoryError) as info:
        inventory_from_listing(raw, path)
    diag = _one(info)
    assert (diag.location.file, diag.location.line, diag.path) == (str(path), 5 + MAX_HOSTS, "hosts")
    assert f"h{MAX_HOSTS}" in diag.message


def test_an_inventory_without_hosts_names_its_file_line_and_field(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  children:\n    workers: {}\n")
    with pytest.raises(InventoryError) as info:
        inventory_from_listing({"all": {"children": ["ungrouped", "workers"]}, "_meta": {"hostvars": {}}}, path)
    diag = _one(info)
    assert (diag.location.file, diag.location.line, diag.path) == (str(path), 1, "hosts")


def test_an_inventory_that_is_not_utf8_names_the_line_of_the_bad_byte(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_bytes(b"all:\n  hosts:\n    h1: {ansible_host: \xff}\n")
    with pytest.raises(InventoryError) as info:
        listing(path)
    diag = _one(info)
    assert (diag.location.file, diag.location.line) == (str(path), 3) and "0xff" in diag.message


def test_a_vars_file_that_is_not_a_mapping_names_file_line_and_field(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    h1: {ansible_host: 10.0.0.1}\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("- a\n- b\n")
    with pytest.raises(InventoryError) as info:
        listing(tmp_path / "hosts.yml")
    diag = _one(info)
    assert (diag.location.file, diag.location.line, diag.path) == \
        (str(tmp_path / "group_vars" / "all.yml"), 1, "group_vars.all")
