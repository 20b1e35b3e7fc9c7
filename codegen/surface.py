"""The official surface of an MSP release, and the drift check of a bundle against it.

The surface is what a release's declarations promise: host methods, server requests,
notifications, errors, grantable capabilities, and each type's kind, members and which members
are required or nullable. ``python -m codegen ingest`` writes it beside the bundle as
``official.surface.json``; ``drift`` derives the same surface from ``msp.schema.json`` and lists
every difference, except those the bundle declares in its ``x-msp-deviations`` list (each a
``path`` and a ``reason``). A declared deviation that no longer occurs is itself reported, so the
list cannot go stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

SURFACE_FILE: Final = "official.surface.json"
DEVIATIONS_KEY: Final = "x-msp-deviations"
_NULL: Final = {"type": "null"}


def _ref_name(holder: Any) -> str | None:
    if isinstance(holder, dict) and isinstance(holder.get("$ref"), str):
        return str(holder["$ref"]).removeprefix("#/$defs/")
    return None


def _type_of(definition: dict[str, Any]) -> dict[str, Any]:
    if "properties" in definition or definition.get("type") == "object":
        required = set(definition.get("required", []))
        members = {
            name: {"required": name in required, "nullable": _NULL in schema.get("anyOf", [])}
            for name, schema in definition.get("properties", {}).items()
        }
        return {"kind": "object", "members": members}
    values = definition.get("enum", [definition["const"]] if "const" in definition else None)
    if values is not None:
        open_enum = definition.get("x-msp-openness") == "open"
        return {"kind": "openEnum" if open_enum else "closedEnum", "values": list(values)}
    return {"kind": "alias"}


def bundle_surface(bundle: dict[str, Any]) -> dict[str, Any]:
    """The surface ``bundle`` (a parsed ``msp.schema.json``) states."""
    methods: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for name, spec in bundle.get("methods", {}).items():
        row = {"params": _ref_name(spec.get("params")), "result": _ref_name(spec.get("result"))}
        (requests if spec.get("handledBy") == "client" else methods)[name] = row
    notifications = {
        name: {"params": _ref_name(spec.get("params")), "handledBy": spec.get("handledBy")}
        for name, spec in bundle.get("notifications", {}).items()
    }
    errors = {
        str(row["code"]): {
            "kind": row["kind"],
            "retryable": bool(row.get("retryable", False)),
            "overrideKinds": list(row.get("overrideKinds", [])),
        }
        for row in bundle.get("errors", [])
    }
    return {
        "methods": methods,
        "serverRequests": requests,
        "notifications": notifications,
        "errors": errors,
        "capabilities": list(bundle.get("capabilities", {}).get("grantable", [])),
        "types": {name: _type_of(body) for name, body in bundle.get("$defs", {}).items()},
    }


def _key(name: str) -> str:
    return f".{name}" if name.isidentifier() else f"[{json.dumps(name)}]"


def _flatten(value: Any, path: str, into: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for name, inner in value.items():
            _flatten(inner, path + _key(name), into)
    else:
        into[path] = value


def differences(surface: dict[str, Any], record: dict[str, Any]) -> dict[str, str]:
    """Each path where the bundle's ``surface`` and the official ``record`` disagree."""
    ours: dict[str, Any] = {}
    theirs: dict[str, Any] = {}
    for part in ("methods", "serverRequests", "notifications", "errors", "capabilities", "types"):
        _flatten(surface.get(part, {}), part, ours)
        _flatten(record.get(part, {}), part, theirs)
    found: dict[str, str] = {}
    for path in sorted(set(ours) | set(theirs)):
        if path not in ours:
            found[path] = f"official {json.dumps(theirs[path])}, missing from the bundle"
        elif path not in theirs:
            found[path] = f"bundle {json.dumps(ours[path])}, not in the official surface"
        elif ours[path] != theirs[path]:
            found[path] = f"official {json.dumps(theirs[path])}, bundle {json.dumps(ours[path])}"
    return found


def drift(bundle_dir: Path) -> list[str]:
    """Every undeclared difference between ``bundle_dir``'s bundle and its official record, and
    every declared deviation that does not occur; empty when the bundle is faithful."""
    bundle = json.loads((bundle_dir / "msp.schema.json").read_text(encoding="utf-8"))
    record = json.loads((bundle_dir / SURFACE_FILE).read_text(encoding="utf-8"))
    found = differences(bundle_surface(bundle), record)
    declared = {row["path"]: row["reason"] for row in bundle.get(DEVIATIONS_KEY, [])}
    problems = [f"{path}: {what}" for path, what in found.items() if path not in declared]
    problems += [
        f"{path}: declared as a deviation ({reason}) but the bundle agrees with the release"
        for path, reason in declared.items()
        if path not in found
    ]
    return problems


def drift_report(spec_dir: Path) -> str:
    """The drift of every MSP bundle under ``spec_dir`` that has an official record, as text;
    empty when none drifts."""
    lines: list[str] = []
    for record in sorted((spec_dir / "msp").glob(f"*/{SURFACE_FILE}")):
        problems = drift(record.parent)
        if problems:
            lines.append(f"spec/msp/{record.parent.name} drifts from its official surface:")
            lines.extend(f"  {problem}" for problem in problems)
    return "\n".join(lines) + ("\n" if lines else "")
