"""A site's CRD files as checks (pure reading): each CustomResourceDefinition's openAPIV3Schema as JSON Schema, and
every create-time CEL rule (x-kubernetes-validations without `oldSelf`) found in it, for `--crds DIR`.

What an API server does that this does not: defaulting, pruning (here an unknown field is refused instead of
dropped), `oldSelf` transition rules, admission webhooks, and the cost limits of CEL.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from repro.errors import InputError
from repro.files import FileProblem, read_file
from repro.launch.schedulers.kube_rules import Rule, field_of, name_of, rules

MAX_FILES = 200
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: a CRD file is ~700 kB
MAX_BYTES = 16 * 1024 * 1024


def json_schema(node: Any) -> Any:
    """An openAPIV3Schema (structural) node as JSON Schema: int-or-string, nullable and preserve-unknown-fields
    turned into their JSON Schema forms, and objects with properties closed to other fields."""
    if isinstance(node, list):
        return [json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    out.pop("nullable", None)
    if ("properties" in out and "additionalProperties" not in out
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def cel_rules(kind: str, node: Any, path: str = "") -> list[Rule]:
    """Every create-time CEL rule of a schema, at its path (update rules, which compare with oldSelf, left out)."""
    if not isinstance(node, dict):
        return []
    found = [Rule((kind,), path, r["rule"], r.get("message") or r["rule"], "the site's CRD")
             for r in node.get("x-kubernetes-validations") or () if "oldSelf" not in r.get("rule", "")]
    for key, child in (node.get("properties") or {}).items():
        found += cel_rules(kind, child, f"{path}.{key}" if path else key)
    if isinstance(node.get("items"), dict):
        found += cel_rules(kind, node["items"], f"{path}[]")
    return found


@dataclass
class CrdSet:
    """The versions of the CRDs found, by (apiVersion, kind)."""

    schemas: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    rules: dict[tuple[str, str], tuple[Rule, ...]] = field(default_factory=dict)

    def problems(self, obj: dict[str, Any]) -> list[str]:
        """The object against its CRD's schema and CEL rules; no CRD for its kind: a problem too."""
        import jsonschema

        key = (str(obj.get("apiVersion")), str(obj.get("kind")))
        if key not in self.schemas:
            return [f"{name_of(obj)}: no CRD for {key[0]} {key[1]} among the given CRD files"]
        validator = jsonschema.Draft7Validator(self.schemas[key])
        out = [f"{name_of(obj)}: {field_of(list(e.absolute_path))}: {e.message} (CRD schema)"
               for e in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))]
        return out + [f"{p} (CRD)" for p in rules(obj, self.rules[key])]


def load_crds(directory: str | Path) -> CrdSet:
    """Every CustomResourceDefinition in the YAML files of `directory` (read once per sweep); InputError naming a
    file that is not YAML or a CRD without a schema."""
    try:
        resolved = Path(directory).resolve(strict=False)
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise InputError(f"--crds / repro_k8s_crds: {directory}: {exc}") from None
    return _load(str(resolved))


@lru_cache(maxsize=4)
def _load(directory: str) -> CrdSet:
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"--crds / repro_k8s_crds: {root} is not a directory")
    found = CrdSet()
    files = sorted(p for p in root.iterdir() if p.suffix in (".yaml", ".yml", ".json"))[:MAX_FILES]
    for path in files:
        try:
            text = read_file(path, MAX_BYTES).decode("utf-8")  # bounded; a FIFO, a device or a link loop refused
            docs = list(yaml.load_all(text, Loader=_LOADER))
        except FileProblem as exc:
            raise InputError(f"{path}: {exc}; not a CRD file") from None
        except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
            raise InputError(f"{path}: not YAML ({str(exc)[:300]})") from None
        for doc in docs:
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc.get("spec") or {}
            kind, group = (spec.get("names") or {}).get("kind"), spec.get("group")
            for version in spec.get("versions") or ():
                schema = ((version or {}).get("schema") or {}).get("openAPIV3Schema")
                if not (kind and group and isinstance(schema, dict)):
                    raise InputError(f"{path}: a CustomResourceDefinition without names.kind, group or "
                                     "versions[].schema.openAPIV3Schema")
                api = f"{group}/{version['name']}"
                converted = json_schema(copy.deepcopy(schema))
                # metadata is the API server's, not the CRD's (a CRD says only `type: object`)
                properties = converted.setdefault("properties", {})
                properties["metadata"] = {"type": "object"}
                properties.setdefault("apiVersion", {"type": "string"})
                properties.setdefault("kind", {"type": "string"})
                found.schemas[(api, kind)] = converted
                found.rules[(api, kind)] = tuple(cel_rules(kind, schema))
    if not found.schemas:
        raise InputError(f"--crds / repro_k8s_crds: no CustomResourceDefinition in {root}")
    return found
