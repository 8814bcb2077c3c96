"""`repro up` for real: build stacks/cpu-tf215.yaml on the debootstrapped Debian base, verify, lock, ship;
then archive the image and restore it into a second, empty engine, where `repro bench` runs from it.

The image is built once per session by the `cpu_image` fixture (tests/conftest.py), which provisions the
local engine, debian:12 and the Horovod wheelhouse first (minutes the first time on a machine, seconds
afterwards: Docker's layer cache and the wheelhouse's Horovod wheel), and reused by every test here and
in test_bench_cluster.py. GPU stacks cannot be built on this machine (no nvidia/cuda images, no GPU);
tests/unit/test_render.py covers their rendering. Shipping uses the session `cluster` fixture
(tests/cluster/fixtures.py); set REPRO_CLUSTER_NAME to keep it apart from another session's cluster.
How long `repro up` takes is measured by bench/up_noop.py, not asserted here.
"""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from repro.cli import main
from repro.image.build import BuildOptions, default_ca_bundle, plan_build
from repro.image.engine import image_id
from repro.manifest import load_stack
from repro.pipeline.up import up
from repro.results.store import Store
from tests.integration.cli import run_repro

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
CPU = ROOT / "stacks" / "cpu-tf215.yaml"


def variant(tmp_path: Path, name: str, body: str) -> Path:
    """A stack extending cpu-tf215 with `body` (YAML) on top."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"extends: {CPU}\n{body}")
    return path


def options() -> BuildOptions:
    return BuildOptions(ca_bundle=default_ca_bundle())


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="session")
def docker_client(local_engine):
    return local_engine


@pytest.fixture(scope="session")
def store(cpu_image) -> Store:
    """The store the session's first `repro up` of cpu-tf215 locked into."""
    return cpu_image.store


@pytest.fixture(scope="session")
def built(cpu_image):
    """The session's first `repro up` of cpu-tf215."""
    return cpu_image.result


# -- build, verify, lock -------------------------------------------------------------------------------------


def test_up_locks_exact_versions_and_horovod_build(built, store, docker_client):
    result = built
    lock = store.lock(load_stack(CPU).hash)
    assert lock == result.lock and result.verified
    assert lock.versions["tensorflow"] == "2.15.1"
    assert lock.versions["horovod"] == "0.28.1"
    assert lock.versions["os"] == "debian 12" and lock.versions["python"].startswith("3.11.")
    assert lock.versions["mpi"] == "openmpi 4.1.4"
    flags = lock.horovod_build
    assert flags["tensorflow"] is True and flags["mpi"] is True and flags["gloo"] is True and flags["nccl"] is False
    assert "tensorflow-cpu==2.15.1" in lock.pip_freeze and "horovod==0.28.1" in lock.pip_freeze
    assert lock.image.id == image_id(docker_client, lock.image.tag) == result.outcome.image_id
    assert lock.image.base_image == "debian:12" and lock.image.base_image_id
    assert lock.sshd.port == 50000 and lock.sshd.host_keys
    # the session's first `up` finds the tag already built on a reused machine: then it claims no build log
    # (the next test makes a build run and checks its log)
    assert lock.build.built == result.outcome.built
    if result.outcome.built:
        assert Path(lock.build.log).is_file()
        assert "Successfully built" in Path(lock.build.log).read_text()
    else:
        assert lock.build.log is None


def test_a_build_that_runs_writes_its_log_and_the_lock_names_it(built, docker_client, tmp_path):
    """A build that surely runs: a build argument the Dockerfile does not use gives a new tag, every layer
    from the cache of the session's first build."""
    options = BuildOptions(ca_bundle=default_ca_bundle(), build_args=(("REPRO_TEST_BUILD", tmp_path.name),))
    store = Store(tmp_path / "store")
    result = up(load_stack(CPU), store=store, options=options)
    try:
        assert result.outcome.built and result.verified
        lock = store.lock(load_stack(CPU).hash)
        assert lock.build.built and lock.image.tag != built.lock.image.tag
        log = Path(lock.build.log)
        assert log.is_file() and log.parent == store.logs_dir()
        text = log.read_text()
        assert f"# repro build of {lock.image.tag}" in text and "Successfully built" in text, text[-2000:]
    finally:
        docker_client.images.remove(result.lock.image.tag)


def test_second_up_builds_nothing(built, store):
    first = built
    logs = set(store.logs_dir().iterdir())
    again = up(load_stack(CPU), store=store, options=options())
    assert not again.outcome.built and again.outcome.image_id == first.outcome.image_id
    assert not again.verified and again.lock == store.lock(load_stack(CPU).hash)
    assert set(store.logs_dir().iterdir()) == logs  # no build log: no build ran


