"""Check that an ingested bundle is exactly what ``ingest`` writes, with or without the wheel.

Contract: ``declarations_of(folder)`` reads back, from an ingested bundle's own
``msp.schema.json`` and ``manifest.json``, the facts ingest took from the release's wheel
(``Declarations``). ``rewrite(folder, lock_entry)`` renders the bundle's files from those facts
(and the package version the lock records, when not the host's) with ingest's own writer; a
bundle whose files differ from that rendering was edited by hand or written by another writer,
and cannot be what ingest rebuilds. ``compare(written, folder)``
lists the files of ``folder`` that differ from ``written`` (a rebuild in another folder, from
the real wheel: ``python -m codegen ingest VERSION --check``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codegen.declarations import Declarations, Member
from codegen.ingest import bundle_documents
from codegen.surface import DEVIATIONS_KEY

__all__ = ["compare", "declarations_of", "rewrite"]

_NULL = {"type": "null"}


def _member(schema: dict[str, Any], required: bool) -> Member:
    arms = schema.get("anyOf")
    if list(schema) == ["anyOf"] and isinstance(arms, list) and _NULL in arms:
        rest = [arm for arm in arms if arm != _NULL]
        inner = rest[0] if len(rest) == 1 else {"anyOf": rest}
        return Member(inner, required, True)
    return Member(schema, required, False)


def _ref(spec: dict[str, Any], key: str) -> str | None:
    ref = spec.get(key, {}).get("$ref")
    return str(ref).removeprefix("#/$defs/") if ref else None


def declarations_of(folder: Path) -> Declarations:
    """The facts of the ingested bundle in ``folder`` (see the module contract)."""
    bundle = json.loads((folder / "msp.schema.json").read_text(encoding="utf-8"))
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    record = json.loads((folder / "official.surface.json").read_text(encoding="utf-8"))
    found = Declarations(
        fingerprint=str(manifest["fingerprint"]),
        host_version=str(record["hostVersion"]),
        schema_version=int(manifest["schemaVersion"]),
    )
    for name, body in bundle["$defs"].items():
        rest = {k: v for k, v in body.items() if k != "description"}
        if "properties" in body:
            required = set(body.get("required", []))
            found.objects[name] = {
                member: _member(schema, member in required)
                for member, schema in body["properties"].items()
            }
        elif body.get("x-msp-openness") == "open":
            found.open_enums[name] = tuple(body["enum"])
        elif body.get("x-msp-openness") == "closed":
            found.closed_enums[name] = tuple(body["enum"])
        else:
            found.aliases[name] = rest
    for method, spec in bundle["methods"].items():
        if spec["handledBy"] == "host":
            found.methods[method] = (_ref(spec, "params"), _ref(spec, "result"))
    for method, spec in bundle["notifications"].items():
        found.notifications[method] = _ref(spec, "params")
    found.errors = [
        {k: row[k] for k in ("code", "kind", "retryable", "overrideKinds")}
        for row in bundle["errors"]
    ]
    found.capabilities = tuple(bundle["capabilities"]["grantable"])
    if bundle.get(DEVIATIONS_KEY):
        raise ValueError(f"{folder} declares deviations; ingest writes none")
    return found


def rewrite(folder: Path, lock_entry: dict[str, str]) -> dict[str, str]:
    """The files ingest writes for the facts of ``folder``, by name."""
    found = declarations_of(folder)
    package = lock_entry.get("packageVersion", found.host_version)
    wheel_name = f"muse_code_msp-{package}-py3-none-any.whl"
    return bundle_documents(found, wheel_name, lock_entry["wheelSha256"], package)


def compare(written: dict[str, str], folder: Path) -> list[str]:
    """The names of ``written`` whose text differs from the file of that name in ``folder``."""
    return sorted(
        name
        for name, text in written.items()
        if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text
    )
