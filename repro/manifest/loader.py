"""Load a YAML document into plain data plus the file position of every key and value.

The loader is the edge where untrusted bytes enter: whatever the input (binary junk, a YAML bomb,
a huge or deeply nested file, duplicate keys, a non-mapping document), it returns data or raises
ManifestError with located diagnostics. It never lets a PyYAML or Python error escape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from repro.errors import Diagnostic, Location, ManifestError
from repro.inputs import FileProblem, encodable, read_file

MAX_BYTES = 1 << 20  # a stack manifest is a page of text; 1 MiB is generous
MAX_NODES = 20_000  # bounds alias expansion ("billion laughs")
MAX_DEPTH = 40
MAX_INT_DIGITS = 40  # Python refuses to convert more than 4,300 digits; no manifest needs more than a few
# Tags a manifest may hold, written or implied: plain YAML scalars and collections. Explicit tags such as
# !!timestamp, !!binary or !!python/... add nothing to a manifest and are refused where they stand.
SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "bool", "null"))
MAPPING_TAG, SEQUENCE_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"

FieldPath = tuple[str | int, ...]


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps version-like scalars as text.

    YAML 1.1 would read `cuda: 10.10` as the float 10.1 and `1:20` as 80; for a manifest of
    versions that silently changes meaning. Only plain decimal integers, true/false and null are
    typed; everything else stays a string and the schema decides.
    """


_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^<<$"), ["<"])
_Loader.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])
_DECIMAL = re.compile(r"[-+]?[0-9]+", re.ASCII)


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> int:
    """A decimal integer of bounded length (an explicit !!int 0x1f or 1:20 is refused too)."""
    text = str(node.value).replace("_", "")
    if not _DECIMAL.fullmatch(text):
        raise yaml.constructor.ConstructorError(None, None, f"not a decimal integer: {text[:40]!r}", node.start_mark)
    if len(text.lstrip("+-")) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"integer of {len(text.lstrip('+-'))} digits; at most {MAX_INT_DIGITS} are read",
            node.start_mark)
    return int(text)


def _construct_bool(loader: _Loader, node: yaml.ScalarNode) -> bool:
    text = str(node.value).lower()
    if text not in ("true", "false"):
        raise yaml.constructor.ConstructorError(None, None, f"not true or false: {text[:40]!r}", node.start_mark)
    return text == "true"


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)


@dataclass
class Document:
    """Plain data from one YAML file, with where each value and key sits in it."""

    file: str
    data: Any
    values: dict[FieldPath, Location] = field(default_factory=dict)
    keys: dict[FieldPath, Location] = field(default_factory=dict)

    def where(self, path: FieldPath, *, key: bool = False) -> Location:
        """Best location for a field path: the exact node, else its nearest ancestor."""
        table = self.keys if key else self.values
        for cut in range(len(path), -1, -1):
            sub = path[:cut]
            if sub in table:
                return table[sub]
            if sub in self.keys:
                return self.keys[sub]
            if sub in self.values:
                return self.values[sub]
        return Location(self.file)


def _loc(file: str, mark: yaml.Mark | None) -> Location:
    if mark is None:
        return Location(file)
    return Location(file, mark.line + 1, mark.column + 1)


