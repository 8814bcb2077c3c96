"""Resolve a manifest file into a validated Stack: follow `extends`, merge, validate, derive.

Every problem of a file is reported together, each located at file:line:column with its field path.
"""

from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from repro import inputs
from repro.errors import Diagnostic, Location, ManifestError
from repro.manifest import loader
from repro.manifest.derive import derive
from repro.manifest.loader import Document, FieldPath, dotted
from repro.manifest.schema import RESOLVER_KEYS, Stack, sync_sections
from repro.secrets import is_secret_name, redact_text

MAX_EXTENDS_DEPTH = 16
NOT_INHERITED = ("name", "description")


@dataclass(frozen=True)
class LoadedStack:
    """A validated stack with the file it came from and where each of its fields was written."""

    stack: Stack
    file: str
    chain: tuple[str, ...]  # this file first, then each file it extends
    values: dict[FieldPath, Location] = field(default_factory=dict, compare=False, repr=False)
    keys: dict[FieldPath, Location] = field(default_factory=dict, compare=False, repr=False)

    def where(self, path: FieldPath) -> Location:
        """Where the field at `path` was written (in this file or the one it inherited it from)."""
        for cut in range(len(path), -1, -1):
            sub = path[:cut]
            if sub in self.keys:
                return self.keys[sub]
            if sub in self.values:
                return self.values[sub]
        return Location(self.file)

    @cached_property
    def hash(self) -> str:
        """The stack's content hash (computed once: the stack is immutable)."""
        from repro.manifest.canonical import stack_hash

        return stack_hash(self.stack)

    @cached_property
    def image_hash(self) -> str:
        """The hash of what goes into the image (computed once)."""
        from repro.manifest.canonical import image_hash

        return image_hash(self.stack)


@dataclass(frozen=True)
class ChainedLocation(Location):
    """A place in a file reached through `extends`: 'child.yaml:2:10: extends parent.yaml → parent.yaml:7:3'.

    file, line and column are the place itself; `via` holds each `extends:` on the way, from the leaf.
    """

    via: tuple[tuple[Location, str], ...] = ()

    def __str__(self) -> str:
        hops = "".join(f"{where}: extends {target} → " for where, target in self.via)
        return hops + Location.__str__(self)


def _chained(loc: Location | None, via: tuple[tuple[Location, str], ...]) -> Location | None:
    if loc is None or not via:
        return loc
    return ChainedLocation(loc.file, loc.line, loc.column, via)


def _rechain(doc: Document, via: tuple[tuple[Location, str], ...]) -> None:
    """Make every location of a parent document say how the leaf reached it."""
    for table in (doc.values, doc.keys):
        for path, loc in table.items():
            table[path] = _chained(loc, via)


def _bad_extends(doc: Document, message: str, found: str, expected: str = "") -> ManifestError:
    return ManifestError(f"{doc.file}: bad extends",
                         [Diagnostic(message, doc.where(("extends",)), "extends", expected, found)])


def _parent_path(doc: Document, value: Any) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise _bad_extends(doc, "extends must name another manifest file", repr(value),
                           "a file name such as tf110-cuda91.yaml")
    why = inputs.PATH.problem(value)
    if why:
        raise _bad_extends(doc, f"extends: {why}", ascii(value[:60]), "a file name such as tf110-cuda91.yaml")
    base = Path(doc.file).parent
    candidate = base / value
    if not candidate.suffix and not candidate.exists():
        for suffix in (".yaml", ".yml"):
            if (base / (value + suffix)).exists():
                return base / (value + suffix)
    return candidate


def _load_parent(path: Path, child: Document, via: tuple[tuple[Location, str], ...]) -> Document:
    """Load a file that `child` extends; its problems are located through the extends chain."""
    try:
        return loader.load(path)
    except ManifestError as exc:
        if all(d.location is None or d.location.line is None for d in exc.diagnostics):
            # the file itself is missing or unreadable: say so at the child's extends line
            why = "; ".join(d.message for d in exc.diagnostics) or exc.message
            target = child.data.get("extends")
            raise ManifestError(f"{child.file}: extends a file that cannot be read", [Diagnostic(
                f"extends '{target}': {why} ({path})", child.where(("extends",)), "extends",
                "an existing manifest file", str(path))]) from None
        diags = [Diagnostic(d.message, _chained(d.location, via), d.path, d.expected, d.found, d.hint, d.severity)
                 for d in exc.diagnostics]
        raise ManifestError(exc.message, diags, hint=exc.hint) from None