def test_image_sshd_config_is_valid_and_keys_match_the_lock(built, docker_client):
    result = built
    script = "/usr/sbin/sshd -t && cat /etc/ssh/ssh_host_*_key.pub && python -c 'import repro.workloads.cnn'"
    out = docker_client.containers.run(result.outcome.tag, ["sh", "-c", script], network_mode="none", remove=True)
    assert sorted(out.decode().strip().splitlines()) == sorted(result.lock.sshd.host_keys)


def test_image_mismatch_fails_naming_the_component_and_leaves_no_lock(built, store, tmp_path, capsys):
    # The wheelhouse's prebuilt Horovod has Gloo built in whatever HOROVOD_WITHOUT_GLOO says.
    path = variant(tmp_path, "cpu-tf215-nogloo", "horovod: {with_gloo: false}\n")
    code, _, err = cli(capsys, "up", str(path), "--store", str(store.root), "--quiet")
    assert code == 1, err
    assert "horovod with_gloo: pinned false, found Gloo built in" in err
    assert store.lock(load_stack(path).hash) is None


def test_dry_run_builds_nothing(base_image, docker_client, tmp_path, capsys):
    path = variant(tmp_path, "cpu-tf215-dry", "packages: {pip: [six==1.16.0]}\n")
    inventory = tmp_path / "inventory.yml"
    inventory.write_text("all:\n  hosts:\n    here:\n      ansible_connection: local\n")
    plan = plan_build(load_stack(path), options())
    images = {i.id for i in docker_client.images.list(all=True)}
    store = tmp_path / "store"
    code, out, _ = cli(capsys, "up", str(path), "--dry-run", "--store", str(store), "--hosts", str(inventory))
    assert code == 0
    assert f"image tag:   {plan.tag}" in out and "base image:  debian:12" in out
    assert "FROM debian:12" in out and "repro/workloads/cnn.py" in out
    assert "here (127.0.0.1): docker save | docker -H unix:///var/run/docker.sock load" in out
    assert image_id(docker_client, plan.tag) is None
    assert {i.id for i in docker_client.images.list(all=True)} == images
    assert not store.exists()


# -- errors ---------------------------------------------------------------------------------------------------


def test_no_engine_says_how_to_start_one(tmp_path, capsys):
    code, _, err = cli(capsys, "up", str(CPU), "--store", str(tmp_path / "s"), "--docker-host",
                       f"unix://{tmp_path}/no-engine.sock")
    assert code == 3
    assert "no Docker engine answers" in err and "local-docker.sh ensure" in err
    assert not (tmp_path / "s").exists()


def test_missing_base_image_says_how_to_provide_it(docker_client, tmp_path, capsys):
    path = variant(tmp_path, "cpu-absent-base", "base_image: debian:repro-absent-tag\n")
    code, _, err = cli(capsys, "up", str(path), "--store", str(tmp_path / "s"), "--quiet")
    assert code == 1
    assert "base image debian:repro-absent-tag is not in the Docker engine and cannot be pulled" in err
    assert "load it into the engine first" in err  # no Debian release repro's debootstrap knows
    assert not (tmp_path / "s").exists()


def test_failed_build_step_shows_the_step_and_its_output(base_image, store, tmp_path, capsys):
    path = variant(tmp_path, "cpu-bad-apt", "packages: {apt: [repro-no-such-package]}\n")
    code, _, err = cli(capsys, "up", str(path), "--store", str(store.root), "--quiet")
    assert code == 1
    assert re.search(r"failed at Step \d+/\d+ : RUN apt-get update -y && .*apt-get install", err), err
    assert "Unable to locate package repro-no-such-package" in err
    assert store.lock(load_stack(path).hash) is None


def test_two_builds_of_one_tag_on_one_engine_build_once(base_image, docker_client):
    """Two `repro up` of one stack at once (two shells, two CI jobs on one engine): one builds, the other waits
    for it and finds the tag."""
    import threading
    import uuid

    from repro.image.build import BuildPlan, build

    key = uuid.uuid4().hex[:16]
    plan = BuildPlan(stack="lock-test", stack_hash=key, image_hash=key, base_image="debian:12",
                     dockerfile=f"FROM debian:12\nRUN sleep 3 && echo {key} > /built\n", files=(), build_args=(),
                     key=key)
    outcomes, lines, errors = [], [], []

    def one() -> None:
        try:
            outcomes.append(build(plan, client=docker_client, progress=lines.append))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        assert errors == [] and len(outcomes) == 2
        assert sorted(o.built for o in outcomes) == [False, True]
        assert outcomes[0].image_id == outcomes[1].image_id == image_id(docker_client, plan.tag)
        assert f"waiting for another build of {plan.tag} on this engine to finish" in lines
    finally:
        if image_id(docker_client, plan.tag):
            docker_client.images.remove(plan.tag, force=True)


