"""CEL validation rules (x-kubernetes-validations) evaluated with cel-python (pure), and how a problem names its
object and field; used by kube_check (repro's rule table) and kube_crds (the rules of a site's CRD files)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any


@dataclass(frozen=True)
class Rule:
    """One create-time validation rule: where it applies, its CEL expression, its message and its source."""

    kinds: tuple[str, ...]
    path: str  # dotted, from the object's root; `[]` steps into every item of a list; "" is the root
    rule: str
    message: str
    source: str


def name_of(obj: dict[str, Any]) -> str:
    """Kind/name of an object, for messages."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return f"{obj.get('kind', '?')}/{meta.get('name', '?')}"


def field_of(loc: Any) -> str:
    """A field path as the API server writes it (spec.containers[0].name)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the object)"


@cache
def _program(expression: str) -> Any:
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(expression))


def _at(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(concrete path, value) of every node `path` names in `obj` (absent: nothing)."""
    nodes: list[tuple[str, Any]] = [("", obj)]
    for step in [s for s in path.split(".") if s]:
        each = step.endswith("[]")
        key = step.removesuffix("[]")
        nxt = []
        for where, node in nodes:
            if isinstance(node, dict) and key in node:
                child, at = node[key], f"{where}.{key}" if where else key
                if each and isinstance(child, list):
                    nxt += [(f"{at}[{i}]", item) for i, item in enumerate(child)]
                elif not each:
                    nxt.append((at, child))
        nodes = nxt
    return iter(nodes)


def evaluate(rule: Rule, obj: dict[str, Any]) -> list[str]:
    """Problems of `obj` under one CEL rule (the rule's message, the field named)."""
    import celpy

    out = []
    for where, value in _at(obj, rule.path):
        try:
            result = _program(rule.rule).evaluate({"self": celpy.json_to_cel(value)})
            ok, why = not isinstance(result, celpy.CELEvalError) and bool(result), rule.message
        except Exception as exc:
            ok, why = False, f"the rule could not be evaluated ({exc})"
        if not ok:
            # a rule on the object's root is about its name (the only root rules there are)
            out.append(f"{name_of(obj)}: {where or 'metadata.name'}: {why} (rule `{rule.rule}`)")
    return out


def rules(obj: dict[str, Any], table: tuple[Rule, ...]) -> list[str]:
    """Problems of `obj` under every rule of the table that applies to its kind."""
    kind = obj.get("kind")
    return [p for rule in table if kind in rule.kinds for p in evaluate(rule, obj)]