def _read_chain(path: Path) -> list[Document]:
    """The documents from the root ancestor down to `path`."""
    chain: list[Document] = [loader.load(path)]
    seen = [inputs.file_identity(path)]
    via: tuple[tuple[Location, str], ...] = ()
    while "extends" in chain[-1].data:
        child = chain[-1]
        if len(chain) > MAX_EXTENDS_DEPTH:
            raise ManifestError(
                f"{child.file}: extends chain too long",
                [Diagnostic(f"more than {MAX_EXTENDS_DEPTH} levels of extends", child.where(("extends",)), "extends")])
        current = _parent_path(child, child.data["extends"])
        hop = child.where(("extends",))  # the place itself: the hops before it are already in `via`
        via = (*via, (Location(hop.file, hop.line, hop.column), str(child.data["extends"])))
        identity = inputs.file_identity(current)
        if identity is not None and identity in seen:
            names = " -> ".join([*(d.file for d in chain), str(current)])
            raise ManifestError(
                f"{child.file}: extends cycle",
                [Diagnostic(f"extends cycle: {names}", child.where(("extends",), key=True), "extends",
                            "a chain of stacks that ends", "a cycle")],
            )
        doc = _load_parent(current, child, via)
        _rechain(doc, via)
        chain.append(doc)
        seen.append(identity)
    chain.reverse()
    return chain


def _merge(base: dict, over: dict, path: FieldPath, doc: Document,
           values: dict[FieldPath, Location], keys: dict[FieldPath, Location]) -> dict:
    out = dict(base)
    for key, value in over.items():
        sub = (*path, key)
        if value is None and key in out and path != ():
            # `key: null` in a child removes an inherited mapping entry (e.g. an env variable)
            del out[key]
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value, sub, doc, values, keys)
        else:
            out[key] = value
            for table, src in ((values, doc.values), (keys, doc.keys)):
                for p in [p for p in table if p[: len(sub)] == sub]:
                    del table[p]
                for p, loc in src.items():
                    if p[: len(sub)] == sub:
                        table[p] = loc
        if sub in doc.keys:
            keys[sub] = doc.keys[sub]
    return out


def _model_at(loc: FieldPath) -> type[BaseModel] | None:
    cls: type[BaseModel] = Stack
    for part in loc:
        info = cls.model_fields.get(str(part))
        if info is None:
            return None
        ann = info.annotation
        candidates = [ann, *typing.get_args(ann)]
        sub = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if sub is None:
            return None
        cls = sub
    return cls


def _describe(cls: type[BaseModel], name: str) -> str:
    info = cls.model_fields.get(name)
    if info is None:
        return ""
    if info.description:
        return info.description
    ann = info.annotation
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return f"a mapping with {', '.join(f for f, i in ann.model_fields.items() if i.is_required())}"
    return "a value" if ann is None else getattr(ann, "__name__", str(ann))


