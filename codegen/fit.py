"""Whether muse-acp's MSP vocabulary can read every frame a bundle allows.

Contract: ``misfits(vocabulary, bundle)`` takes two ``msp.schema.json`` documents and lists, one
line each, every place where the vocabulary would refuse what a host of the bundle may send
(types the vocabulary reaches from a host method's result, from the params of a notification or
request the host sends, or ``ErrorData``; what muse-acp sends it builds itself): for a pair of
object types both describe, a member the vocabulary requires that the bundle leaves optional or
lacks, and a member the bundle lets be null that the vocabulary does not; for a pair of enums,
a value the bundle declares that a closed enum of the vocabulary lacks. Types are paired by
name, by the params and result of each method and the params of each notification both tables
have, and then through the members of paired objects that refer to a named type (directly, as
array items or map values, or nullable). A pair of different kinds (the vocabulary's item union
against Muse's one item object) is not compared: the vocabulary's arms name their own kind.
``fit_report(spec_dir)`` lists the misfits against every bundle (``python -m codegen check``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["fit_report", "incoming", "misfits"]

_NULL = {"type": "null"}


def _named(schema: Any) -> str | None:
    """The one named type a member's schema refers to (through null, arrays and maps)."""
    if not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.removeprefix("#/$defs/")
    arms = [arm for arm in schema.get("anyOf", []) if arm != _NULL]
    if len(arms) == 1:
        return _named(arms[0])
    for inner in (schema.get("items"), schema.get("additionalProperties")):
        if isinstance(inner, dict):
            return _named(inner)
    return None


_CONSTRAINING = frozenset({"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"})


def _nullable(schema: Any) -> bool:
    """Whether the member's schema accepts null (one that constrains nothing accepts it)."""
    if not isinstance(schema, dict):
        return False
    if not _CONSTRAINING & set(schema):
        return True
    kinds = schema.get("type")
    return (
        _NULL in schema.get("anyOf", [])
        or (isinstance(kinds, list) and "null" in kinds)
        or any(
            isinstance(arm, dict) and arm.get("type") == "null" for arm in schema.get("oneOf", ())
        )
    )


def _values(schema: Any, defs: dict[str, Any]) -> tuple[list[Any], bool] | None:
    """An enum's values and whether it is closed, for a definition or an inline member."""
    if not isinstance(schema, dict):
        return None
    name = _named(schema)
    if name is not None and name in defs and not isinstance(schema.get("enum"), list):
        return _values(defs[name], defs)
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"]), schema.get("x-msp-openness") != "open"
    if "const" in schema:
        return [schema["const"]], True
    return None


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        own = {ref.removeprefix("#/$defs/")} if isinstance(ref, str) else set()
        return own.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()


def _roles(spec: dict[str, Any], table: str) -> tuple[str, ...]:
    """The roles of a table row that a host sends: a host method's result, the params of
    what the client handles (notifications and server requests)."""
    if spec.get("handledBy") == "client":
        return ("params",)
    return ("result",) if table == "methods" else ()


def incoming(vocabulary: dict[str, Any]) -> set[str]:
    """The vocabulary's types that can arrive from a host (see the contract)."""
    defs = vocabulary["$defs"]
    pending = {"ErrorData"} & set(defs)
    for table in ("methods", "notifications"):
        for spec in vocabulary.get(table, {}).values():
            pending |= {n for role in _roles(spec, table) if (n := _named(spec.get(role)))}
    reached: set[str] = set()
    while pending:
        name = pending.pop()
        if name in reached or name not in defs:
            continue
        reached.add(name)
        pending |= _refs(defs[name])
    return reached


def _seeds(vocabulary: dict[str, Any], bundle: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Pairs (vocabulary type, bundle type, where) from shared names and shared tables."""
    ours, theirs = vocabulary["$defs"], bundle["$defs"]
    pairs = [(name, name, name) for name in sorted(set(ours) & set(theirs))]
    for table in ("methods", "notifications"):
        for method in sorted(set(vocabulary.get(table, {})) & set(bundle.get(table, {}))):
            for role in _roles(vocabulary[table][method], table):
                mine = _named(vocabulary[table][method].get(role))
                other = _named(bundle[table][method].get(role))
                if mine and other and mine != other:
                    pairs.append((mine, other, f"{method} {role}"))
    return pairs


def _members(definition: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    return definition.get("properties", {}), set(definition.get("required", []))


def misfits(vocabulary: dict[str, Any], bundle: dict[str, Any]) -> list[str]:
    """Every place the vocabulary would refuse what ``bundle`` allows (see the contract)."""
    ours, theirs = vocabulary["$defs"], bundle["$defs"]
    found: list[str] = []
    seen: set[tuple[str, str]] = set()
    arriving = incoming(vocabulary)
    pending = _seeds(vocabulary, bundle)
    while pending:
        mine, other, where = pending.pop(0)
        if (mine, other) in seen or mine not in arriving or other not in theirs:
            continue
        seen.add((mine, other))
        label = mine if mine == other else f"{mine} (Muse's {other}, {where})"
        closed = _values(ours[mine], ours)
        declared = _values(theirs[other], theirs)
        if closed is not None and declared is not None and closed[1]:
            missing = [v for v in declared[0] if v not in closed[0]]
            if missing:
                found.append(f"{label}: closed enum lacks {missing}")
            continue
        if "properties" not in ours[mine] or "properties" not in theirs[other]:
            continue
        (my_members, my_required), (their_members, their_required) = (
            _members(ours[mine]),
            _members(theirs[other]),
        )
        for member, schema in my_members.items():
            if member in my_required and member not in their_required:
                state = "optional" if member in their_members else "not declared"
                found.append(f"{label}.{member}: required here, {state} in the bundle")
            if member not in their_members:
                continue
            their_schema = their_members[member]
            if _nullable(their_schema) and not _nullable(schema):
                found.append(f"{label}.{member}: the bundle allows null, the vocabulary does not")
            inner_mine, inner_other = _named(schema), _named(their_schema)
            if inner_mine and inner_other:
                pending.append((inner_mine, inner_other, f"{label}.{member}"))
            else:
                closed_member = _values(schema, ours)
                declared_member = _values(their_schema, theirs)
                if closed_member and declared_member and closed_member[1]:
                    missing = [v for v in declared_member[0] if v not in closed_member[0]]
                    if missing:
                        found.append(f"{label}.{member}: closed enum lacks {missing}")
    return found


def fit_report(spec_dir: Path) -> str:
    """Every misfit of ``spec_dir``'s vocabulary against each of its bundles ("" when none)."""
    path = spec_dir / "msp-vocabulary" / "msp.schema.json"
    if not path.is_file():
        return ""
    vocabulary = json.loads(path.read_text(encoding="utf-8"))
    lines = []
    for bundle in sorted((spec_dir / "msp").glob("*/msp.schema.json")):
        document = json.loads(bundle.read_text(encoding="utf-8"))
        lines += [f"msp/{bundle.parent.name}: {line}\n" for line in misfits(vocabulary, document)]
    return "".join(lines)
