"""A Kubernetes site's settings (pure): namespace, job kind, training runtime, service account, image pull secret,
registry, GPUs per pod, node selector, tolerations and the CRDs to check against. Each is one of the scheduler's own
options (OPTIONS): a `repro bench` flag where it has one, else the inventory's variable (repro_k8s_*), else the
key of the [kubernetes] table of the site's configuration file (./repro.toml, then the user's; see
repro/resources.py), else its default:

    [kubernetes]
    namespace = "benchmarks"
    service_account = "trainer"
    image_pull_secret = "site-registry"
    runtime = "torch-distributed"

Every value is checked here, before anything is rendered: a bad one is an InputError naming the variable (and
where the inventory or the configuration file writes it, file:line) or the flag. kubectl's own context and
credentials are not settings of repro: kubectl reads them from its kubeconfig as always, and no record stores them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from repro.errors import InputError
from repro.hosts.inventory import Host, Inventory
from repro.launch.schedulers.kube_options import KINDS
from repro.launch.schedulers.kube_options import OPTIONS as FLAG_OPTIONS


@dataclass(frozen=True)
class KubeOption:
    """One site setting of the kubernetes scheduler, declared: its key in repro.toml's [kubernetes] table, its
    inventory variable and what it means. The `repro bench` flags that override some of them are declared once,
    for the CLI, in kube_options (FLAGS below)."""

    key: str
    variable: str
    help: str


OPTIONS = (
    KubeOption("namespace", "repro_k8s_namespace", "namespace of the jobs (default: default)"),
    KubeOption("kind", "repro_k8s_kind", "trainjob (Trainer v2, default) or mpijob (MPI Operator)"),
    KubeOption("crds", "repro_k8s_crds", "a folder of the cluster's CRD files to validate against"),
    KubeOption("runtime", "repro_k8s_runtime",
               "an existing (Cluster)TrainingRuntime to reference instead of repro's own"),
    KubeOption("runtime_kind", "repro_k8s_runtime_kind", "ClusterTrainingRuntime (default) or TrainingRuntime"),
    KubeOption("service_account", "repro_k8s_service_account", "the pods' service account"),
    KubeOption("image_pull_secret", "repro_k8s_image_pull_secret", "the pods' imagePullSecrets"),
    KubeOption("registry", "repro_k8s_registry", "prefix of the image reference (default: repro_registry)"),
    KubeOption("gpus_per_pod", "repro_k8s_gpus_per_pod", "GPUs per rank pod (default: one per rank for a GPU stack)"),
    KubeOption("node_selector", "repro_k8s_node_selector", "a mapping of node label to value"),
    KubeOption("tolerations", "repro_k8s_tolerations", "a list of {key, operator, value, effect}"),
    KubeOption("env_secret", "repro_k8s_env_secret",
               "the Secret holding the values of secret-named variables (default: repro-env)"),
)
CONFIG_TABLE = "kubernetes"  # the table of the site configuration file (repro/resources.py) these options read
# inventory variable -> the `repro bench` flag that overrides it (declared for the CLI in kube_options)
FLAGS = {o.variable: o.flag for o in FLAG_OPTIONS}
DEFAULT_NAMESPACE = "default"
DEFAULT_ENV_SECRET = "repro-env"

# RFC 1123 label (namespaces, secret and service-account names are DNS-1123 subdomains; labels suffice here)
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# a label key (optional DNS prefix, then a name) and a label value, as Kubernetes' validation defines them
_KEY = re.compile(r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")
_REGISTRY = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*")
_PATH = re.compile(r"[A-Za-z0-9_./+-]+")
_OPERATORS = ("Exists", "Equal")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True)
class Toleration:
    """One pod toleration (core/v1 Toleration's fields that a site sets)."""

    key: str | None = None
    operator: str = "Equal"
    value: str | None = None
    effect: str | None = None

    def manifest(self) -> dict[str, str]:
        return {k: v for k, v in (("key", self.key), ("operator", self.operator), ("value", self.value),
                                  ("effect", self.effect)) if v is not None}


@dataclass(frozen=True)
class KubeSite:
    """Where and how a sweep's jobs are created; None: the cluster's default."""

    namespace: str = DEFAULT_NAMESPACE
    kind: str = "trainjob"  # trainjob (Trainer v2) or mpijob (MPI Operator v2beta1)
    runtime: str | None = None  # an existing (Cluster)TrainingRuntime to reference; None: repro renders its own
    runtime_kind: str = "ClusterTrainingRuntime"
    service_account: str | None = None
    image_pull_secret: str | None = None
    registry: str | None = None  # prefix of the image reference the nodes pull (the lock's tag follows it)
    gpus_per_pod: int | None = None  # None: one per rank for a GPU stack, none for a CPU stack
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    env_secret: str = DEFAULT_ENV_SECRET  # the Secret holding the values of secret variables (never rendered)
    crds: str | None = None  # a directory of CRD files to validate against (besides repro's own checks)


def kubectl(site: KubeSite, *args: str) -> list[str]:
    """A kubectl command in the site's namespace (its context and credentials: kubectl's own kubeconfig)."""
    return ["kubectl", "--namespace", site.namespace, *args]


def config_settings(files: list[Path] | None = None) -> dict[str, tuple[Any, str]]:
    """The [kubernetes] table of the site configuration files (default: ./repro.toml, then the user's; the first
    that sets a key wins), as {inventory variable: (value, "file:line: [kubernetes] key")}; an unknown key or a
    table that is not one is an InputError naming file and line."""
    from repro import resources

    by_key = {o.key: o for o in OPTIONS}
    found: dict[str, tuple[Any, str]] = {}
    for path in resources.config_files() if files is None else files:
        text, data = resources.read_config(path)
        table = data.get(CONFIG_TABLE)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise InputError(f"{path}:{resources._line_of(text, CONFIG_TABLE, None)}: '{CONFIG_TABLE}' must be a "
                             f"table ([{CONFIG_TABLE}]) of the kubernetes scheduler's options")
        for key, value in table.items():
            at = f"{path}:{resources._line_of(text, key, CONFIG_TABLE)}"
            if key not in by_key:
                raise InputError(f"{at}: unknown key '{key}' in [{CONFIG_TABLE}]",
                                 hint=f"[{CONFIG_TABLE}] takes {', '.join(by_key)}")
            found.setdefault(by_key[key].variable, (value, f"{at}: [{CONFIG_TABLE}] {key}"))
    return found


def _locator(inventory: Inventory | None, host: Host, flags: Mapping[str, Any],
             config: Mapping[str, tuple[Any, str]]):
    """A function naming where a variable's value comes from: the flag, else the inventory's file:line, else the
    configuration file's."""
    files = None

    def where(var: str) -> str:
        nonlocal files
        if flags.get(var) not in (None, "", ()) and var in FLAGS:
            return FLAGS[var]
        if var not in host.vars and var in config:
            return config[var][1]
        if inventory is None:
            return var
        if files is None:
            from repro.hosts.inventory_files import InventoryFiles

            files = InventoryFiles(inventory.path)
        at = files.variable(host.name, var, frozenset({"all", "workers"}), host.vars.get(var))
        return f"{at}: {var}" if at else f"{inventory.path}: {var}"
    return where


def site_from(hosts: tuple[Host, ...], flags: Mapping[str, Any], inventory: Inventory | None = None,
              config: Mapping[str, tuple[Any, str]] | None = None) -> KubeSite:
    """The site settings of an inventory's hosts (their repro_k8s_* variables) with `flags` (by variable name)
    taking precedence and the configuration file's [kubernetes] table (`config`, default: read from the files in
    use) filling what neither sets; InputError naming the variable (file:line) or flag of any bad value."""
    config = config_settings() if config is None else config
    first = hosts[0]
    values = {**{var: value for var, (value, _) in config.items()}, **first.vars,
              **{k: v for k, v in flags.items() if v not in (None, "", ())}}
    where = _locator(inventory, first, flags, config)

    def text(var: str, pattern: re.Pattern[str], expected: str, limit: int = 253) -> str | None:
        value = values.get(var)
        if value in (None, ""):
            return None
        found = str(value).strip()
        if isinstance(value, (bool, dict, list)) or len(found) > limit or not pattern.fullmatch(found):
            raise InputError(f"{where(var)}: expected {expected}, found {value!r}")
        return found

    kind = (text("repro_k8s_kind", re.compile("|".join(KINDS)), " or ".join(KINDS)) or "trainjob")
    runtime_kind = text("repro_k8s_runtime_kind", re.compile("ClusterTrainingRuntime|TrainingRuntime"),
                        "ClusterTrainingRuntime or TrainingRuntime") or "ClusterTrainingRuntime"
    gpus = values.get("repro_k8s_gpus_per_pod")
    if gpus is not None and (isinstance(gpus, bool) or not str(gpus).isdigit()):
        raise InputError(f"{where('repro_k8s_gpus_per_pod')}: expected a whole number >= 0, found {gpus!r}")
    return KubeSite(
        namespace=text("repro_k8s_namespace", _LABEL, "a namespace name (RFC 1123 label: a-z, 0-9, -)", 63)
        or DEFAULT_NAMESPACE,
        kind=kind,
        runtime=text("repro_k8s_runtime", _SUBDOMAIN, "a training runtime's name (a DNS-1123 subdomain)"),
        runtime_kind=runtime_kind,
        service_account=text("repro_k8s_service_account", _SUBDOMAIN, "a service account name (DNS-1123 subdomain)"),
        image_pull_secret=text("repro_k8s_image_pull_secret", _SUBDOMAIN, "a secret name (DNS-1123 subdomain)"),
        registry=text("repro_k8s_registry", _REGISTRY, "a registry host[:port][/path] such as registry.site:5000/ml")
        or first.registry,
        gpus_per_pod=int(gpus) if gpus is not None else None,
        node_selector=_selector(values.get("repro_k8s_node_selector"), where("repro_k8s_node_selector")),
        tolerations=_tolerations(values.get("repro_k8s_tolerations"), where("repro_k8s_tolerations")),
        env_secret=text("repro_k8s_env_secret", _SUBDOMAIN, "a secret name (DNS-1123 subdomain)")
        or DEFAULT_ENV_SECRET,
        crds=text("repro_k8s_crds", _PATH, "a directory of CRD files", 4096),
    )


def _selector(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if value in (None, "", {}):
        return ()
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected a mapping of node label to value, found {value!r}")
    out = []
    for key, val in value.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key) or len(key) > 316:
            raise InputError(f"{where}: {key!r} is not a label key (prefix/name, e.g. nvidia.com/gpu.product)")
        if not isinstance(val, (str, int)) or isinstance(val, bool) or not _VALUE.fullmatch(str(val)):
            raise InputError(f"{where}.{key}: {val!r} is not a label value (63 letters, digits, -_. at most)")
        out.append((key, str(val)))
    return tuple(sorted(out))


def _tolerations(value: Any, where: str) -> tuple[Toleration, ...]:
    if value in (None, "", []):
        return ()
    items = value if isinstance(value, list) else [value]
    out = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or set(item) - {"key", "operator", "value", "effect"}:
            raise InputError(f"{at}: expected a mapping of key, operator, value, effect; found {item!r}")
        key, op, val, effect = (item.get(k) for k in ("key", "operator", "value", "effect"))
        op = op or "Equal"
        if key is not None and (not isinstance(key, str) or not _KEY.fullmatch(key)):
            raise InputError(f"{at}.key: {key!r} is not a taint key")
        if op not in _OPERATORS:
            raise InputError(f"{at}.operator: expected {' or '.join(_OPERATORS)}, found {op!r}")
        if op == "Exists" and val not in (None, ""):
            raise InputError(f"{at}.value: a toleration with operator Exists takes no value")
        if val is not None and (not isinstance(val, str) or not _VALUE.fullmatch(val)):
            raise InputError(f"{at}.value: {val!r} is not a taint value")
        if effect is not None and effect not in _EFFECTS:
            raise InputError(f"{at}.effect: expected one of {', '.join(_EFFECTS)}, found {effect!r}")
        out.append(Toleration(key, op, val or None, effect))
    return tuple(out)
