"""The Kubernetes scheduler's site settings as `repro bench` flags (Kubernetes.options): declared apart from the
scheduler, so that the CLI's help lists them without importing it."""

from __future__ import annotations

from repro.launch.schedulers import SiteOption

KINDS = ("trainjob", "mpijob")
# the site settings `repro bench` flags override (Kubernetes.options; the CLI's group for --scheduler kubernetes)
OPTIONS = (
    SiteOption("repro_k8s_namespace", "--namespace", "namespace of the jobs (repro_k8s_namespace; default: default)"),
    SiteOption("repro_k8s_kind", "--k8s-kind", "a Trainer v2 TrainJob or an MPI Operator MPIJob per point "
               "(repro_k8s_kind; default trainjob)", choices=KINDS),
    SiteOption("repro_k8s_crds", "--crds", "also validate against the CRD files in DIR: their schema and CEL rules "
               "(repro_k8s_crds)", metavar="DIR"),
)
