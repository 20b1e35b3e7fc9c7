"""Schema pre-pass: turn the spec files of one target into the single schema the generator reads.

Structural rewrites only, each checking what it rewrites and failing loudly otherwise:

* merge the ``$defs`` of every input file (a name defined twice is an error) and point
  cross-file references (``../acp/acp.schema.json#/$defs/X``) at the merged definitions;
* name each inline member of a tagged union by its tag value (``resource_link`` in
  ``ContentBlock`` becomes ``ResourceLinkContentBlock``), never by position;
* widen every open MSP enum (``x-msp-openness: open``) to "one of these, or any string", so a
  newer host's value parses instead of failing the whole frame;
* drop the bundle's non-schema members (method tables, error registry, capabilities), which
  the table emitter reads separately.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

JsonObject = dict[str, Any]

SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
_BUNDLE_ONLY_KEYS: Final = frozenset(
    {"methods", "notifications", "errors", "capabilities", "reserved", "x-msp-deviations"}
)


class SchemaError(Exception):
    """A spec file does not follow the conventions the generator relies on."""


@dataclass(frozen=True, slots=True)
class PreparedSchema:
    """The merged generator input and the names of every class it will produce."""

    schema: JsonObject
    class_names: frozenset[str]
    methods: JsonObject
    notifications: JsonObject
    errors: list[JsonObject]


def camel_case(value: str) -> str:
    """``resource_link`` -> ``ResourceLink``; ``agentMessage`` -> ``AgentMessage``."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+", value) if w]
    if not words:
        raise SchemaError(f"cannot derive a class name from tag value {value!r}")
    return "".join(w[0].upper() + w[1:] for w in words)


def _walk(node: Any, visit: Any) -> None:
    if isinstance(node, dict):
        visit(node)
        for value in node.values():
            _walk(value, visit)
    elif isinstance(node, list):
        for value in node:
            _walk(value, visit)


def _rewrite_refs(node: Any, source: PurePosixPath, local_files: frozenset[PurePosixPath]) -> None:
    def visit(obj: JsonObject) -> None:
        ref = obj.get("$ref")
        if not isinstance(ref, str) or ref.startswith("#"):
            return
        file_part, _, pointer = ref.partition("#")
        target = PurePosixPath(_normalise(source.parent / file_part))
        if target not in local_files:
            raise SchemaError(f"{source}: reference {ref!r} leaves this target's spec files")
        if not pointer.startswith("/$defs/"):
            raise SchemaError(f"{source}: reference {ref!r} must point into $defs")
        obj["$ref"] = "#" + pointer

    _walk(node, visit)


def _normalise(path: PurePosixPath) -> str:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if not parts:
                raise SchemaError(f"reference escapes spec/: {path}")
            parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def _name_union_members(name: str, definition: JsonObject, names: set[str]) -> None:
    discriminator = definition.get("discriminator")
    if discriminator is None:
        return
    tag = discriminator.get("propertyName") if isinstance(discriminator, dict) else None
    members = definition.get("oneOf")
    if not isinstance(tag, str) or not isinstance(members, list):
        raise SchemaError(f"$defs/{name}: a discriminator needs propertyName and oneOf members")
    for member in members:
        if "$ref" in member:
            continue
        if "title" in member:
            raise SchemaError(f"$defs/{name}: inline union members are named by their tag")
        value = member.get("properties", {}).get(tag, {}).get("const")
        if not isinstance(value, str) or tag not in member.get("required", []):
            raise SchemaError(f"$defs/{name}: inline member lacks a required const {tag!r}")
        title = camel_case(value) + name
        if title in names:
            raise SchemaError(f"$defs/{name}: member name {title} collides with another class")
        member["title"] = title
        # Without its own description a member would inherit the union's, which describes
        # the whole family rather than this variant.
        member.setdefault("description", f"The {name} variant whose `{tag}` is `{value}`.")
        names.add(title)


def _widen_open_enums(node: Any) -> None:
    def visit(obj: JsonObject) -> None:
        openness = obj.pop("x-msp-openness", None)
        if openness is None or "enum" not in obj:
            return
        if openness not in ("open", "closed"):
            raise SchemaError(f"x-msp-openness must be open or closed, got {openness!r}")
        if openness == "closed":
            return
        declared = obj.pop("type", "string")
        types = declared if isinstance(declared, list) else [declared]
        nullable = "null" in types
        members: list[JsonObject] = [
            {"type": "string", "enum": [v for v in obj.pop("enum") if v is not None]},
            {"type": "string"},
        ]
        if nullable:
            members.append({"type": "null"})
        obj["anyOf"] = members

    _walk(node, visit)


def prepare(spec_dir: Path, inputs: tuple[str, ...]) -> PreparedSchema:
    """Merge and rewrite the schema files of one target (manifest files are skipped)."""
    schema_inputs = [name for name in inputs if not name.endswith("manifest.json")]
    local_files = frozenset(PurePosixPath(name) for name in schema_inputs)
    defs: JsonObject = {}
    methods: JsonObject = {}
    notifications: JsonObject = {}
    errors: list[JsonObject] = []
    for name in schema_inputs:
        document = json.loads((spec_dir / name).read_text(encoding="utf-8"))
        if document.get("$schema") != SCHEMA_DIALECT:
            raise SchemaError(f"spec/{name}: $schema must be {SCHEMA_DIALECT}")
        document = copy.deepcopy(document)
        _rewrite_refs(document, PurePosixPath(name), local_files)
        for key, definition in document.get("$defs", {}).items():
            if key in defs:
                raise SchemaError(f"spec/{name}: $defs/{key} is already defined by another file")
            defs[key] = definition
        for table, into in (("methods", methods), ("notifications", notifications)):
            for method, spec in document.get(table, {}).items():
                if method in methods or method in notifications:
                    raise SchemaError(f"spec/{name}: method {method} is declared twice")
                into[method] = spec
        errors.extend(document.get("errors", []))
        unknown = set(document) - _BUNDLE_ONLY_KEYS - {"$schema", "$id", "$defs", "title"}
        unknown -= {"description"}
        if unknown:
            raise SchemaError(f"spec/{name}: unexpected top-level members {sorted(unknown)}")
    names = set(defs)
    for key, definition in defs.items():
        _name_union_members(key, definition, names)
    _widen_open_enums(defs)
    schema = {"$schema": SCHEMA_DIALECT, "$defs": defs}
    return PreparedSchema(schema, frozenset(names), methods, notifications, errors)
