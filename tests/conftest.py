"""Shared pytest configuration: session fixtures that provision what the integration tests use.

Every engine, image, cache and cluster a test needs comes from a fixture that makes it exist whatever
ran before (in this session or on this machine), so tests pass in any order, alone, and on a new machine:

  local_engine  this machine's Docker engine (DOCKER_HOST, else the default socket); started by
                tests/cluster/local-docker.sh when none answers
  base_rootfs   the cached debootstrap tarball every engine's debian:12 is imported from
  base_image    debian:12 in the local engine, built from Debian's archive when absent (repro/image/base.py)
  wheelhouse    the Horovod wheel that image builds install (scripts/setup.sh wheelhouse, once per machine)
  cpu_image     stacks/cpu-tf215.yaml built, verified and locked into a session store, once per session
  readme_job    the README's main job (real TensorFlow on this machine, 1 and 2 workers), once per session
  cluster       hosts h1 and h2 with sshd and engines holding debian:12 (tests/cluster/fixtures.py)

`pytest --reverse` runs the collected tests in reverse order (a check that none relies on an earlier one).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

pytest.register_assert_rewrite("tests.cluster.fixtures")  # imported here, before pytest_plugins loads it

from tests.cluster.fixtures import skip_or_fail  # noqa: E402

if TYPE_CHECKING:
    import docker

    from repro.pipeline.up import UpResult
    from repro.results.store import Store

pytest_plugins = ["tests.cluster.fixtures"]

ROOT = Path(__file__).resolve().parents[1]
CPU_STACK = ROOT / "stacks" / "cpu-tf215.yaml"
LOCAL_DOCKER = ROOT / "tests" / "cluster" / "local-docker.sh"
BASE_REF = "debian:12"
WHEELHOUSE_TIMEOUT_S = 3600  # a fresh machine compiles Horovod (minutes on 2 cores)


def pytest_configure(config: pytest.Config) -> None:
    # The tools of the tests' own environment (ansible-playbook, which repro prepare runs; ansible-lint) are
    # found on PATH, as when scripts/test.sh activates it, also under a plain `.venv/bin/python -m pytest`.
    tools = str(Path(sys.executable).parent)
    if tools not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join(filter(None, [tools, os.environ.get("PATH")]))
    _default_sigint()
    _register_phase_times(config)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--reverse", action="store_true", default=False,
                     help="run the collected tests in reverse order (proves no test relies on an earlier one)")


@pytest.hookimpl(trylast=True)  # after pytest grouped the tests by their higher-scoped fixtures' parameters
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    check_worker_groups(items)
    if config.getoption("--reverse"):
        items.reverse()


# Under pytest-xdist (`-n 2 --dist loadgroup`, as scripts/test.sh runs the suite) every worker is a session of
# its own: a session fixture runs once per worker that uses it. A test cluster exists once per machine under its
# name, so every module that uses one runs on one worker: the modules of a cluster fixture form one group, those
# sharing the README job another (it runs once), any other integration module is a group of its own (its module
# fixtures run once), and unit tests go one by one to whichever worker is free. The table is checked against the
# fixtures each module really uses when the tests are collected (`check_worker_groups`). (pytest-xdist's own
# `xdist_group` marks cannot carry this: they rename the tests' ids, which pytest 9 no longer lets them do.)
SHARED_FIXTURE_GROUPS = (("slurm_cluster", "slurm-cluster"), ("cluster", "ssh-cluster"), ("readme_job", "readme-job"))
WORKER_GROUPS = {
    "test_bench_cluster.py": "ssh-cluster", "test_cluster.py": "ssh-cluster", "test_image.py": "ssh-cluster",
    "test_conditions_cluster.py": "ssh-cluster", "test_kube_torch.py": "ssh-cluster", "test_prepare.py": "ssh-cluster",
    "test_watch.py": "ssh-cluster",
    "test_bench_slurm.py": "slurm-cluster", "test_slurm_cluster.py": "slurm-cluster",
    "test_bench_local.py": "readme-job", "test_compare_real.py": "readme-job",
}


def worker_group(nodeid: str) -> str:
    """The pytest-xdist work unit of a test: its integration module's group, else the test alone."""
    path = nodeid.split("::", 1)[0]
    if not path.startswith("tests/integration/"):
        return nodeid
    name = path.rsplit("/", 1)[-1]
    return WORKER_GROUPS.get(name, path)