# -- shipping -------------------------------------------------------------------------------------------------


def _host_image(docker_host: str, ref: str) -> str | None:
    proc = subprocess.run(["docker", "-H", docker_host, "image", "inspect", "--format", "{{.Id}}", ref],
                          capture_output=True, text=True, timeout=60, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _locked_image(store: Store) -> tuple[str, str]:
    # read back what `repro up` locked: repro's workloads may change while the session runs (other work
    # in the checkout), which gives a new tag; the test follows whatever the CLI call built
    image = store.lock(load_stack(CPU).hash).image
    return image.tag, image.id


@pytest.mark.cluster
def test_up_ships_to_every_host_then_nothing(built, store, cluster, capsys):
    code, out, err = cli(capsys, "up", str(CPU), "--hosts", str(cluster.inventory), "--store", str(store.root),
                         "--quiet")
    assert code == 0, err
    tag, want = _locked_image(store)
    for host in cluster.hosts:
        assert _host_image(host.docker_host, tag) == want
        assert f"{host.name}: shipped" in out or f"{host.name}: already there" in out
    code, out, err = cli(capsys, "up", str(CPU), "--hosts", str(cluster.inventory), "--store", str(store.root),
                         "--quiet")
    assert code == 0, err
    assert _locked_image(store) == (tag, want)
    for host in cluster.hosts:
        assert f"{host.name}: already there" in out
    assert "shipped" not in out


@pytest.mark.cluster
def test_unreachable_host_fails_by_name_and_others_complete(built, store, cluster, tmp_path, capsys):
    text = cluster.inventory.read_text()
    lost = cluster.host("h1").address.rsplit(".", 1)[0] + ".99"  # in the cluster's test subnet; nothing there
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(text.replace("      hosts:\n", "      hosts:\n"
                                      f"        lost:\n          ansible_host: {lost}\n"
                                      f"          ansible_user: root\n"
                                      f"          ansible_ssh_private_key_file: {cluster.key}\n"
                                      f"          repro_known_hosts: {cluster.known_hosts}\n", 1))
    code, out, err = cli(capsys, "up", str(CPU), "--hosts", str(inventory), "--store", str(store.root), "--quiet")
    assert code == 1
    # no route, or no answer within the connect timeout: which one depends on the kernel's ARP timing
    assert re.search(rf"lost: failed: host lost \({re.escape(lost)}\) (is unreachable|does not answer)", out), out
    assert "the image did not reach 1 of 3 hosts: lost" in err
    tag, want = _locked_image(store)
    for host in cluster.hosts:
        assert f"{host.name}: already there" in out or f"{host.name}: shipped" in out
        assert _host_image(host.docker_host, tag) == want


# -- archive and restore ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def empty_engine():
    """A one-host test cluster whose Docker engine starts EMPTY (no base image), torn down afterwards."""
    from tests.cluster.fixtures import (
        ClusterCommandError,
        cluster_down,
        cluster_up,
        sibling_name,
        skip_or_fail,
        unavailable_reason,
    )

    reason = unavailable_reason(docker=True)
    if reason:
        skip_or_fail(reason)
    name = sibling_name(os.environ.get("REPRO_CLUSTER_NAME") or "rc", "ar")
    previous = os.environ.get("REPRO_CLUSTER_BASE_IMAGE")
    os.environ["REPRO_CLUSTER_BASE_IMAGE"] = ""  # cluster.sh: load no base image into the engine
    try:
        try:
            up, _ = cluster_up(name, 1, docker=True)
        except ClusterCommandError as exc:
            pytest.fail(str(exc), pytrace=False)
        finally:
            if previous is None:
                os.environ.pop("REPRO_CLUSTER_BASE_IMAGE")
            else:
                os.environ["REPRO_CLUSTER_BASE_IMAGE"] = previous
        yield up
    finally:
        cluster_down(name)


@pytest.fixture(scope="module")
def archived(built, store, tmp_path_factory) -> Path:
    """An archive of the CPU stack's locked image, written by `repro archive`."""
    path = tmp_path_factory.mktemp("archive") / "cpu-tf215.repro.tar"
    run_repro("archive", str(CPU), "-o", str(path), "--store", str(store.root))
    return path


def _engine_images(docker_host: str) -> list[str]:
    out = subprocess.run(["docker", "-H", docker_host, "images", "-a", "-q", "--no-trunc"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    return sorted(set(out.split()))


@pytest.mark.cluster
def test_archive_restores_into_an_empty_engine_and_bench_runs_without_a_build(archived, store, empty_engine,
                                                                              tmp_path):
    host = empty_engine.hosts[0]
    assert _engine_images(host.docker_host) == []
    lock = store.lock(load_stack(CPU).hash)
    restored = tmp_path / "restored-store"
    out = run_repro("restore", str(archived), "--docker-host", host.docker_host, "--store", str(restored)).stdout
    assert "loaded, verified against its lock" in out
    assert _engine_images(host.docker_host) == [lock.image.id]  # the image, and nothing else
    assert Store(restored).lock(lock.stack.hash) == lock
    stack_file = restored / "stacks" / f"cpu-tf215-{lock.stack.hash}.yaml"
    assert load_stack(stack_file).hash == lock.stack.hash
    # bench from the restored image: no `repro up`, no build, the engine holds only what was restored (the probe
    # workload: the image's content is proven by its id, which the restore verified against the lock)
    run_repro("bench", "--stack", str(stack_file), "--hosts", str(empty_engine.inventory), "--runtime", "docker",
              "--workload", "probe", "--workers", "1", "--warmup-steps", "1", "--steps", "3", "--batch-size", "8",
              "--repeats", "1", "--store", str(restored))
    (record,) = Store(restored).records()
    assert record.status == "ok" and record.runtime == "docker" and record.image.image.id == lock.image.id
    assert _engine_images(host.docker_host) == [lock.image.id]
    # and `repro up` against that engine finds the image: nothing is built, the lock stands
    again = up(load_stack(CPU), store=Store(restored), options=BuildOptions(ca_bundle=default_ca_bundle(),
                                                                           docker_host=host.docker_host))
    assert not again.outcome.built and not again.verified and again.outcome.image_id == lock.image.id
    # restoring again loads nothing
    assert "already in the engine" in run_repro("restore", str(archived), "--docker-host", host.docker_host,
                                                "--store", str(restored)).stdout


@pytest.mark.parametrize("member", ["lock.json", "image.tar"])
def test_tampered_archive_is_refused_and_nothing_is_loaded(archived, member, tmp_path):
    with tarfile.open(archived) as tar:
        info = tar.getmember(member)
    at = info.offset_data + info.size // 2
    with archived.open("r+b") as fh:  # flip one byte in place (an archive copy would be 2 GB), then put it back
        fh.seek(at)
        original = fh.read(1)
        fh.seek(at)
        fh.write(bytes([original[0] ^ 0x20]))
    try:
        proc = run_repro("restore", str(archived), "--docker-host", f"unix://{tmp_path}/no-engine.sock", "--store",
                         str(tmp_path / "store"), check=False)
    finally:
        with archived.open("r+b") as fh:
            fh.seek(at)
            fh.write(original)
    assert proc.returncode == 2, proc.stderr
    assert f"is damaged or was changed: member {member} has sha256" in proc.stderr
    assert "nothing was restored" in proc.stderr and not (tmp_path / "store").exists()


def test_up_archive_and_restore_print_their_results_as_json(built, store, archived, tmp_path):
    """`--format json` (issue 39 item 1): the shapes of docs/design.md, "JSON output of the stack and image
    commands"; progress goes to stderr, stdout is the document alone."""
    import json

    again = json.loads(run_repro("up", str(CPU), "--store", str(store.root), "--format", "json").stdout)
    assert again["tag"] == built.outcome.tag and again["image_id"] == built.outcome.image_id
    assert again["built"] is False and again["build_seconds"] is None and again["verified"] is False
    assert again["lock"] == built.lock_path and again["versions"]["horovod"] and again["hosts"] == []
    wrote = json.loads(run_repro("archive", str(CPU), "-o", str(tmp_path / "a.tar"), "--store", str(store.root),
                                 "--format", "json").stdout)
    assert wrote["path"] == str(tmp_path / "a.tar") and wrote["size"] == (tmp_path / "a.tar").stat().st_size
    assert {"image.tar", "lock.json"} <= set(wrote["members"]) and wrote["image_id"] == built.outcome.image_id
    restored = json.loads(run_repro("restore", str(archived), "--store", str(tmp_path / "restored"),
                                    "--format", "json").stdout)
    assert restored["loaded"] is False and restored["image_id"] == built.outcome.image_id  # the engine held it
    assert Path(restored["lock"]).is_file() and Path(restored["stack_path"]).is_file()
