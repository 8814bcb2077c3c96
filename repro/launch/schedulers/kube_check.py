"""Offline checks of rendered Kubernetes objects, before anything is submitted (pure; no API server).

Three layers, each naming the object and the field of every problem:
1. Structure: Trainer's own API types (PyPI `kubeflow-trainer-api`, the OpenAPI models generated from
   kubeflow/trainer's Go types) for TrainJob and (Cluster)TrainingRuntime; a small typed model of MPIJob v2beta1
   (below; no PyPI package carries it); every pod template against the Kubernetes API schema
   (`kubernetes-validate`). A field the type does not have is refused: the API server would prune it silently.
2. The create-time CEL rules (x-kubernetes-validations) of the CRDs that apply to what repro renders, as a table
   with each rule's expression and source, evaluated with `cel-python`. Rules comparing with `oldSelf` are
   update (transition) rules: only an API server evaluates them.
3. Optionally, CRD files a site gives (`--crds DIR`, repro_k8s_crds): the object against the CRD's
   openAPIV3Schema as JSON Schema, plus every create-time CEL rule found in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticError

from repro.errors import InputError
from repro.launch.schedulers.kube_rules import Rule, field_of, name_of, rules

KUBERNETES_SCHEMA_VERSION = "1.33.0"  # the Kubernetes API the pod templates are checked against
TRAINER_CRDS = "kubeflow/trainer@8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3:manifests/base/crds"
MPI_CRD = "kubeflow/mpi-operator@caa3c47fc42eb762635f78045ec0fcd1a89eb038:manifests/base/kubeflow.org_mpijobs.yaml"


_RUNTIMES = ("ClusterTrainingRuntime", "TrainingRuntime")
_TJ = f"{TRAINER_CRDS}/trainer.kubeflow.org_trainjobs.yaml"
_CTR = f"{TRAINER_CRDS}/trainer.kubeflow.org_clustertrainingruntimes.yaml (and _trainingruntimes.yaml)"

# The create-time rules that bear on what repro renders (the CRDs' other rules are `self == oldSelf` update
# rules, or apply to fields repro never sets: they are evaluated too when the CRD files are given).
RULES: tuple[Rule, ...] = (
    Rule(("TrainJob",), "", "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
         "metadata.name must match RFC 1035 DNS label format", _TJ),
    Rule(("TrainJob",), "", "size(self.metadata.name) <= 63", "metadata.name must be no more than 63 characters",
         _TJ),
    Rule(("TrainJob",), "spec.trainer.numProcPerNode", "self >= 1",
         "numProcPerNode must be greater than or equal to 1", _TJ),
    Rule(("TrainJob",), "spec.managedBy",
         "self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']",
         "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set", _TJ),
    Rule(_RUNTIMES, "spec.mlPolicy",
         "[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost),has(self.flux)]"
         ".filter(x, x).size() <= 1", "Only one of the policy can be configured", _CTR),
    Rule(_RUNTIMES, "spec.mlPolicy.mpi.numProcPerNode", "self >= 1", "NumProcPerNode in mpiPolicy must be >= 1",
         _CTR),
    Rule(_RUNTIMES, "spec.mlPolicy.flux.numProcPerNode", "self >= 1", "NumProcPerNode in fluxPolicy must be >= 1",
         _CTR),
    Rule(_RUNTIMES, "spec.mlPolicy.torch.envInjection.targets[].containerNames", "!self.exists(c, c == 'node')",
         "containerNames must not include the main node container because PET_* envs are always injected into it",
         _CTR),
    Rule(_RUNTIMES, "spec.template.spec",
         "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
         "self.replicatedJobs.exists(x, has(x.dependsOn)))",
         "StartupPolicy and DependsOn APIs are mutually exclusive", _CTR),
    # an enum of the openAPIV3Schema, not a CEL rule upstream; written as CEL to sit in one table
    Rule(_RUNTIMES, "spec.mlPolicy.mpi.mpiImplementation", "self in ['OpenMPI', '']",
         "mpiImplementation must be OpenMPI (the only value of the CRD's enum besides empty)",
         f"{_CTR}: enum of spec.mlPolicy.mpi.mpiImplementation"),
    # the MPIJob CRD allows Intel and MPICH too; repro's launcher command line is Open MPI's mpirun
    Rule(("MPIJob",), "spec.mpiImplementation", "self == 'OpenMPI'",
         "mpiImplementation must be OpenMPI: repro's mpirun command line is Open MPI's",
         f"repro (the CRD's enum, {MPI_CRD}, allows OpenMPI, Intel, MPICH)"),
    Rule(("MPIJob",), "", "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && "
         "size(self.metadata.name) <= 63",
         "metadata.name must be a DNS-1035 label of at most 63 characters (it names the job's service and pods)",
         "repro (the MPIJob CRD has no CEL rules; the operator names a Service after the job)"),
)


# ---------------------------------------------------------------- MPIJob v2beta1: a typed model
# From kubeflow/mpi-operator's CRD (see MPI_CRD) and pkg/apis/kubeflow/v2beta1/types.go: the fields repro sets,
# with the CRD's types, defaults and enums. Pod templates are checked by kubernetes-validate, not here.

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class _RunPolicy(_Strict):
    clean_pod_policy: Literal["None", "Running", "All"] | None = Field(default=None, alias="cleanPodPolicy")
    ttl_seconds_after_finished: int | None = Field(default=None, alias="ttlSecondsAfterFinished")
    active_deadline_seconds: int | None = Field(default=None, alias="activeDeadlineSeconds", ge=0)
    backoff_limit: int | None = Field(default=None, alias="backoffLimit", ge=0)
    suspend: bool | None = None
    managed_by: str | None = Field(default=None, alias="managedBy")


class _ReplicaSpec(_Strict):
    replicas: int | None = Field(default=None, ge=0)
    restart_policy: Literal["Always", "OnFailure", "Never", "ExitCode"] | None = Field(default=None,
                                                                                     alias="restartPolicy")
    template: dict[str, Any]


class _MPIReplicaSpecs(_Strict):
    launcher: _ReplicaSpec = Field(alias="Launcher")
    worker: _ReplicaSpec | None = Field(default=None, alias="Worker")


class _MPIJobSpec(_Strict):
    slots_per_worker: int | None = Field(default=None, alias="slotsPerWorker", ge=1)
    run_launcher_as_worker: bool | None = Field(default=None, alias="runLauncherAsWorker")
    run_policy: _RunPolicy | None = Field(default=None, alias="runPolicy")
    ssh_auth_mount_path: str | None = Field(default=None, alias="sshAuthMountPath")
    launcher_creation_policy: Literal["AtStartup", "WaitForWorkersReady"] | None = Field(
        default=None, alias="launcherCreationPolicy")
    mpi_implementation: Literal["OpenMPI", "Intel", "MPICH"] | None = Field(default=None, alias="mpiImplementation")
    mpi_replica_specs: _MPIReplicaSpecs = Field(alias="mpiReplicaSpecs")


class _Metadata(_Strict):
    name: str
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class MPIJob(_Strict):
    """kubeflow.org/v2beta1 MPIJob, the fields repro renders."""

    api_version: Literal["kubeflow.org/v2beta1"] = Field(alias="apiVersion")
    kind: Literal["MPIJob"]
    metadata: _Metadata
    spec: _MPIJobSpec


# ---------------------------------------------------------------- checking


def _model(kind: str) -> type[BaseModel] | None:
    if kind == "MPIJob":
        return MPIJob
    from kubeflow_trainer_api import models

    return {"TrainJob": models.TrainerV1alpha1TrainJob,
            "ClusterTrainingRuntime": models.TrainerV1alpha1ClusterTrainingRuntime,
            "TrainingRuntime": models.TrainerV1alpha1TrainingRuntime}.get(kind)


def _unknown(given: Any, kept: Any, loc: tuple = ()) -> Iterator[tuple]:
    """Paths in `given` that the typed model dropped (fields the API type does not have)."""
    if isinstance(given, dict) and isinstance(kept, dict):
        for key, value in given.items():
            if key not in kept:
                yield (*loc, key)
            else:
                yield from _unknown(value, kept[key], (*loc, key))
    elif isinstance(given, list) and isinstance(kept, list):
        for i, (a, b) in enumerate(zip(given, kept, strict=False)):
            yield from _unknown(a, b, (*loc, i))


def structure(obj: dict[str, Any]) -> list[str]:
    """Problems of an object against its API type (field named in each)."""
    kind = str(obj.get("kind"))
    model = _model(kind)
    if model is None:
        return [f"{name_of(obj)}: kind {kind} is not one repro renders"]
    try:
        model.model_validate(obj)
    except PydanticError as exc:
        errors = [e for e in exc.errors() if not _raw_wrapped(e)]
        if errors:
            return [f"{name_of(obj)}: {field_of(e['loc'])}: {e['msg']}" for e in errors]
    if kind == "MPIJob":
        return []  # extra="forbid" refused unknown fields already
    try:  # the generated reader: int-or-string and quantities as Kubernetes writes them
        kept = model.from_dict(obj).to_dict()  # type: ignore[attr-defined]
    except (PydanticError, ValueError) as exc:
        return [f"{name_of(obj)}: {str(exc).splitlines()[0]}"]
    return [f"{name_of(obj)}: {field_of(loc)}: not a field of {kind} (the API server would drop it)"
            for loc in _unknown(obj, kept)]


# The generated models hold int-or-string and resource quantities in oneOf wrapper classes that take a plain
# value only through from_dict; to model_validate, a plain int or string there is a type error it is not.
_WRAPPERS = ("IntOrString", "ResourceQuantity")


def _raw_wrapped(error: Any) -> bool:
    return any(w in error.get("msg", "") for w in _WRAPPERS) and isinstance(error.get("input"), (int, str)) \
        and not isinstance(error.get("input"), bool)


def pod_templates(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, pod template) of every full pod template in an object repro renders."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "MPIJob":
        for role, replica in (spec.get("mpiReplicaSpecs") or {}).items():
            yield f"spec.mpiReplicaSpecs.{role}.template", (replica or {}).get("template") or {}
    elif obj.get("kind") in _RUNTIMES:
        jobs = (((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs")) or []
        for i, job in enumerate(jobs):
            yield (f"spec.template.spec.replicatedJobs[{i}].template.spec.template",
                   (((job or {}).get("template") or {}).get("spec") or {}).get("template") or {})


@cache
def _pod_template_validator() -> Any:
    """kubernetes-validate's strict schema of a core/v1 PodTemplateSpec, read once (as its validate() does on
    every call)."""
    import jsonschema
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    folder = f"kubernetes-json-schema/v{KUBERNETES_SCHEMA_VERSION}-local-strict"
    schema = utils.schema_contents(f"{folder}/podtemplatespec-v1.json", KUBERNETES_SCHEMA_VERSION)
    definitions = utils.schema_contents(f"{folder}/_definitions.json", KUBERNETES_SCHEMA_VERSION)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def pods(obj: dict[str, Any]) -> list[str]:
    """Problems of the object's pod templates against the Kubernetes API schema (kubernetes-validate's)."""
    validator = _pod_template_validator()
    out = []
    for path, template in pod_templates(obj):
        for error in sorted(validator.iter_errors(template), key=lambda e: list(map(str, e.absolute_path))):
            where = field_of(list(error.absolute_path))
            out.append(f"{name_of(obj)}: {path}{'' if where == '(the object)' else '.' + where}: "
                       f"{error.message.splitlines()[0]} (Kubernetes {KUBERNETES_SCHEMA_VERSION} schema)")
    return out


def problems(objects: list[dict[str, Any]], crds: str | None = None) -> list[str]:
    """Every problem of the objects: structure, pod templates, CEL rules, and the site's CRD files if given."""
    from repro.extras import need

    for module in ("kubeflow_trainer_api", "kubernetes_validate", "celpy", "jsonschema"):
        need(module, "kubernetes", "checking Kubernetes objects before they are submitted")
    out: list[str] = []
    for obj in objects:
        out += structure(obj)
        out += pods(obj)
        out += rules(obj, RULES)
    if crds:
        from repro.launch.schedulers.kube_crds import load_crds

        found = load_crds(crds)
        for obj in objects:
            out += found.problems(obj)
    return list(dict.fromkeys(out))


def check(objects: list[dict[str, Any]], crds: str | None = None) -> None:
    """Refuse objects the API server would refuse (or silently change): InputError naming each field."""
    found = problems(objects, crds)
    if found:
        raise InputError("the rendered Kubernetes objects would be refused; nothing was submitted:\n  "
                         + "\n  ".join(found),
                         hint="a site setting (repro_k8s_*) or the point produced a value the CRD does not accept")
