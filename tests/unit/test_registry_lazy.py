"""A lazily registered plug-in looked up by several threads at once while its module imports (repro.registry).

Seen on a new machine: the host checks run one thread per host, both asked for the framework `pytorch` while its
module was being imported, and the second got "unknown framework 'pytorch': expected one of tensorflow, pytorch".
"""

from __future__ import annotations

import sys
import threading

import pytest

from repro.errors import InputError
from repro.registry import Registry

SLOW_MODULE = """\
import time
time.sleep(0.5)  # an import that takes a while (torch, TensorFlow)


class Plugin:
    '''a plug-in whose module is slow to import'''
"""


@pytest.fixture
def slow_module(tmp_path, monkeypatch):
    name = f"repro_slow_plugin_{id(tmp_path)}"
    (tmp_path / f"{name}.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_threads_that_ask_while_the_module_imports_all_get_the_plug_in(slow_module):
    registry: Registry[object] = Registry("toy")
    registry.lazy("slow", f"{slow_module}:Plugin", help="slow", instance=True)
    got: list[object] = []
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            got.append(registry.get("slow"))
        except BaseException as exc:  # the test reports whatever a thread met
            failed.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not failed, failed
    assert len(got) == 4 and all(item is got[0] for item in got)  # one instance, imported once
    assert registry.names() == ("slow",) and "slow" in registry


def test_a_name_never_registered_is_still_an_input_error_naming_the_known_ones(slow_module):
    registry: Registry[object] = Registry("toy")
    registry.lazy("slow", f"{slow_module}:Plugin", help="slow", instance=True)
    with pytest.raises(InputError, match="unknown toy 'slwo': expected one of slow"):
        registry.get("slwo")
