"""Property: whatever an inventory holds, repro gets its hosts or a located InventoryError, nothing else.

1,200 generated inventories per run (derandomized), YAML and INI, with variables inline, under group
`vars`, in group_vars/ and host_vars/ files: every variable of the inventory contract (docs/design.md)
gets valid values, values wrong for it (a launch key with spaces, a docker host starting with -H, an
interface with a `;`, slots of 10**30, a known_hosts that is a number, ...), values wrong everywhere
(newline, NUL, lone surrogate, Jinja, lists, NaN, a 5,000-digit integer) and random junk; host names
include ../../../../x and -oProxyCommand=x.

ansible-inventory takes about a second per call, so these cases run the code that handles its output
(`inventory_from_listing` on the JSON listing Ansible prints for the generated files, computed here) and
locate errors in the real files; tests/integration/test_inventory_input.py runs a sample of the same
cases end to end through ansible-inventory and checks that both paths agree.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given

from repro.hosts.inventory import Inventory
from tests.unit.fuzz_cases import SCALE, Tally, fuzz_settings, inventory_cases, inventory_property, write_inventory

pytestmark = pytest.mark.timeout(600)


def test_generated_inventories_give_hosts_or_located_errors():
    tally = Tally()
    outcomes = {"valid": 0, "invalid": 0}

    @fuzz_settings(1200)
    @given(inventory_cases())
    def case(inventory_case):
        with tempfile.TemporaryDirectory() as tmp:
            path = write_inventory(inventory_case, Path(tmp))
            result = inventory_property(inventory_case, path, tally)
            outcomes["valid" if isinstance(result, Inventory) else "invalid"] += 1

    case()
    assert tally.cases >= 1200 * SCALE
    assert not tally.unlocated, "errors without file:line:\n" + "\n".join(tally.unlocated[:10])
    # both outcomes are exercised, not only one
    assert outcomes["valid"] >= 50 and outcomes["invalid"] >= 300, outcomes