def needed_group(fixtures: set[str]) -> str | None:
    """The group a module must be in for the shared fixtures its tests use (None: any)."""
    groups = [group for fixture, group in SHARED_FIXTURE_GROUPS if fixture in fixtures]
    if "slurm-cluster" in groups and "ssh-cluster" in groups:
        raise ValueError("it uses both test clusters; split it (each cluster runs on one pytest-xdist worker)")
    return groups[0] if groups else None


def check_worker_groups(items: list[pytest.Item]) -> None:
    """Refuse an integration module whose shared fixtures WORKER_GROUPS does not put on their one worker."""
    modules: dict[Path, set[str]] = {}
    for item in items:
        modules.setdefault(item.path, set()).update(getattr(item, "fixturenames", ()))
    for path, fixtures in modules.items():
        if "integration" not in path.parts:
            continue
        try:
            wanted = needed_group(fixtures)
        except ValueError as exc:
            raise pytest.UsageError(f"{path}: {exc}") from None
        if wanted is not None and WORKER_GROUPS.get(path.name) != wanted:
            raise pytest.UsageError(f"{path}: its tests use the fixture of group {wanted!r}; add "
                                    f"\"{path.name}\": \"{wanted}\" to WORKER_GROUPS in tests/conftest.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """--dist loadgroup with the groups above (xdist's loadscope scheduling, scopes from `worker_group`)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return GroupScheduling(config, log)


class PhaseTimes:
    """Time spent per phase of the suite (its directory under tests/: unit, integration), printed before
    pytest's summary line: scripts/test.sh reports setup and lint, this the rest. Under pytest-xdist the tests'
    times are summed over the workers, and the span from the phase's first test start to its last test end
    is printed beside them."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.seconds: dict[str, float] = {}
        self.tests: dict[str, set[str]] = {}
        self.spans: dict[str, tuple[float, float]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        parts = report.nodeid.split("/")
        phase = parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"
        self.seconds[phase] = self.seconds.get(phase, 0.0) + report.duration
        self.tests.setdefault(phase, set()).add(report.nodeid)
        start, stop = getattr(report, "start", None), getattr(report, "stop", None)
        if start is not None and stop is not None:
            first, last = self.spans.get(phase, (start, stop))
            self.spans[phase] = (min(first, start), max(last, stop))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.seconds:
            return
        terminalreporter.section("time per phase")
        for phase in sorted(self.seconds, key=lambda p: ("unit", "integration").index(p)
                            if p in ("unit", "integration") else 2):
            line = f"{phase}: {self.seconds[phase]:.0f} s in {len(self.tests[phase])} tests (setup, call and teardown"
            if self.workers > 1 and phase in self.spans:
                first, last = self.spans[phase]
                line += f", summed over {self.workers} workers; first start to last end: {last - first:.0f} s"
            terminalreporter.write_line(line + ")")


def _default_sigint() -> None:
    """Python's own Ctrl-C handler in this pytest process, should it have started with SIGINT ignored, as every
    command started with `&` by a non-interactive shell does (scripts/test.sh runs pytest so) and as pytest-xdist's
    workers inherit. An ignored signal stays ignored across exec: every process a test starts (repro, mpirun, a
    workload, a pytest child that interrupts itself) would ignore Ctrl-C, unlike under a terminal. (Before, a test
    that ran repro's CLI in-process happened to set a handler first; a worker that ran no such test did not.)"""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _register_phase_times(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller sums its reports
        return
    workers = getattr(config.option, "numprocesses", None) or 0
    config.pluginmanager.register(PhaseTimes(workers if isinstance(workers, int) else 0), "repro-phase-times")


@pytest.fixture(scope="session")
def local_engine() -> Iterator[docker.DockerClient]:
    """A client of the local Docker engine; the engine is started (local-docker.sh ensure) if none answers."""
    from repro.errors import BackendUnavailable
    from repro.image.engine import engine

    try:
        client = engine()
    except BackendUnavailable:
        started = subprocess.run(["bash", str(LOCAL_DOCKER), "ensure"], capture_output=True, text=True,
                                 timeout=180, check=False)
        try:
            client = engine()
        except BackendUnavailable as exc:
            skip_or_fail(f"{exc.message}; local-docker.sh ensure: {started.stderr.strip()[-500:]}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_rootfs() -> Path:
    """The debootstrap root filesystem tarball of debian:12 in the repro cache, built if absent."""
    from repro.errors import ReproError
    from repro.image.base_recipe import recipe_for
    from repro.image.rootfs import ensure_rootfs_tarball

    try:
        tarball, _ = ensure_rootfs_tarball(recipe_for(BASE_REF))
    except ReproError as exc:
        skip_or_fail(f"cannot build the {BASE_REF} root filesystem: {exc.render()}")
    return tarball


@pytest.fixture(scope="session")
def base_image(local_engine: docker.DockerClient, base_rootfs: Path) -> str:
    """The id of debian:12 in the local engine, imported from the debootstrap tarball if absent."""
    from repro.image.base import ensure_base_image

    return ensure_base_image(BASE_REF)


@pytest.fixture(scope="session")
def wheelhouse() -> Path:
    """The wheelhouse directory holding the Horovod wheel the CPU stack's image installs."""
    from repro.image.build import wheelhouse_dir
    from repro.manifest import load_stack

    stack = load_stack(CPU_STACK).stack
    wanted = f"horovod-{stack.horovod.version}-*.whl"

    def found() -> Path | None:
        where = wheelhouse_dir(stack)
        return where if where is not None and any(where.glob(wanted)) else None

    if found() is None:
        # the same code path as scripts/setup.sh: build it against this environment's TensorFlow
        env_python = {"REPRO_VENV": sys.prefix, "REPRO_PYTHON_BIN": sys.executable}
        proc = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "wheelhouse"], capture_output=True,
                              text=True, timeout=WHEELHOUSE_TIMEOUT_S, check=False,
                              env={**os.environ, **env_python})
        if proc.returncode != 0 or found() is None:
            skip_or_fail(f"no {wanted} in the wheelhouse and `scripts/setup.sh wheelhouse` did not make one "
                         f"(exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    where = found()
    assert where is not None
    return where


@dataclass(frozen=True)
class BuiltImage:
    """The CPU stack's image as this session's first `repro up` left it: its result and the store it locked into."""

    result: UpResult
    store: Store


@pytest.fixture(scope="session")
def cpu_image(base_image: str, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> BuiltImage:
    """stacks/cpu-tf215.yaml built (skipped when the engine has its tag), verified and locked, once per session."""
    from repro.image.build import BuildOptions, default_ca_bundle
    from repro.manifest import load_stack
    from repro.pipeline.up import up
    from repro.results.store import Store

    store = Store(tmp_path_factory.mktemp("cpu-image-store"))
    result = up(load_stack(CPU_STACK), store=store, options=BuildOptions(ca_bundle=default_ca_bundle()),
                progress=lambda line: None)
    return BuiltImage(result, store)


@dataclass(frozen=True)
class ReadmeJob:
    """The README's main job as run once per session: its store (read it; copy it to add runs) and its output."""

    store: Path
    proc: subprocess.CompletedProcess[str]
    settings: tuple[str, ...]  # the sweep's steps and batch size, for runs meant to line up with these


@pytest.fixture(scope="session")
def readme_job(tmp_path_factory: pytest.TempPathFactory) -> ReadmeJob:
    """stacks/cpu-tf215.yaml benchmarked on this machine with real TensorFlow and Horovod: 1 and 2 workers, the
    default 3 runs of each, few steps. Shared by the tests of the README's job and by compare's real-TensorFlow
    side, which copies the store and adds only the other stack's runs (10 real runs in a session, not 14)."""
    from tests.integration.cli import run_repro

    store = tmp_path_factory.mktemp("readme-job")
    settings = ("--warmup-steps", "1", "--steps", "4", "--batch-size", "8")
    proc = run_repro("bench", "--stack", str(CPU_STACK), "--hosts", str(ROOT / "inventories" / "localhost"),
                     "--workers", "1,2", *settings, "--store", str(store))
    return ReadmeJob(store, proc, settings)
