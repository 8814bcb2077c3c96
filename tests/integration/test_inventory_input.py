"""Inventories through the real ansible-inventory: hostile values located, Ansible's reason kept, a time limit.

The end-to-end sample runs cases of the unit fuzz test (tests/unit/test_inventory_fuzz.py) through
ansible-inventory and checks that they give the same answer as the in-process path the unit test uses.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given

from repro.errors import InventoryError
from repro.hosts.inventory import Inventory, inventory_from_listing, load_inventory
from repro.hosts.inventory_listing import parse_listing
from tests.unit.fuzz_cases import (
    SCALE,
    Tally,
    fuzz_settings,
    inventory_cases,
    inventory_property,
    listing_json,
    write_inventory,
)

ROOT = Path(__file__).resolve().parents[2]
END_TO_END_CASES = 40
pytestmark = pytest.mark.timeout(900)


def errors_of(path: Path) -> InventoryError:
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    return info.value


def test_fuzz_cases_through_ansible_inventory_agree_with_the_in_process_path():
    tally = Tally()
    compared = []

    @fuzz_settings(END_TO_END_CASES, shrink=False)
    @given(inventory_cases())
    def case(inventory_case):
        with tempfile.TemporaryDirectory() as tmp:
            path = write_inventory(inventory_case, Path(tmp))
            real = inventory_property(inventory_case, path, tally, end_to_end=True)
            try:
                emulated = inventory_from_listing(parse_listing(listing_json(inventory_case), path), path)
            except InventoryError as exc:
                emulated = {d.path for d in exc.diagnostics}
            if isinstance(real, InventoryError) and "Ansible cannot read" in real.message:
                return  # Ansible refused the file itself (e.g. a 5,000-digit number): nothing to compare
            if isinstance(real, InventoryError):
                real = {d.path for d in real.diagnostics}
            same = (isinstance(real, Inventory) and isinstance(emulated, Inventory)) or real == emulated
            compared.append(same)
            assert same, f"ansible-inventory: {real}\nin-process: {emulated}\ncase: {inventory_case}"

    case()
    assert tally.cases >= END_TO_END_CASES * SCALE
    assert not tally.unlocated, "errors without file:line:\n" + "\n".join(tally.unlocated[:10])
    assert len(compared) >= END_TO_END_CASES // 2


def test_values_are_located_in_ini_group_vars_and_host_vars(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "hosts.ini").write_text("[workers]\nh1 repro_slots=2\nh2 repro_interface=eth0;id\n\n"
                                        "[workers:vars]\nrepro_gpus=many\n")
    (tmp_path / "group_vars" / "all.yml").write_text("# shared\nrepro_known_hosts: 123\n")
    (tmp_path / "host_vars" / "h1.yml").write_text("repro_launch_key: /root/.ssh/id with space\n")
    diags = {d.path: d for d in errors_of(tmp_path / "hosts.ini").diagnostics}
    where = {path: (Path(d.location.file).name, d.location.line) for path, d in diags.items()}
    assert where["h2.repro_interface"] == ("hosts.ini", 3)
    assert where["h1.repro_gpus"] == ("hosts.ini", 6) and where["h2.repro_gpus"] == ("hosts.ini", 6)
    assert where["h1.repro_known_hosts"] == ("all.yml", 2)
    assert where["h1.repro_launch_key"] == ("h1.yml", 1)
    assert diags["h2.repro_interface"].location.column == 20  # the value, after "h2 repro_interface="


def test_a_host_named_like_a_path_is_refused_and_nothing_is_written(tmp_path):
    inventory = tmp_path / "inv.yml"
    inventory.write_text("workers:\n  hosts:\n    ../../../../x:\n      ansible_connection: local\n")
    store = tmp_path / "deep" / "er" / "store"
    before = set(tmp_path.rglob("*"))
    proc = subprocess.run([sys.executable, "-m", "repro", "prepare", "--hosts", str(inventory), "--check-only",
                           "--store", str(store)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"{inventory}:3:5" in proc.stderr and "Traceback" not in proc.stderr
    assert set(tmp_path.rglob("*")) == before
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("name, text, line, words", [
    ("bad.yml", "all:\n  hosts:\n    a:\n      x: [1, 2\n", 5, ["flow sequence"]),
    ("bad.ini", "[workers]\nh1 repro_slots=2\nh2 name=\"unbalanced\n", 3, ["No closing quotation"]),
    # the yaml plugin's reason, not the auto plugin's ("no root 'plugin' key") nor the ini plugin's, placed by repro
    ("list.yml", "- a\n- b\n", 1, ["should be a dictionary", "yaml inventory plugin"]),
    ("vars.yml", "all:\n  vars: [1]\n  hosts:\n    n1:\n", 2, ['Invalid "vars" entry', "yaml inventory plugin"]),
])
def test_ansible_s_own_reason_is_kept_with_its_line(tmp_path, name, text, line, words):
    path = tmp_path / name
    path.write_text(text)
    (d,) = errors_of(path).diagnostics
    for word in words:
        assert word in d.message
    assert d.location.line == line and Path(d.location.file).name == name


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_hanging_inventory_script_is_stopped_with_its_children(tmp_path):
    pids = tmp_path / "pids"
    script = tmp_path / "inventory.sh"
    script.write_text(f"#!/bin/sh\nsleep 300 &\necho $$ $! > {pids}\nsleep 300\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    start = time.monotonic()
    with pytest.raises(InventoryError) as info:
        load_inventory(script, timeout=3)
    took = time.monotonic() - start
    assert "did not list the inventory within 3 s" in info.value.render()
    assert "stopped it and every process it started" in info.value.render()
    assert took < 60
    started = [int(p) for p in pids.read_text().split()]
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in started if _alive(p)], "processes of the inventory script outlived the time limit"


def test_the_time_limit_comes_from_the_environment(tmp_path):
    script = tmp_path / "inventory.sh"
    script.write_text("#!/bin/sh\nsleep 300\n")
    script.chmod(0o755)
    env = {**os.environ, "REPRO_INVENTORY_TIMEOUT": "2"}
    proc = subprocess.run([sys.executable, "-m", "repro", "bench", "--stack", str(ROOT / "stacks" / "cpu-tf215.yaml"),
                           "--hosts", str(script), "--dry-run"], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2 and "within 2 s" in proc.stderr and "Traceback" not in proc.stderr
