"""Property: generated hostile input gives a value or a ReproError, never another exception (issue 26).

The boundaries the manifest and inventory fuzzers do not reach: every command's argument parser (parsing
only: nothing runs), the Slurm site variables, YAML inventories read without Ansible (inventory_yaml), the
store reader (records mutated field by field, and records nested thousands deep, with lists of 300,000 items
or lone surrogates: issue 38), the site files (repro.toml) and what a software probe prints (repro capture, the
host runtime's check). Bounded to a few seconds in the suite; REPRO_FUZZ_SCALE
multiplies the example counts for a longer run (as bench/fuzz_inputs.py does).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from repro.cli import build_parser
from repro.errors import ReproError
from repro.hosts.inventory import Host, inventory_from_listing
from repro.hosts.inventory_yaml import listing
from repro.launch.schedulers.slurm_site import FLAGS, site_from
from repro.results.record import RankResult, RunRecord, Settings, StackRef
from repro.results.store import Store
from tests.unit.fuzz_cases import (
    DOCUMENTS,
    HOSTILE_TEXT,
    JUNK,
    fuzz_settings,
    probe_outputs,
    record_shapes,
    site_files,
    time_limit,
)

pytestmark = pytest.mark.timeout(300)

HOSTILE = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=40),
                    st.sampled_from(["-", "--", "-h", "--dry-run", "\x00", "../../x", "a" * 300, "1e400", "nan",
                                     "١٢:٠٠", "²", "--qos=a --nodes=9", "https://u:p@h/x", "$(id)", "@/dev/zero"]))


def _commands() -> dict[str, list[str]]:
    """Each (sub)command's name path and the option strings it takes, from the parser itself."""
    import argparse

    out: dict[str, list[str]] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        options = [s for a in parser._actions for s in a.option_strings]
        out[" ".join(path)] = options
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return out


COMMANDS = _commands()


@st.composite
def argv_cases(draw) -> list[str]:
    command = draw(st.sampled_from(sorted(c for c in COMMANDS if c)))
    options = [o for o in COMMANDS[command] if o not in ("-h", "--help", "--version")] or ["--x"]
    words = draw(st.lists(st.one_of(st.sampled_from(options), HOSTILE), max_size=8))
    return [*command.split(), *words]


def test_every_argument_parser_takes_hostile_argv_without_an_internal_error():
    parser = build_parser()

    @fuzz_settings(300)
    @given(argv_cases())
    def case(argv):
        with time_limit():
            try:
                parser.parse_args(argv)
            except SystemExit as exc:  # argparse's refusal: exit 2 with the reason
                assert exc.code in (0, 2), argv

    case()


SITE_VARS = sorted({*FLAGS, "repro_slurm_gpus_per_node", "repro_slurm_submit_host", "repro_slurm_conf",
                    "repro_slurm_workdir"})


def test_every_slurm_site_variable_takes_hostile_values_without_an_internal_error():
    @fuzz_settings(400)
    @given(st.dictionaries(st.sampled_from(SITE_VARS), st.one_of(HOSTILE, JUNK, DOCUMENTS), min_size=1, max_size=3),
           st.booleans())
    def case(values, as_flags):
        hosts = (Host("n1", "10.0.0.1", vars={} if as_flags else dict(values)), Host("n2", "10.0.0.2"))
        with time_limit(), contextlib.suppress(ReproError):
            site_from(hosts, dict(values) if as_flags else {})

    case()


def test_yaml_inventories_read_without_ansible_give_hosts_or_errors():
    @fuzz_settings(150)
    @given(st.one_of(DOCUMENTS, st.dictionaries(st.sampled_from(["all", "workers", "vars", "hosts", "children"]),
                                                DOCUMENTS, max_size=3)),
           st.sampled_from(["hosts.yml", "group_vars/all.yml", "host_vars/n1.yml"]))
    def case(document, where):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "hosts.yml").write_text("all:\n  hosts:\n    n1: {ansible_host: 10.0.0.1}\n")
            target = root / where
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                text = yaml.safe_dump(document, allow_unicode=True)
            except (yaml.YAMLError, ValueError, RecursionError):
                return
            target.write_text(text, encoding="utf-8", errors="surrogatepass")
            with time_limit(), contextlib.suppress(ReproError):
                inventory_from_listing(listing(root), root)

    case()