def dotted(path: FieldPath) -> str:
    """Render a field path the way users write it: tensorflow.version, packages.pip[2]."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class _Walker:
    def __init__(self, file: str, loader: _Loader) -> None:
        self.file = file
        self.loader = loader
        self.nodes = 0
        self.doc = Document(file, None)
        self.errors: list[Diagnostic] = []

    def walk(self, node: yaml.Node, path: FieldPath, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ManifestError(
                "document too large",
                [
                    Diagnostic(
                        f"more than {MAX_NODES} nodes after expanding aliases",
                        _loc(self.file, node.start_mark),
                        hint="a manifest needs no anchors or aliases; this looks like an alias bomb",
                    )
                ],
            )
        if depth > MAX_DEPTH:
            raise ManifestError(
                "document nested too deeply",
                [Diagnostic(f"nesting deeper than {MAX_DEPTH} levels", _loc(self.file, node.start_mark))],
            )
        self.doc.values.setdefault(path, _loc(self.file, node.start_mark))
        allowed = {yaml.MappingNode: {MAPPING_TAG}, yaml.SequenceNode: {SEQUENCE_TAG}}.get(type(node), SCALAR_TAGS)
        if node.tag not in allowed:
            self.errors.append(Diagnostic(f"YAML tag {node.tag.replace('tag:yaml.org,2002:', '!!')} is not "
                                          "supported in a manifest", _loc(self.file, node.start_mark), dotted(path),
                                          hint="write the plain value, without a tag"))
            return None
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        return self.loader.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: FieldPath, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        first_seen: dict[str, yaml.Mark] = {}
        for key_node, value_node in node.value:
            where = _loc(self.file, key_node.start_mark)
            if key_node.tag == "tag:yaml.org,2002:merge":
                self.errors.append(
                    Diagnostic(
                        "YAML merge keys (<<) are not supported",
                        where,
                        dotted(path),
                        hint="use `extends: other.yaml` to inherit another stack",
                    )
                )
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                self.errors.append(
                    Diagnostic("a key must be a plain name", where, dotted(path), "a string key", "a collection")
                )
                continue
            if key_node.tag not in SCALAR_TAGS:
                self.errors.append(Diagnostic("a key must be a plain name", where, dotted(path), "a string key",
                                              key_node.tag.replace("tag:yaml.org,2002:", "!!")))
                continue
            key = self.loader.construct_object(key_node)
            if not isinstance(key, str):
                key = str(key) if key is not None else ""
                if not key:
                    self.errors.append(Diagnostic("empty key", where, dotted(path), "a field name", "nothing"))
                    continue
            if not key.isprintable() or len(key) > 200 or not encodable(key):
                self.errors.append(Diagnostic("a key must be a plain name", where, dotted(path),
                                              "a field name", ascii(key[:60])))
                continue
            if key in first_seen:
                first = first_seen[key]
                self.errors.append(
                    Diagnostic(
                        f"duplicate key '{key}' (first defined at line {first.line + 1})",
                        where,
                        dotted((*path, key)),
                        hint="YAML keeps only the last value of a repeated key; remove one of them",
                    )
                )
                continue
            first_seen[key] = key_node.start_mark
            self.doc.keys[(*path, key)] = where
            out[key] = self.walk(value_node, (*path, key), depth + 1)
        return out


def _too_deep(text: str, file: str) -> Location:
    """Where nesting first goes deeper than MAX_DEPTH, found with the (non-recursive) scanner."""
    depth = 0
    opening = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
               yaml.BlockMappingStartToken)
    closing = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            depth += isinstance(token, opening) - isinstance(token, closing)
            if depth > MAX_DEPTH:
                return _loc(file, token.start_mark)
    except (yaml.YAMLError, RecursionError):
        pass
    return Location(file, 1, 1)


def _decode(file: str, raw: bytes) -> str:
    if len(raw) > MAX_BYTES:
        raise ManifestError(
            "file too large",
            [Diagnostic(f"{len(raw)} bytes; a manifest may be at most {MAX_BYTES} bytes", Location(file))],
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ManifestError(
            "not a text file",
            [Diagnostic("the file is not UTF-8 text", Location(file, line, column),
                        found=f"byte 0x{raw[exc.start]:02x}")],
        ) from None
    if "\x00" in text:
        at = text.index("\x00")
        line, column = text[:at].count("\n") + 1, at - (text.rfind("\n", 0, at) + 1) + 1
        raise ManifestError("not a text file", [Diagnostic("NUL byte in file", Location(file, line, column))])
    return text


def parse(text_or_bytes: str | bytes, file: str) -> Document:
    """Parse one YAML document (text or bytes) into a Document; any problem is a ManifestError."""
    text = _decode(file, text_or_bytes) if isinstance(text_or_bytes, bytes) else text_or_bytes
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise ManifestError("file too large", [Diagnostic(f"more than {MAX_BYTES} bytes", Location(file))])
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise ManifestError(
            "not a text file", [Diagnostic(f"character #x{exc.character:04x} is not allowed in YAML",
                                           Location(file, line, column))]
        ) from None
    try:
        node = loader.get_single_node()
        if node is None:
            where = Location(file, 1, 1) if text.strip() else Location(file)  # comments only: it has lines
            raise ManifestError("empty manifest", [Diagnostic("the file holds no YAML document", where)])
        walker = _Walker(file, loader)
        data = walker.walk(node, (), 0)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = ", ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise ManifestError("invalid YAML", [Diagnostic(problem, _loc(file, mark))]) from None
    except yaml.YAMLError as exc:
        raise ManifestError("invalid YAML", [Diagnostic(str(exc).splitlines()[0], Location(file))]) from None
    except RecursionError:
        raise ManifestError(
            "document nested too deeply", [Diagnostic(f"nesting deeper than {MAX_DEPTH} levels", _too_deep(text, file))]
        ) from None
    finally:
        loader.dispose()
    if walker.errors:
        raise ManifestError(f"{file} is not a valid manifest", walker.errors)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single value ({type(data).__name__})"
        raise ManifestError(
            "not a mapping",
            [Diagnostic("a manifest must be a mapping of fields", Location(file, 1, 1), "", "a mapping", kind)],
        )
    walker.doc.data = data
    return walker.doc


def load(path: str | Path) -> Document:
    """Read and parse a manifest file; a missing, special (FIFO, device) or unreadable file is a ManifestError."""
    file = str(path)
    try:
        raw = read_file(path, MAX_BYTES)
    except FileProblem as exc:
        raise ManifestError(f"cannot read file: {exc}", [Diagnostic(str(exc), Location(file))]) from None
    return parse(raw, file)
