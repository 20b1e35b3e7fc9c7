"""A readable protocol diff between two schema bundles (``python -m codegen diff OLD NEW``).

Maintainers read it when a new Muse release is exported into ``spec/msp/<version>/``, or when
``spec/acp`` moves to a newer ACP release: which methods, notifications, types, members, union
variants (and the members of inline variants), enum values, errors and capabilities were added,
removed or changed. Member types are summarised, not dumped, so the diff stays short. A bundle is
a folder holding one ``<protocol>.schema.json`` (``msp`` or ``acp``) or that file itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codegen.prepass import SchemaError

JsonObject = dict[str, Any]


PROTOCOLS = ("msp", "acp")
"""The bundle files a folder may hold, by protocol, in the order they are looked for."""


def bundle_file(path: Path) -> Path:
    """The schema file of a bundle given as its folder or as the file itself.

    Raises:
        SchemaError: nothing at ``path`` is a bundle.
    """
    if path.is_file():
        return path
    for protocol in PROTOCOLS:
        if (path / f"{protocol}.schema.json").is_file():
            return path / f"{protocol}.schema.json"
    names = " or ".join(f"{protocol}.schema.json" for protocol in PROTOCOLS)
    raise SchemaError(f"{path} is neither a schema file nor a folder holding {names}")


def load_bundle(path: Path) -> JsonObject:
    bundle_path = bundle_file(path)
    try:
        loaded: JsonObject = json.loads(bundle_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SchemaError(f"{bundle_path} could not be read as JSON: {exc}") from exc
    return loaded


def _protocol(path: Path) -> str:
    """``MSP`` or ``ACP`` from the bundle file's name (``acp.schema.json``), else ``Schema``."""
    name = bundle_file(path).name.split(".", 1)[0]
    return name.upper() if name in PROTOCOLS else "Schema"


def _labels(old: Path, new: Path) -> tuple[str, str]:
    """Short names for the two sides: the version folder (``1.2.1``), else the paths given."""

    def short(path: Path) -> str:
        return path.name if path.is_dir() else path.parent.name

    if short(old) != short(new):
        return short(old), short(new)
    return old.as_posix(), new.as_posix()


def summarise(schema: Any) -> str:
    """A one-line description of a member schema: ``string|null``, ``Session``, ``array of X``."""
    if not isinstance(schema, dict):
        return "any"
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return "enum"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return "|".join(summarise(member) for member in schema[key])
    declared = schema.get("type")
    if declared == "array":
        return f"array of {summarise(schema.get('items'))}"
    if isinstance(declared, list):
        return "|".join(str(t) for t in declared)
    return str(declared) if declared else "any"


def _enum_sets(node: Any, path: str) -> Iterator[tuple[str, frozenset[str]]]:
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            yield path, frozenset(json.dumps(v) for v in node["enum"])
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, member in value.items():
                    yield from _enum_sets(member, f"{path}.{name}")
            elif key != "enum":
                yield from _enum_sets(value, path)
    elif isinstance(node, list):
        for value in node:
            yield from _enum_sets(value, path)


def _method_line(name: str, spec: JsonObject) -> str:
    side = spec.get("handledBy", "?")
    kind = "command" if spec.get("command") else "request" if "result" in spec else "notification"
    return f"{name}  ({side}, {kind})"


def _compare_tables(old: JsonObject, new: JsonObject) -> list[str]:
    lines = [f"  + {_method_line(n, new[n])}" for n in new if n not in old]
    lines += [f"  - {_method_line(n, old[n])}" for n in old if n not in new]
    for name in (n for n in new if n in old and new[n] != old[n]):
        changes = [
            f"{key}: {summarise(old[name].get(key))} -> {summarise(new[name].get(key))}"
            if key in ("params", "result")
            else f"{key}: {old[name].get(key)} -> {new[name].get(key)}"
            for key in sorted(set(old[name]) | set(new[name]))
            if old[name].get(key) != new[name].get(key)
        ]
        lines.append(f"  ~ {name}  ({'; '.join(changes)})")
    return lines


def _variants(definition: JsonObject) -> dict[str, Any]:
    """The members of a union definition by label: the referenced type, else the tag value."""
    tag = definition.get("discriminator", {}).get("propertyName")
    for key in ("oneOf", "anyOf"):
        members = definition.get(key)
        if not isinstance(members, list):
            continue
        labelled: dict[str, Any] = {}
        for member in members:
            value = member.get("properties", {}).get(tag, {}).get("const") if tag else None
            label = json.dumps(value) if isinstance(value, str) else summarise(member)
            labelled[label] = member
        return labelled
    return {}