GOOD = RunRecord(id="20240501T000000Z-00000001", created="2024-05-01T00:00:00+00:00", status="ok",
                 stack=StackRef(name="a", hash="a00000000000"),
                 settings=Settings(workload="cnn", model="resnet50", batch_per_worker=32, workers=1),
                 ranks=[RankResult(rank=0, step_times=[0.1] * 5, items_per_step=32)]).model_dump(mode="json")


def _paths(tree, prefix=()):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield (*prefix, i)
            yield from _paths(v, (*prefix, i))


PATHS = list(_paths(GOOD))


def test_the_store_reader_skips_any_mutated_record_and_keeps_the_others():
    @fuzz_settings(60)
    @given(st.lists(st.tuples(st.sampled_from(PATHS), st.one_of(JUNK, DOCUMENTS, st.integers(-10**30, 10**30))),
                    min_size=1, max_size=3))
    def case(edits):
        data = json.loads(json.dumps(GOOD))
        for path, value in edits:
            node = data
            try:
                for key in path[:-1]:
                    node = node[key]
                node[path[-1]] = value
            except (KeyError, IndexError, TypeError):
                continue
        data["id"] = "20240501T000001Z-00000002"
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "store", warn=lambda text: None)
            store.put(RunRecord.model_validate(GOOD))
            folder = store.runs / GOOD["stack"]["hash"]
            (folder / "20240501T000001Z-00000002.json").write_text(json.dumps(data))
            with time_limit():
                ids = [s.id for s in Store(store.root, warn=lambda text: None).summaries()]
            assert GOOD["id"] in ids

    case()


def test_a_record_nested_deep_huge_or_not_utf8_is_skipped_with_its_name_and_the_others_read():
    @fuzz_settings(40)
    @given(st.sampled_from([p for p in PATHS if p != ("id",)]), record_shapes())
    def case(path, drawn):
        hostile, shape = drawn
        data = json.loads(json.dumps(GOOD))
        data["id"] = "20240501T000001Z-00000002"
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = "@SHAPE@"
        text = json.dumps(data).replace('"@SHAPE@"', shape)
        warned: list[str] = []
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "store", warn=lambda text: None)
            store.put(RunRecord.model_validate(GOOD))
            bad = store.runs / GOOD["stack"]["hash"] / "20240501T000001Z-00000002.json"
            bad.write_text(text)
            with time_limit():
                again = Store(store.root, warn=warned.append)
                summaries = again.summaries()
                records = again.read_all(summaries)
            ids = [s.id for s in summaries]
            assert GOOD["id"] in ids and GOOD["id"] in [r.id for r in records]
            if hostile:
                assert "20240501T000001Z-00000002" not in ids
                assert any(str(bad) in w for w in warned), warned

    case()


def test_site_files_give_settings_or_an_error_at_their_line():
    from repro.launch.schedulers.kube_site import config_settings
    from repro.resources import read_config

    @fuzz_settings(200)
    @given(site_files())
    def case(raw):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "repro.toml"
            path.write_bytes(raw)
            for read in (lambda: read_config(path), lambda: config_settings([path])):
                with time_limit():
                    try:
                        read()
                    except ReproError as exc:
                        head = exc.message.split(": ", 1)[0]
                        assert head.startswith(f"{path}:") and head.rsplit(":", 1)[1].isdigit(), exc.message

    case()


def test_whatever_a_probe_prints_gives_software_or_a_probe_error_and_no_yaml_from_it():
    from repro.manifest.capture import manifest_from
    from repro.manifest.probe_output import ProbeOutputError, software_from_output

    keys = {"description", "os", "driver", "cuda", "mpi", "python", "tensorflow", "pytorch", "horovod", "benchmark"}

    @fuzz_settings(300)
    @given(probe_outputs())
    def case(raw):
        with time_limit():
            try:
                sw = software_from_output(raw)
            except ProbeOutputError as exc:
                assert str(exc) and "\n" not in str(exc)
                return
            try:
                captured = manifest_from(sw, framework="pytorch" if sw.framework("pytorch").version else None)
            except ReproError:
                return
            written = yaml.safe_load(captured.to_yaml("header"))
            assert set(written) <= keys and "injected" not in json.dumps(written), written

    case()