def _short(value: Any, loc: FieldPath = ()) -> str:
    if any(isinstance(part, str) and is_secret_name(part) for part in loc):
        return "(value redacted)"  # a refused secret is not echoed
    text = redact_text(repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


# pydantic's type names, as a manifest's reader says them
TYPE_WORDS = {"int": "a whole number", "float": "a number", "string": "text", "str": "text", "bool": "true or false",
              "dict": "a mapping (key: value lines)", "model": "a mapping (key: value lines)", "list": "a list",
              "tuple": "a list"}


def _found_words(value: Any) -> str:
    """What a value of the wrong type is, in words: 'text', 'a list', 'no value'."""
    if value is None:
        return "no value (null)"
    return {bool: "true or false", int: "a whole number", float: "a number", str: "text", list: "a list",
            dict: "a mapping"}.get(type(value), type(value).__name__)


def _diagnostics(exc: ValidationError, lookup) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for err in exc.errors(include_url=False):
        loc: FieldPath = tuple(err["loc"])
        kind = err["type"]
        msg = err["msg"].removeprefix("Value error, ")
        ctx = err.get("ctx") or {}
        if kind == "model_workload":
            out.append(Diagnostic(msg, lookup((*loc, "model"), False), dotted((*loc, "model")),
                                  found=_short(ctx.get("model"))))
            continue
        if kind in ("gpu_fields", "framework", "workload_framework"):
            for name in ctx.get("fields", []):
                path = tuple(name.split("."))
                out.append(Diagnostic(msg, lookup(path, True), name))
            if not ctx.get("fields"):  # nothing to point at (no framework at all): the document itself
                out.append(Diagnostic(msg, lookup((), True), "tensorflow",
                                      expected="a tensorflow: or a pytorch: mapping"))
            continue
        if kind == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = sorted(parent.model_fields) if parent else []
            if parent is Stack:
                allowed = sorted({*allowed, *RESOLVER_KEYS})
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
            out.append(Diagnostic(
                f"unknown field '{loc[-1]}'" + (f" (did you mean '{close[0]}'?)" if close else ""),
                lookup(loc, True), dotted(loc),
                expected="one of: " + ", ".join(allowed) if allowed else "",
                hint=f"rename it to '{close[0]}'" if close else "",
            ))
            continue
        if kind == "missing":
            parent = _model_at(loc[:-1])
            out.append(Diagnostic(
                f"missing required field '{loc[-1]}'", lookup(loc[:-1], True), dotted(loc),
                expected=_describe(parent, str(loc[-1])) if parent else "",
            ))
            continue
        expected = ""
        if kind == "literal_error":
            expected = "one of " + str(ctx.get("expected", ""))
            msg = "value not allowed"
        elif kind.endswith("_type") or kind.endswith("_parsing"):
            expected = kind.removesuffix("_type").removesuffix("_parsing").replace("_", " ")
            expected = TYPE_WORDS.get(expected, expected)
            msg = f"expected {expected}, found {_found_words(err.get('input'))}"
            if "input" in err and err["input"] is None:
                msg = "has no value (`key: null`)"
                out.append(Diagnostic(msg, lookup(loc, False), dotted(loc), expected=expected,
                                      hint="give a value, or leave the key out for its default (`key: null` "
                                      "removes an entry only in a stack that `extends` one that sets it)"))
                continue
        if isinstance(err.get("input"), str) and _short(None, loc) == "(value redacted)":
            msg = msg.replace(inputs.shown(err["input"]), "(value redacted)")  # a refused secret is not echoed
        found = "" if kind == "url_credentials" else _short(err.get("input"), loc)  # never echo a credential
        out.append(Diagnostic(msg, lookup(loc, False), dotted(loc), expected=expected, found=found))
    return out


def locate_stack(text: str | Path) -> Path:
    """A stack manifest by path, or by name: NAME.yaml in ./stacks, then among repro's shipped stacks."""
    path = Path(text)
    if path.exists() or path.suffix in (".yaml", ".yml") or "/" in str(text):
        return path  # a path: read (and refused, when it is none) as written
    from repro.inputs import STACK_NAME
    from repro.resources import data_dir

    if STACK_NAME.problem(str(text)) is None:
        for folder in (Path("stacks"), data_dir("stacks")):
            candidate = folder / f"{text}.yaml"
            if candidate.is_file():
                return candidate
    names = sorted({p.stem for folder in (Path("stacks"), data_dir("stacks")) if folder.is_dir()
                    for p in folder.glob("*.yaml")})
    close = difflib.get_close_matches(path.stem, names, n=3)
    raise ManifestError(f"{text}: no such stack manifest",
                        [Diagnostic("neither a file nor the name of a stack in ./stacks or among repro's stacks",
                                    Location(str(text)),
                                    hint=(f"did you mean {' or '.join(close)}? " if close else "")
                                    + "give a manifest's path, or a name `repro stacks` lists")])


def load_stack(path: str | Path) -> LoadedStack:
    """Load, resolve `extends`, validate and derive a stack (given by path or by name: locate_stack); every
    problem raises ManifestError."""
    chain = _read_chain(locate_stack(path))
    leaf = chain[-1]
    merged: dict[str, Any] = {}
    values: dict[FieldPath, Location] = {}
    keys: dict[FieldPath, Location] = {}
    for doc in chain:
        data = {k: v for k, v in doc.data.items() if k not in RESOLVER_KEYS}
        if doc is not leaf:
            data = {k: v for k, v in data.items() if k not in NOT_INHERITED}
        merged = _merge(merged, data, (), doc, values, keys)
    merged.setdefault("name", Path(leaf.file).stem)

    def lookup(loc: FieldPath, key: bool) -> Location:
        tables = (keys, values) if key else (values, keys)
        for cut in range(len(loc), -1, -1):
            for table in tables:
                if loc[:cut] in table:
                    return table[loc[:cut]]
        return Location(leaf.file, 1, 1)

    try:
        stack = sync_sections().model_validate(merged)
    except ValidationError as exc:
        diags = sorted(_diagnostics(exc, lookup), key=lambda d: (
            d.location.file if d.location else "", d.location.line or 0 if d.location else 0))
        raise ManifestError(f"{leaf.file} is not a valid stack", diags) from None
    except (TypeError, ValueError, RecursionError, PydanticCustomError) as exc:  # defensive: never a traceback
        raise ManifestError(f"{leaf.file} is not a valid stack",
                            [Diagnostic(str(exc), Location(leaf.file, 1, 1))]) from None
    return LoadedStack(derive(stack), leaf.file, tuple(d.file for d in reversed(chain)), values, keys)