def _compare_members(old: JsonObject, new: JsonObject, indent: str) -> list[str]:
    """Added, removed, retyped and newly (not) required members of one object schema."""
    old_props, new_props = old.get("properties", {}), new.get("properties", {})
    old_req, new_req = set(old.get("required", [])), set(new.get("required", []))
    members: list[str] = []
    for prop in new_props:
        need = "required" if prop in new_req else "optional"
        if prop not in old_props:
            members.append(f"{indent}+ {prop}: {summarise(new_props[prop])} ({need})")
        elif summarise(old_props[prop]) != summarise(new_props[prop]):
            members.append(
                f"{indent}~ {prop}: {summarise(old_props[prop])} -> {summarise(new_props[prop])}"
            )
        elif (prop in old_req) != (prop in new_req):
            members.append(f"{indent}~ {prop}: now {need}")
    members += [f"{indent}- {prop}" for prop in old_props if prop not in new_props]
    return members


def _without_enums(node: Any) -> Any:
    """``node`` without its ``enum`` value lists (compared by ``_compare_enums``) and its
    descriptions (prose, not protocol)."""
    if isinstance(node, dict):
        return {k: _without_enums(v) for k, v in node.items() if k not in ("enum", "description")}
    if isinstance(node, list):
        return [_without_enums(v) for v in node]
    return node


def _compare_defs(old: JsonObject, new: JsonObject) -> list[str]:
    lines = [f"  + {name}" for name in new if name not in old]
    lines += [f"  - {name}" for name in old if name not in new]
    for name in (n for n in new if n in old and new[n] != old[n]):
        members = _compare_members(old[name], new[name], "      ")
        old_variants, new_variants = _variants(old[name]), _variants(new[name])
        members += [f"      + variant {v}" for v in new_variants if v not in old_variants]
        members += [f"      - variant {v}" for v in old_variants if v not in new_variants]
        # An inline variant (ACP's session updates) has members of its own that change.
        for label in (v for v in new_variants if v in old_variants):
            changed = _compare_members(old_variants[label], new_variants[label], "          ")
            if changed:
                members += [f"      ~ variant {label}", *changed]
        if not members and _without_enums(old[name]) == _without_enums(new[name]):
            continue  # only its values (listed below) or its prose changed
        if not members:
            members.append("      ~ (description or constraints changed)")
        lines.append(f"  ~ {name}")
        lines.extend(members)
    return lines


def _compare_enums(old: JsonObject, new: JsonObject) -> list[str]:
    """Enum value changes in the definitions both bundles share, by ``Def.member`` path."""
    old_sets = {p: s for name, d in old.items() for p, s in _enum_sets(d, name)}
    new_sets = {p: s for name, d in new.items() for p, s in _enum_sets(d, name)}
    lines = []
    for path in new_sets:
        if path in old_sets and old_sets[path] != new_sets[path]:
            added = ", ".join(sorted(new_sets[path] - old_sets[path]))
            removed = ", ".join(sorted(old_sets[path] - new_sets[path]))
            parts = ([f"+ {added}"] if added else []) + ([f"- {removed}"] if removed else [])
            lines.append(f"  ~ {path}: {'; '.join(parts)}")
    return lines


def diff_bundles(old_path: Path, new_path: Path) -> str:
    old, new = load_bundle(old_path), load_bundle(new_path)
    sections: list[tuple[str, list[str]]] = [
        ("Methods", _compare_tables(old.get("methods", {}), new.get("methods", {}))),
        (
            "Notifications",
            _compare_tables(old.get("notifications", {}), new.get("notifications", {})),
        ),
        ("Types", _compare_defs(old.get("$defs", {}), new.get("$defs", {}))),
        (
            "Enum values",
            _compare_enums(
                {k: v for k, v in old.get("$defs", {}).items() if k in new.get("$defs", {})},
                {k: v for k, v in new.get("$defs", {}).items() if k in old.get("$defs", {})},
            ),
        ),
    ]
    old_errors = {(e["code"], e["kind"]) for e in old.get("errors", [])}
    new_errors = {(e["code"], e["kind"]) for e in new.get("errors", [])}
    sections.append(
        (
            "Errors",
            [f"  + {c} {k}" for c, k in sorted(new_errors - old_errors)]
            + [f"  - {c} {k}" for c, k in sorted(old_errors - new_errors)],
        )
    )
    old_caps = set(old.get("capabilities", {}).get("grantable", []))
    new_caps = set(new.get("capabilities", {}).get("grantable", []))
    sections.append(
        (
            "Grantable capabilities",
            [f"  + {c}" for c in sorted(new_caps - old_caps)]
            + [f"  - {c}" for c in sorted(old_caps - new_caps)],
        )
    )
    old_label, new_label = _labels(old_path, new_path)
    header = f"{_protocol(new_path)} protocol diff: {old_label} -> {new_label}\n"
    body = "".join(f"\n{title}\n" + "\n".join(lines) + "\n" for title, lines in sections if lines)
    return header + (body or "\nno protocol differences\n")
