"""The JSON Schema of a manifest file, for editors (`repro schema`); pure.

Draft-07, the newest draft YAML editors validate with (yaml-language-server, JetBrains). It accepts
every manifest repro accepts: a full stack, and a stack that `extends` another, which may leave out
any field and write `key: null` to remove an inherited entry. Every field has a description; fields
with a known set of values (distro, workload, model, ...) have an enum; text fields carry the same
pattern repro.inputs checks. Editors pick it up from a modeline at the top of a manifest:

    # yaml-language-server: $schema=../docs/stack.schema.json
"""

from __future__ import annotations

import copy
from typing import Any

from repro.manifest.schema import Stack

SCHEMA_ID = "urn:repro:schema:stack-manifest:1"
DRAFT = "http://json-schema.org/draft-07/schema#"
_REF = "#/definitions/"
_PARTIAL = "Partial"

EXTENDS = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "another manifest (a path relative to this file) whose fields this one overrides: mappings "
    "merge, `key: null` removes an inherited entry; name and description are not inherited",
}


def _draft7_refs(node: Any) -> Any:
    """Draft-07 ignores keywords beside `$ref`: wrap such a `$ref` in allOf so descriptions survive.

    Also closes mappings keyed by a pattern (env), which pydantic leaves open to other keys.
    """
    if isinstance(node, list):
        return [_draft7_refs(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _draft7_refs(v) for k, v in node.items()}
    if "patternProperties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False  # a mapping keyed by names (env): other keys are errors
    if "$ref" in out and len(out) > 1:
        ref = out.pop("$ref")
        out["allOf"] = [{"$ref": ref}]
    return out


def _nullable(schema: dict) -> dict:
    """The schema, also accepting null (`key: null` removes an inherited entry); description kept outside."""
    members = schema.get("anyOf", [])
    if {"type": "null"} in members or schema.get("type") == "null":
        return schema
    inner = {k: v for k, v in schema.items() if k not in ("description", "default", "title")}
    out = {"anyOf": [inner, {"type": "null"}]}
    if "description" in schema:
        out["description"] = schema["description"]
    return out


def _partial(schema: Any) -> Any:
    """The schema of a value inside a stack that extends another: nested models become their partial form."""
    if isinstance(schema, list):
        return [_partial(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "$ref" and isinstance(value, str) and value.startswith(_REF):
            out[key] = value + _PARTIAL
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = _nullable(_partial(value))
        elif key == "patternProperties":
            out[key] = {pattern: _nullable(_partial(sub)) for pattern, sub in value.items()}
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = _partial(value)
        else:
            out[key] = value
    return out


def _partial_model(definition: dict) -> dict:
    """A model that may be incomplete: nothing required, every field may be null."""
    out = {k: v for k, v in definition.items() if k != "required"}
    out["properties"] = {name: _nullable(_partial(prop)) for name, prop in definition.get("properties", {}).items()}
    return out


def editor_schema() -> dict:
    """JSON Schema (draft-07) of a manifest file, with $id, descriptions and enums."""
    raw = _draft7_refs(Stack.model_json_schema(ref_template=_REF + "{model}"))
    definitions: dict[str, Any] = raw.pop("$defs", {})
    stack = copy.deepcopy(raw)
    stack["required"] = [r for r in stack.get("required", []) if r != "name"]  # name defaults to the file name
    # exactly one framework (Stack._one_framework); the editor flags a stack with neither or both
    stack["oneOf"] = [{"required": ["tensorflow"], "not": {"required": ["pytorch"]}},
                      {"required": ["pytorch"], "not": {"required": ["tensorflow"]}}]
    definitions["Stack"] = stack
    for name in [n for n in definitions if n != "Stack"]:
        definitions[name + _PARTIAL] = _partial_model(definitions[name])
    required = set(stack["required"])
    properties = {name: (_partial(prop) if name in required else _nullable(_partial(prop)))
                  for name, prop in stack["properties"].items()}
    properties["extends"] = EXTENDS
    return {
        "$schema": DRAFT,
        "$id": SCHEMA_ID,
        "title": "repro stack manifest",
        "description": "A stack manifest of repro: the pinned software stack (OS, CUDA, cuDNN, NCCL, MPI, Python, "
        "TensorFlow or PyTorch, Horovod) and its benchmark defaults. A manifest without `extends` must be complete; "
        "one with `extends` holds only what it changes.",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
        "if": {"not": {"required": ["extends"]}},
        "then": {"$ref": _REF + "Stack"},
        "definitions": definitions,
    }
