"""`repro bench --scheduler kubernetes` (pure): the rendered TrainJob / ClusterTrainingRuntime / MPIJob (golden
files), their offline checks (Trainer's API types, the pod templates against the Kubernetes schema, the CRDs'
create-time CEL rules), the site settings, and refusals before anything is submitted.

After an intended change of a manifest, accept the new files with:

    REPRO_UPDATE_GOLDEN=1 python -m pytest tests/unit/test_kubernetes.py
"""

from __future__ import annotations

import copy
import os
from functools import cache, partial
from pathlib import Path

import pytest
import yaml

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.launch.nccl_files import point_dir
from repro.launch.placement import place
from repro.launch.plan import PlanContext
from repro.launch.points import SweepSpec, expand
from repro.launch.schedulers import SCHEDULERS, kube_check, kube_render
from repro.launch.schedulers.kube_crds import json_schema, load_crds
from repro.launch.schedulers.kube_render import KubeJob
from repro.launch.schedulers.kube_site import KubeSite, Toleration
from repro.launch.schedulers.kubernetes import KubePlan, Kubernetes
from repro.manifest import load_stack
from repro.workloads.catalog import spec_of
from tests import golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "kubernetes"
TAG = "repro/stack:69584d3bcf4ba9e5"
SITE_VARS = {"repro_k8s_namespace": "ml", "repro_k8s_registry": "registry.site:5000",
             "repro_k8s_node_selector": {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"},
             "repro_k8s_tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
             "repro_k8s_image_pull_secret": "site-registry", "repro_k8s_service_account": "trainer"}
SMALL = {"allreduce": {}, "cnn": {"steps": 3, "warmup_steps": 1}, "tta": {},
         "tf_cnn_benchmarks": {"steps": 3, "warmup_steps": 1}}
STACKS = sorted(p.name for p in (ROOT / "stacks").glob("*.yaml"))

assert_golden = partial(golden.assert_golden, GOLDEN)


def cluster(*, slots: int = 2, gpus: int = 0, path: str = "site.yml", **extra) -> Inventory:
    """Two nodes of a Kubernetes cluster, as an inventory of the site names them."""
    hosts = tuple(Host(name=f"node{i}", address=f"10.0.0.{i}", slots=slots, gpus=gpus,
                       vars=dict(SITE_VARS, **extra)) for i in (1, 2))
    return Inventory(path, hosts)


@cache
def stack_file(name: str):
    return load_stack(ROOT / "stacks" / name)


def kube_plan(*, stack: str = "cpu-tf215.yaml", workload: str = "allreduce", workers: int = 4,
              inventory: Inventory | None = None, flags: dict | None = None, env: dict | None = None,
              run_id: str = "0123abcd") -> KubePlan:
    inventory = inventory or cluster()
    loaded = stack_file(stack)
    spec = SweepSpec(workload=workload, workers=(workers,), **SMALL.get(workload, {}))
    point = expand(spec, loaded.stack)[0]
    scheduler = Kubernetes().configure(inventory, flags or {}, 1800.0)
    scheduler.check("docker", "mpirun")
    ctx = PlanContext(run_id=run_id, stack_env=dict(env if env is not None else loaded.stack.env),
                      gpu=loaded.stack.gpu, image=TAG, ssh_port=loaded.stack.container.ssh_port, python="python3",
                      launcher="mpirun", nccl_dir=point_dir(point, gpu=loaded.stack.gpu, run_id=run_id,
                                                                 framework=loaded.stack.framework),
                      framework=loaded.stack.framework)
    return scheduler.plan(point, place(inventory, workers), "docker", ctx)


def objects(plan: KubePlan) -> dict[str, dict]:
    return {o["kind"]: copy.deepcopy(o) for o in plan.objects}


# ---------------------------------------------------------------- rendering


def test_the_scheduler_is_registered_and_takes_site_settings():
    assert "kubernetes" in SCHEDULERS.names()
    assert isinstance(SCHEDULERS.get("kubernetes"), Kubernetes)


@pytest.mark.parametrize("kind", ["trainjob", "mpijob"])
def test_a_tf_horovod_point_renders_as_its_golden_manifest(kind):
    plan = kube_plan(flags={"repro_k8s_kind": kind})
    assert_golden(f"allreduce-{kind}.yaml", plan.manifest)


def test_a_gpu_point_asks_for_one_gpu_per_rank_in_the_node_pods():
    plan = kube_plan(stack="tf215-cuda122.yaml", workload="cnn", inventory=cluster(gpus=2))
    assert_golden("cnn-gpu-trainjob.yaml", plan.manifest)
    runtime = objects(plan)["ClusterTrainingRuntime"]
    node, launcher = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    pod = node["template"]["spec"]["template"]["spec"]["containers"][0]
    assert pod["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    assert "resources" not in launcher["template"]["spec"]["template"]["spec"]["containers"][0]
    assert runtime["metadata"]["name"].endswith("-2gpu")  # another GPU count is another runtime


def test_a_torch_point_renders_trainers_torch_policy():
    job = KubeJob(name="repro-0123abcd", run_id="0123abcd", policy="torch", image="registry.site:5000/" + TAG,
                  command=("torchrun", "-m", "repro.workloads.torch_ddp", "--steps", "3"),
                  env=(("PYTHONUNBUFFERED", "1"),), nodes=2, procs_per_node=4, gpus_per_pod=4,
                  site=KubeSite(namespace="ml"))
    found = kube_render.render(job)
    assert_golden("torch-trainjob.yaml", kube_render.to_yaml(found))
    runtime, trainjob = found
    assert list(runtime["spec"]["mlPolicy"]) == ["numNodes", "torch"]
    assert trainjob["spec"]["trainer"]["command"][0] == "torchrun"
    # PET_* are the torch plugin's to inject: repro must not set them (Trainer refuses reserved names)
    assert not any(e["name"].startswith("PET_") for e in trainjob["spec"]["trainer"]["env"])
    assert trainjob["spec"]["trainer"]["resourcesPerNode"] == {"limits": {"nvidia.com/gpu": 4}}
    assert kube_check.problems(found) == []


def test_the_launcher_reads_the_operators_hostfile_and_checks_the_nodes_host_key():
    trainer = objects(kube_plan())["TrainJob"]["spec"]["trainer"]
    command = trainer["command"]
    assert command[:2] == ["/bin/sh", "-c"] and command[3:5] == ["repro-launcher", kube_render.SSH_MOUNT]
    mpirun = command[5:]
    assert mpirun[0] == "mpirun" and "-H" not in mpirun and "--hostfile" not in mpirun  # OMPI_MCA_orte_default_hostfile
    assert mpirun[mpirun.index("-np") + 1] == "4"
    rsh = mpirun[mpirun.index("plm_rsh_args") + 1]
    assert "-p 2222" in rsh and "StrictHostKeyChecking=yes" in rsh
    assert "StrictHostKeyChecking=no" not in yaml.safe_dump(trainer)
    assert trainer["numNodes"] == 2 and trainer["numProcPerNode"] == 2


def test_every_pod_carries_the_run_label_and_the_sites_pod_settings():
    trainjob = objects(kube_plan(run_id="feedbeef"))["TrainJob"]
    assert trainjob["metadata"]["labels"][kube_render.RUN_LABEL] == "feedbeef"
    patched = trainjob["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert [j["name"] for j in patched] == ["node", "launcher"]
    for job in patched:
        pod = job["template"]["spec"]["template"]
        assert pod["metadata"]["labels"][kube_render.RUN_LABEL] == "feedbeef"
        assert pod["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}
        assert pod["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        assert pod["spec"]["imagePullSecrets"] == [{"name": "site-registry"}]
        assert pod["spec"]["serviceAccountName"] == "trainer"


def test_a_secret_variable_reaches_the_pods_from_a_secret_never_in_the_manifest():
    plan = kube_plan(env={"WANDB_API_KEY": "s3cr3t-value", "NCCL_DEBUG": "INFO"})
    assert "s3cr3t-value" not in plan.manifest and "s3cr3t-value" not in "\n".join(plan.describe())
    env = {e["name"]: e for e in objects(plan)["TrainJob"]["spec"]["trainer"]["env"]}
    assert env["WANDB_API_KEY"] == {"name": "WANDB_API_KEY",
                                    "valueFrom": {"secretKeyRef": {"name": "repro-env", "key": "WANDB_API_KEY"}}}
    assert env["NCCL_DEBUG"] == {"name": "NCCL_DEBUG", "value": "INFO"}


def test_the_dry_run_shows_the_manifests_and_the_deletion_and_emit_writes_them():
    plan = kube_plan()
    text = "\n".join(plan.describe())
    assert "kubectl --namespace ml apply -f -" in text
    assert ("kubectl --namespace ml delete trainjobs.trainer.kubeflow.org repro-0123abcd --ignore-not-found "
            "--wait=false") in text
    assert plan.files() == {"repro-0123abcd.yaml": plan.manifest}
    mpi = kube_plan(flags={"repro_k8s_kind": "mpijob"})
    assert "delete mpijobs.kubeflow.org repro-0123abcd" in "\n".join(mpi.describe())


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_and_workload_renders_objects_that_pass_the_checks(stack):
    inventory = cluster(gpus=2 if stack_file(stack).stack.gpu else 0)
    pins = stack_file(stack).stack.framework  # cnn, allreduce and tta run the stack's framework's program
    for workload in (w for w in SMALL if pins in spec_of(w).frameworks):
        for kind in ("trainjob", "mpijob"):
            plan = kube_plan(stack=stack, workload=workload, inventory=inventory, flags={"repro_k8s_kind": kind})
            assert kube_check.problems(list(plan.objects)) == []  # plan() checked them too; asserted plainly


# ---------------------------------------------------------------- refusals, each rule broken on purpose


def _refused(found: list[dict], field: str) -> str:
    with pytest.raises(InputError) as err:
        kube_check.check(found)
    text = err.value.render()
    assert field in text, text
    return text


def test_a_name_that_is_not_a_dns_1035_label_is_refused_naming_the_field():
    found = objects(kube_plan())
    found["TrainJob"]["metadata"]["name"] = "7-Repro_run"
    text = _refused(list(found.values()), "TrainJob/7-Repro_run: metadata.name: metadata.name must match RFC 1035")
    assert "self.metadata.name.matches" in text  # the CEL rule is named


def test_a_name_longer_than_63_characters_is_refused_before_submission():
    with pytest.raises(InputError) as err:
        kube_plan(run_id="a" * 60)
    assert "metadata.name: metadata.name must be no more than 63 characters" in err.value.render()


def test_num_proc_per_node_zero_is_refused_naming_the_field():
    found = objects(kube_plan())
    found["TrainJob"]["spec"]["trainer"]["numProcPerNode"] = 0
    _refused(list(found.values()), "spec.trainer.numProcPerNode: numProcPerNode must be greater than or equal to 1")


def test_two_policies_in_a_runtime_are_refused_naming_the_field():
    found = objects(kube_plan())
    found["ClusterTrainingRuntime"]["spec"]["mlPolicy"]["torch"] = {}
    _refused(list(found.values()), "spec.mlPolicy: Only one of the policy can be configured")


def test_an_mpi_implementation_other_than_open_mpi_is_refused_naming_the_field():
    found = objects(kube_plan())
    found["ClusterTrainingRuntime"]["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = "MPICH"
    _refused(list(found.values()), "spec.mlPolicy.mpi.mpiImplementation: mpiImplementation must be OpenMPI")
    mpijob = objects(kube_plan(flags={"repro_k8s_kind": "mpijob"}))["MPIJob"]
    mpijob["spec"]["mpiImplementation"] = "MPICH"
    _refused([mpijob], "MPIJob/repro-0123abcd: spec.mpiImplementation: mpiImplementation must be OpenMPI")


def test_a_field_the_api_type_does_not_have_is_refused_not_pruned():
    found = objects(kube_plan())
    found["TrainJob"]["spec"]["trainer"]["numProcsPerNode"] = 2  # a typo the API server would drop silently
    _refused([found["TrainJob"]], "spec.trainer.numProcsPerNode: not a field of TrainJob")
    mpijob = objects(kube_plan(flags={"repro_k8s_kind": "mpijob"}))["MPIJob"]
    mpijob["spec"]["slotsPerNode"] = 2
    _refused([mpijob], "spec.slotsPerNode")


def test_a_bad_pod_template_is_refused_by_the_kubernetes_schema_naming_the_field():
    found = objects(kube_plan())
    container = found["ClusterTrainingRuntime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"][
        "spec"]["template"]["spec"]["containers"][0]
    container["ports"][0]["containerPort"] = "ssh"
    _refused([found["ClusterTrainingRuntime"]],
             "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].ports[0].containerPort")


def test_a_wrong_type_is_refused_naming_the_field():
    found = objects(kube_plan())
    found["TrainJob"]["spec"]["trainer"]["numNodes"] = "two"
    _refused([found["TrainJob"]], "spec.trainer.numNodes: Input should be a valid integer")


# ---------------------------------------------------------------- site settings and what the scheduler refuses


def test_site_settings_come_from_the_inventory_and_flags_override_them():
    site = Kubernetes().configure(cluster(), {"repro_k8s_namespace": "team-a"}, 60).site
    assert site is not None and site.namespace == "team-a" and site.registry == "registry.site:5000"
    assert site.tolerations == (Toleration("nvidia.com/gpu", "Exists", None, "NoSchedule"),)


def test_a_bad_site_value_names_the_variable_where_the_inventory_writes_it(tmp_path):
    inventory_file = tmp_path / "site.yml"
    inventory_file.write_text("all:\n  vars:\n    repro_k8s_namespace: Team_A\n  hosts:\n    node1:\n")
    inventory = cluster(path=str(inventory_file), repro_k8s_namespace="Team_A")
    with pytest.raises(InputError) as err:
        Kubernetes().configure(inventory, {}, 60)
    assert f"{inventory_file}:3" in err.value.render() and "repro_k8s_namespace" in err.value.render()
    with pytest.raises(InputError, match="--namespace: expected a namespace name"):
        Kubernetes().configure(cluster(), {"repro_k8s_namespace": "-x"}, 60)


SITE_TOML = """[site]
store = "results"

[kubernetes]
namespace = "benchmarks"
service_account = "trainer"
image_pull_secret = "site-registry"
runtime = "torch-distributed"
"""


def bare_cluster(**extra) -> Inventory:
    hosts = tuple(Host(name=f"node{i}", address=f"10.0.0.{i}", slots=2, vars=dict(extra)) for i in (1, 2))
    return Inventory("site.yml", hosts)


def test_the_site_settings_are_the_schedulers_declared_options_read_from_repro_toml(tmp_path, monkeypatch):
    """namespace, runtime, service account and image pull secret from repro.toml's [kubernetes] table; the
    inventory's variable beats the file, the flag beats both; [kubernetes] passes the configuration check."""
    from repro import resources
    from repro.launch.schedulers.kube_site import FLAGS, OPTIONS

    declared = {o.key: (o.variable, FLAGS.get(o.variable)) for o in OPTIONS}
    assert declared["namespace"] == ("repro_k8s_namespace", "--namespace")
    assert {"runtime", "service_account", "image_pull_secret"} <= set(declared)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    (tmp_path / "repro.toml").write_text(SITE_TOML)
    resources.check_config()  # the [kubernetes] table is the scheduler's, not an unknown setting
    site = Kubernetes().configure(bare_cluster(), {}, 60).site
    assert (site.namespace, site.service_account, site.image_pull_secret, site.runtime) == (
        "benchmarks", "trainer", "site-registry", "torch-distributed")
    site = Kubernetes().configure(bare_cluster(repro_k8s_namespace="team-b"), {}, 60).site
    assert site.namespace == "team-b" and site.service_account == "trainer"
    site = Kubernetes().configure(bare_cluster(repro_k8s_namespace="team-b"), {"repro_k8s_namespace": "c"}, 60).site
    assert site.namespace == "c"


@pytest.mark.parametrize("line,says", [
    ('namespace = "Team_A"', "repro.toml:5: [kubernetes] namespace: expected a namespace name"),
    ('service_account = "Bad Account"', "repro.toml:5: [kubernetes] service_account: expected a service account"),
    ('namespce = "x"', "repro.toml:5: unknown key 'namespce' in [kubernetes]"),
])
def test_a_bad_kubernetes_setting_in_repro_toml_is_refused_naming_file_and_line(tmp_path, monkeypatch, line, says):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    (tmp_path / "repro.toml").write_text(f'[site]\nstore = "results"\n\n[kubernetes]\n{line}\n')
    with pytest.raises(InputError) as err:
        Kubernetes().configure(bare_cluster(), {}, 60)
    assert says in err.value.render(), err.value.render()


@pytest.mark.parametrize("var,value,says", [
    ("repro_k8s_kind", "pytorchjob", "trainjob or mpijob"),
    ("repro_k8s_tolerations", [{"key": "a", "operator": "Maybe"}], "operator: expected Exists or Equal"),
    ("repro_k8s_tolerations", [{"key": "a", "operator": "Exists", "value": "b"}], "takes no value"),
    ("repro_k8s_node_selector", {"bad key!": "x"}, "is not a label key"),
    ("repro_k8s_registry", "registry.site/$(whoami)", "expected a registry"),
    ("repro_k8s_gpus_per_pod", "two", "whole number"),
])
def test_bad_site_values_are_refused_naming_the_variable(var, value, says):
    with pytest.raises(InputError) as err:
        Kubernetes().configure(cluster(**{var: value}), {}, 60)
    assert var in err.value.render() and says in err.value.render()


@pytest.mark.parametrize("runtime,launcher,backends,says", [
    ("host", "mpirun", ("mpi",), "pods run the stack's image"),
    ("docker", "srun", ("mpi",), "cannot start ranks in a TrainJob"),
    ("docker", "mpirun", ("gloo",), "Gloo"),
])
def test_the_scheduler_refuses_what_pods_cannot_run(runtime, launcher, backends, says):
    with pytest.raises(InputError, match=says):
        Kubernetes().configure(cluster(), {}, 60).check(runtime, launcher, backends)


def test_ranks_that_do_not_fill_every_pod_alike_are_refused():
    with pytest.raises(InputError, match="same number of processes"):
        kube_plan(workers=3)


# ---------------------------------------------------------------- CRD files a site gives (--crds)

# A small CRD written for this test (not an upstream file): a schema with an int-or-string and a CEL rule.
TOY_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: toys.example.org}
spec:
  group: example.org
  names: {kind: Toy, plural: toys}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, x-kubernetes-validations: [{rule: "self >= 1", message: size must be >= 1}]}
              port: {x-kubernetes-int-or-string: true}
              name: {type: string, x-kubernetes-validations: [{rule: "self == oldSelf", message: immutable}]}
"""


def test_a_sites_crd_files_give_a_json_schema_and_their_create_time_cel_rules(tmp_path):
    (tmp_path / "toy.yaml").write_text(TOY_CRD)
    crds = load_crds(tmp_path)
    assert [r.rule for r in crds.rules[("example.org/v1", "Toy")]] == ["self >= 1"]  # oldSelf rules left out
    good = {"apiVersion": "example.org/v1", "kind": "Toy", "metadata": {"name": "t"},
            "spec": {"size": 1, "port": "http"}}
    assert crds.problems(good) == []
    bad = copy.deepcopy(good)
    bad["spec"].update(size=0, colour="red", port=1.5)
    found = "\n".join(crds.problems(bad))
    assert "spec.size: size must be >= 1" in found
    assert "'colour' was unexpected" in found
    assert "spec.port" in found
    assert json_schema({"x-kubernetes-int-or-string": True}) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}


# The upstream CRD files (fetched material: not part of repro) that the real-CRD test reads, all in one folder:
# (repository, path in it, file name in the folder).
UPSTREAM_CRDS = (
    ("kubeflow/trainer", "manifests/base/crds/", "trainer.kubeflow.org_trainjobs.yaml"),
    ("kubeflow/trainer", "manifests/base/crds/", "trainer.kubeflow.org_clustertrainingruntimes.yaml"),
    ("kubeflow/trainer", "manifests/base/crds/", "trainer.kubeflow.org_trainingruntimes.yaml"),
    ("kubeflow/mpi-operator", "manifests/base/", "kubeflow.org_mpijobs.yaml"),
)


def crd_skip_message(folder: Path) -> str | None:
    """Why the real-CRD test cannot run: exactly which files to put where; None when every one is there."""
    missing = [(repo, path, name) for repo, path, name in UPSTREAM_CRDS if not (folder / name).is_file()]
    if not missing:
        return None
    lines = "; ".join(f"{repo} {path}{name} -> {folder / name}" for repo, path, name in missing)
    return (f"upstream CRD files missing (fetched material, kept out of repro): {lines}. The MPIJob CRD must be "
            "the MPI Operator's (kubeflow.org/v2beta1), not kubeflow/trainer's manifests/base/crds/"
            "kubeflow.org_mpijobs.yaml (the old training operator's v1). Put them in shared/reference/crds/ beside "
            "the checkout, or set REPRO_K8S_CRDS to a folder holding them.")


def test_the_crd_skip_message_names_every_missing_file_and_where_it_goes(tmp_path):
    (tmp_path / "trainer.kubeflow.org_trainjobs.yaml").write_text("{}")
    found = crd_skip_message(tmp_path)
    assert "trainjobs" not in found.split(". The")[0]  # a file that is there is not asked for
    assert f"kubeflow/mpi-operator manifests/base/kubeflow.org_mpijobs.yaml -> {tmp_path}/kubeflow.org_mpijobs.yaml" \
        in found
    assert f"manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml -> {tmp_path}/" in found
    assert "shared/reference/crds/" in found and "REPRO_K8S_CRDS" in found
    for _, _, name in UPSTREAM_CRDS:
        (tmp_path / name).write_text("{}")
    assert crd_skip_message(tmp_path) is None


def test_the_rendered_objects_pass_the_real_crds_of_trainer_and_the_mpi_operator():
    """Against the upstream CRD files where the machine has them (../shared/reference/crds/, or REPRO_K8S_CRDS):
    they are not part of repro, so without them this test skips, naming each file and where it goes."""
    folder = Path(os.environ.get("REPRO_K8S_CRDS") or ROOT.parent / "shared" / "reference" / "crds")
    why = crd_skip_message(folder)
    if why:
        pytest.skip(why)
    crds = load_crds(folder)
    for stack in STACKS:  # every shipped stack and workload, both kinds, every object a CRD describes
        inventory = cluster(gpus=2 if stack_file(stack).stack.gpu else 0)
        pins = stack_file(stack).stack.framework
        for workload in (w for w in SMALL if pins in spec_of(w).frameworks):
            for kind in ("trainjob", "mpijob"):
                plan = kube_plan(stack=stack, workload=workload, inventory=inventory,
                                 flags={"repro_k8s_kind": kind, "repro_k8s_crds": str(folder)})
                for found in plan.objects:
                    assert crds.problems(found) == [], (stack, workload, kind, found["kind"])
    found = objects(kube_plan())
    found["TrainJob"]["spec"]["trainer"]["numProcPerNode"] = 0
    found["TrainJob"]["metadata"]["name"] = "Bad_Name"
    text = "\n".join(crds.problems(found["TrainJob"]))
    assert "spec.trainer.numProcPerNode" in text and "metadata.name" in text
    runtime = found["ClusterTrainingRuntime"]
    runtime["spec"]["mlPolicy"]["torch"] = {}  # two policies
    runtime["spec"]["mlPolicy"]["mpi"]["mpiImplementation"] = "MPICH"
    text = "\n".join(crds.problems(runtime))
    assert "spec.mlPolicy" in text and "mpiImplementation" in text, text
    mpijob = objects(kube_plan(flags={"repro_k8s_kind": "mpijob"}))["MPIJob"]
    mpijob["spec"]["mpiImplementation"] = "MPICH"
    assert crds.problems(mpijob) == []  # the MPI Operator's CRD allows MPICH: repro refuses it by a rule of its own
    assert "repro's mpirun command line is Open MPI's" in "\n".join(kube_check.problems([mpijob]))


def test_the_emulated_operator_gives_the_pods_trainers_mpi_contract():
    """tests/cluster/kube_emulator.py (which runs the pods on the test cluster) makes of repro's objects what Trainer's
    MPI plugin and JobSet do: node pods running sshd, a launcher with the hostfile and OpenMPI's variables."""
    from tests.cluster.kube_emulator import hostfile, pods_of

    found = objects(kube_plan(run_id="feedbeef"))
    pods = pods_of(found["TrainJob"], found["ClusterTrainingRuntime"])
    assert [(p.name, p.job) for p in pods] == [("repro-feedbeef-node-0-0", "node"), ("repro-feedbeef-node-1-0", "node"),
                                               ("repro-feedbeef-launcher-0-0", "launcher")]
    node, launcher = pods[0], pods[2]
    assert node.command[-2:] == ["repro-node", kube_render.SSH_MOUNT] and node.ready_port == 2222
    assert node.mounts == {"/dev/shm": "shm", kube_render.SSH_MOUNT: "ssh"}
    assert launcher.mounts[kube_render.HOSTFILE.rsplit("/", 1)[0]] == "hostfile"
    assert launcher.env["OMPI_MCA_orte_default_hostfile"] == kube_render.HOSTFILE
    assert launcher.env["OMPI_MCA_orte_set_default_slots"] == "2" and launcher.env["PYTHONUNBUFFERED"] == "1"
    assert "mpirun" in launcher.command and launcher.labels[kube_render.RUN_LABEL] == "feedbeef"
    assert hostfile(pods, 2) == ("repro-feedbeef-node-0-0.repro-feedbeef slots=2\n"
                                 "repro-feedbeef-node-1-0.repro-feedbeef slots=2\n")


def test_the_emulated_operator_gives_the_pods_trainers_torch_contract():
    """For a torch TrainJob the emulator makes what Trainer's torch plugin does: numNodes node pods, each running
    the trainer's torchrun with PET_NNODES, PET_NPROC_PER_NODE, its own PET_NODE_RANK, and the first node pod's
    service name and port as the master; no SSH key, no hostfile."""
    from tests.cluster.kube_emulator import pods_of

    found = objects(kube_plan(stack="cpu-torch213.yaml", workload="torch_allreduce", run_id="feedbeef"))
    pods = pods_of(found["TrainJob"], found["ClusterTrainingRuntime"])
    assert [(p.name, p.job) for p in pods] == [("repro-feedbeef-node-0-0", "node"), ("repro-feedbeef-node-1-0", "node")]
    for rank, pod in enumerate(pods):
        assert {k: v for k, v in pod.env.items() if k.startswith("PET_")} == {
            "PET_NNODES": "2", "PET_NPROC_PER_NODE": "2", "PET_NODE_RANK": str(rank),
            "PET_MASTER_ADDR": "repro-feedbeef-node-0-0.repro-feedbeef", "PET_MASTER_PORT": "29500"}
        assert pod.command[0] == "torchrun" and pod.mounts == {"/dev/shm": "shm"} and pod.ready_port is None
        assert pod.labels[kube_render.RUN_LABEL] == "feedbeef"
    assert pods[0].endpoint == pods[0].env["PET_MASTER_ADDR"]  # the master is the first node pod's name


def test_the_emulated_operator_gives_the_pods_the_mpi_operators_contract():
    """For an MPIJob the emulator makes what the MPI Operator does: workers <job>-worker-<i> on the workers'
    service, a launcher of the Job <job>-launcher with the hostfile and OpenMPI's variables as the operator sets
    them, the SSH key mounted in both."""
    from tests.cluster.kube_emulator import discover_hosts, hostfile, mpijob_pods

    found = objects(kube_plan(flags={"repro_k8s_kind": "mpijob"}, run_id="feedbeef"))
    pods = mpijob_pods(found["MPIJob"])
    assert [(p.name, p.job) for p in pods][:2] == [("repro-feedbeef-worker-0", "worker"),
                                                    ("repro-feedbeef-worker-1", "worker")]
    launcher = pods[2]
    assert launcher.job == "launcher" and launcher.name.startswith("repro-feedbeef-launcher-")
    assert hostfile(pods, 2) == ("repro-feedbeef-worker-0.repro-feedbeef-worker.ml.svc slots=2\n"
                                 "repro-feedbeef-worker-1.repro-feedbeef-worker.ml.svc slots=2\n")
    assert discover_hosts(pods).splitlines()[1:] == [f"echo {p.endpoint}" for p in pods[:2]]
    assert {k: v for k, v in launcher.env.items() if k.startswith(("OMPI_", "K_MPI", "NVIDIA_"))} == {
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true", "OMPI_MCA_orte_default_hostfile": kube_render.HOSTFILE,
        "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10", "OMPI_MCA_orte_set_default_slots": "2",
        "K_MPI_JOB_ROLE": "launcher", "NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
    assert launcher.mounts == {"/dev/shm": "shm", kube_render.SSH_MOUNT: "ssh", "/etc/mpi": "hostfile"}
    assert "mpirun" in launcher.command and launcher.labels[kube_render.RUN_LABEL] == "feedbeef"
    worker = pods[0]
    assert worker.env["K_MPI_JOB_ROLE"] == "worker" and "OMPI_MCA_orte_default_hostfile" not in worker.env
    assert worker.mounts == {"/dev/shm": "shm", kube_render.SSH_MOUNT: "ssh"} and worker.ready_port == 2222
    assert worker.labels["training.kubeflow.org/job-role"] == "worker"


def test_every_cli_flag_of_the_scheduler_overrides_a_setting_of_the_site_table():
    """kube_options.OPTIONS (the CLI's group) may only name settings that kube_site.OPTIONS (repro.toml's keys,
    the inventory's variables) declares: otherwise a flag would override a setting nothing reads."""
    from repro.launch.schedulers import kube_options, kube_site

    table = {o.variable for o in kube_site.OPTIONS}
    assert {o.variable for o in kube_options.OPTIONS} <= table


def test_an_lm_point_renders_a_torch_trainjob_running_the_lm_program():
    """lm is a PyTorch workload like torch_cnn: its TrainJob takes Trainer's torch policy and torchrun starts
    `-m repro.workloads.lm` with the point's flags (the stack's lm defaults among them)."""
    from tests.cluster.kube_emulator import pods_of

    found = objects(kube_plan(stack="cpu-torch213-lm.yaml", workload="lm", run_id="feedbeef"))
    assert list(found["ClusterTrainingRuntime"]["spec"]["mlPolicy"]) == ["numNodes", "torch"]
    command = found["TrainJob"]["spec"]["trainer"]["command"]
    assert command[0] == "torchrun" and "repro.workloads.lm" in command
    assert command[command.index("--model") + 1] == "tiny" and command[command.index("--batch-size") + 1] == "4"
    assert len(pods_of(found["TrainJob"], found["ClusterTrainingRuntime"])) == 2
