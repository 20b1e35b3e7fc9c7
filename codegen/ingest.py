"""Build ``spec/msp/<version>/`` from a Muse release's official declarations.

``ingest`` takes the ``muse-code-msp`` wheel of one release (downloaded with pip into a cache
folder unless a path is given), reads its stable surface with ``codegen.declarations`` and writes
the project's own bundle: ``msp.schema.json`` (JSON Schema draft 2020-12 with the method,
notification, error and capability tables), ``manifest.json``, the official surface record that
``codegen.surface`` checks the bundle against, and a README. Descriptions are muse-acp's own and
say only what the facts say. The lock gains the release's version, fingerprint and the wheel's
sha256. Output is deterministic: the same wheel gives the same bytes. A package may hold
another host version's declarations (``muse-code-msp`` 1.3.1 declares host 1.3.0): the bundle is
the host version's, and the package version is recorded beside it (``--package``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from codegen.config import SPEC_DIR
from codegen.declarations import (
    Declarations,
    DeclarationsError,
    read_declarations,
    read_experimental,
)
from codegen.lock import read_lock, record_files
from codegen.prepass import SCHEMA_DIALECT
from codegen.surface import DEVIATIONS_KEY, SURFACE_FILE

PACKAGE: Final = "muse-code-msp"
PIP_TIMEOUT_S: Final = 300
SERVER_REQUESTS: Final = {
    "approval/request": ("ApprovalRequestParams", "RequestReceipt"),
    "userInput/request": ("UserInputRequestParams", "RequestReceipt"),
}
"""Requests the host sends to the client. The declarations module's tables list only methods the
host serves, so these come from the protocol's JSON Schema (its ``requests`` member); ingest
adds each one whose params and result types the release declares."""
CLIENT_SENT_NOTIFICATIONS: Final = frozenset({"initialized", "userInput/engaged"})
"""Notifications the client sends (the handshake's closing one, and the note that the user began
on a timed question, from 1.4.4); all others come from the host. The declarations tables do not
say which way a notification goes, so ingest knows these by name."""
_WHEEL_NAME: Final = re.compile(r"^muse_code_msp-(?P<version>[^-]+)-")


class IngestError(Exception):
    """Ingest refuses the wheel or the target folder; the message says why and what to do."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "muse-acp" / "msp-wheels"


def fetch_wheel(version: str, cache_dir: Path) -> Path:
    """The release's wheel from ``cache_dir``, downloaded there with pip when absent."""
    pattern = f"muse_code_msp-{version}-*.whl"
    cached = sorted(cache_dir.glob(pattern))
    if not cached:
        cache_dir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        command += ["-d", str(cache_dir), f"{PACKAGE}=={version}"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:
            raise IngestError(
                f"pip did not fetch {PACKAGE} {version} in {PIP_TIMEOUT_S} s"
            ) from exc
        cached = sorted(cache_dir.glob(pattern))
        if done.returncode != 0 or not cached:
            raise IngestError(
                f"pip could not fetch {PACKAGE}=={version}: {done.stderr.strip()[-400:]}\n"
                "Check the version exists on the package index, or pass --wheel PATH."
            )
    return cached[0]


def _object_description(name: str, uses: dict[str, str]) -> str:
    return uses.get(name, "An MSP object type.")


def _uses(found: Declarations) -> dict[str, str]:
    """Our description of each type a table names, from the role the table gives it."""
    uses: dict[str, str] = {}
    for method, (params, result) in sorted(found.methods.items()):
        if params:
            uses.setdefault(params, f"Params of the host method {method}.")
        if result:
            uses.setdefault(result, f"Result of the host method {method}.")
    for method, params in sorted(found.notifications.items()):
        if params:
            uses.setdefault(params, f"Params of the notification {method}.")
    return uses


def _definitions(found: Declarations) -> dict[str, Any]:
    uses = _uses(found)
    defs: dict[str, Any] = {}
    for name, members in found.objects.items():
        properties = {
            member: {"anyOf": [m.schema, {"type": "null"}]} if m.nullable else m.schema
            for member, m in members.items()
        }
        body: dict[str, Any] = {"description": _object_description(name, uses), "type": "object"}
        body["properties"] = properties
        required = [member for member, m in members.items() if m.required]
        if required:
            body["required"] = required
        defs[name] = body
    for name, values in found.open_enums.items():
        defs[name] = {
            "description": "An open MSP enum: these values are known; others may arrive.",
            "type": "string",
            "enum": list(values),
            "x-msp-openness": "open",
        }
    for name, closed in found.closed_enums.items():
        defs[name] = {
            "description": "A closed MSP enum: no other value is valid.",
            "enum": list(closed),
            "x-msp-openness": "closed",
        }
    for name, schema in found.aliases.items():
        defs[name] = {"description": "An MSP type defined as another type or a union.", **schema}
    return dict(sorted(defs.items()))


def _dangling(document: Any, names: set[str]) -> set[str]:
    if isinstance(document, dict):
        ref = document.get("$ref")
        own = {ref.removeprefix("#/$defs/")} if isinstance(ref, str) else set()
        return (own - names).union(*(_dangling(v, names) for v in document.values()))
    if isinstance(document, list):
        return set().union(*(_dangling(v, names) for v in document))
    return set()


def _server_requests(found: Declarations) -> dict[str, tuple[str, str]]:
    names = found.type_names()
    return {m: pair for m, pair in SERVER_REQUESTS.items() if set(pair) <= names}


def _command(found: Declarations, params: str | None) -> bool:
    """A command is a method whose params require a ``commandId`` (replay-safe intake)."""
    member = found.objects.get(params or "", {}).get("commandId")
    return member is not None and member.required


def build_bundle(found: Declarations) -> dict[str, Any]:
    """The ``msp.schema.json`` document of a release's declarations."""
    methods: dict[str, Any] = {}
    for method, (params, result) in sorted(found.methods.items()):
        row: dict[str, Any] = {"handledBy": "host"}
        if params:
            row["params"] = {"$ref": f"#/$defs/{params}"}
        if result:
            row["result"] = {"$ref": f"#/$defs/{result}"}
        methods[method] = {**row, "command": _command(found, params)}
    for method, (params, result) in sorted(_server_requests(found).items()):
        methods[method] = {
            "handledBy": "client",
            "params": {"$ref": f"#/$defs/{params}"},
            "result": {"$ref": f"#/$defs/{result}"},
            "command": False,
        }
    notifications: dict[str, Any] = {}
    for method, params in sorted(found.notifications.items()):
        side = "host" if method in CLIENT_SENT_NOTIFICATIONS else "client"
        notifications[method] = {"handledBy": side}
        if params:
            notifications[method]["params"] = {"$ref": f"#/$defs/{params}"}
    errors = [
        {
            **row,
            "description": f"Error kind {row['kind']}"
            + ("; retrying may succeed." if row["retryable"] else "; retrying will not help."),
        }
        for row in found.errors
    ]
    defs = _definitions(found)
    dangling = _dangling(defs, set(defs))
    if dangling:
        raise IngestError(f"the declarations refer to undeclared types {sorted(dangling)}")
    return {
        "$schema": SCHEMA_DIALECT,
        "description": (
            f"Muse Session Protocol (MSP) of Muse host {found.host_version}, stable surface, "
            "built by `python -m codegen ingest` from the facts of the release's official "
            "declarations (names, types, requiredness, nullability, enums and tables); the "
            "descriptions are muse-acp's own."
        ),
        "methods": methods,
        "notifications": notifications,
        "errors": errors,
        "capabilities": {"grantable": list(found.capabilities)},
        DEVIATIONS_KEY: [],
        "$defs": defs,
    }


def declared_surface(found: Declarations, wheel_sha256: str) -> dict[str, Any]:
    """The official surface record of a release (``codegen.surface`` compares bundles to it)."""
    types: dict[str, Any] = {}
    for name, members in found.objects.items():
        rows = {m: {"required": v.required, "nullable": v.nullable} for m, v in members.items()}
        types[name] = {"kind": "object", "members": rows}
    for name, values in found.open_enums.items():
        types[name] = {"kind": "openEnum", "values": list(values)}
    for name, closed in found.closed_enums.items():
        types[name] = {"kind": "closedEnum", "values": list(closed)}
    types.update((name, {"kind": "alias"}) for name in found.aliases)
    return {
        "hostVersion": found.host_version,
        "fingerprint": found.fingerprint,
        "wheelSha256": wheel_sha256,
        "methods": {m: {"params": p, "result": r} for m, (p, r) in sorted(found.methods.items())},
        "serverRequests": {
            m: {"params": p, "result": r} for m, (p, r) in sorted(_server_requests(found).items())
        },
        "notifications": {
            m: {"params": p, "handledBy": "host" if m in CLIENT_SENT_NOTIFICATIONS else "client"}
            for m, p in sorted(found.notifications.items())
        },
        "errors": {
            str(row["code"]): {k: row[k] for k in ("kind", "retryable", "overrideKinds")}
            for row in found.errors
        },
        "capabilities": list(found.capabilities),
        "types": dict(sorted(types.items())),
    }


def _readme(found: Declarations, wheel_name: str, wheel_sha256: str, package: str) -> str:
    host = found.host_version
    command = host if package == host else f"{host} --package {package}"
    declares = "" if package == host else f", which declares host version {host}"
    return (
        f"# MSP {host} (ingested)\n\n"
        f"Built by `python -m codegen ingest {command}` from the stable surface "
        f"declared by the official `{PACKAGE}` {package} wheel (`{wheel_name}`, "
        f"sha256 `{wheel_sha256}`){declares}, schema fingerprint `{found.fingerprint}`. "
        "Regenerate it with that command rather than editing it.\n\n"
        f"- {len(found.methods)} host methods, {len(_server_requests(found))} server requests, "
        f"{len(found.notifications)} notifications, {len(found.errors)} errors, "
        f"{len(found.capabilities)} grantable capabilities, {len(found.type_names())} types.\n"
        f"- `{SURFACE_FILE}` records the official surface; `python -m codegen check` fails when "
        f"`msp.schema.json` differs from it anywhere not listed in its `{DEVIATIONS_KEY}`.\n"
    )


def _dump(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def bundle_documents(
    found: Declarations, wheel_name: str, wheel_sha256: str, package: str | None = None
) -> dict[str, str]:
    """Every file of the bundle of ``found`` (a release's declarations, from the package of
    version ``package``, by default the host version they declare), by name."""
    manifest = {"experimental": False, "fingerprint": found.fingerprint, "schemaVersion": 1}
    return {
        "msp.schema.json": _dump(build_bundle(found)),
        "manifest.json": _dump(manifest | {"schemaVersion": found.schema_version}),
        SURFACE_FILE: _dump(declared_surface(found, wheel_sha256)),
        "README.md": _readme(found, wheel_name, wheel_sha256, package or found.host_version),
    }


def ingest(
    version: str,
    wheel: Path,
    spec_dir: Path = SPEC_DIR,
    *,
    package: str | None = None,
    fingerprint: str | None = None,
    replace: bool = False,
    check: bool = False,
) -> list[Path]:
    """Write ``spec_dir/msp/<version>/`` from ``wheel`` and lock it; return the files written.
    ``version`` is the host version the declarations are of; ``package`` the version of the
    package holding them, when it differs (recorded in the lock and the README).
    With ``check``, write nothing and raise unless the folder already holds exactly those bytes
    (and the lock, when it records one, this wheel's sha256 and package version).

    Raises:
        IngestError: the wheel is not this package's, or does not declare host ``version``,
            its fingerprint is not the expected one
            (``fingerprint``, or the one already locked for this version), the module cannot be
            read, or the folder holds a bundle ingest did not make and ``replace`` is not set.
    """
    package = package or version
    named = _WHEEL_NAME.match(wheel.name)
    if named is None or named["version"] != package:
        raise IngestError(f"{wheel.name} is not a {PACKAGE} {package} wheel (by its file name)")
    try:
        found = read_declarations(wheel)
        experimental = read_experimental(wheel)
    except DeclarationsError as exc:
        raise IngestError(str(exc)) from exc
    for surface in (found, experimental):
        if surface is not None and surface.host_version != version:
            hint = (
                f"; if it holds host {surface.host_version}'s declarations, run "
                f"`python -m codegen ingest {surface.host_version} --package {package}`"
                if surface is found
                else ""
            )
            raise IngestError(
                f"{wheel.name} declares REQUIRED_HOST_VERSION {surface.host_version}, "
                f"not {version}{hint}"
            )
    target = spec_dir / "msp" / version
    lock_file = spec_dir / "lock.json"
    locked = read_lock(lock_file).get(f"msp/{version}/msp.schema.json", {})
    expected = fingerprint or locked.get("fingerprint")
    if expected is not None and expected != found.fingerprint:
        raise IngestError(
            f"{wheel.name} declares fingerprint {found.fingerprint}, but {expected} was expected "
            "for this release; check the wheel's origin (its sha256 is in spec/lock.json)"
        )
    handwritten = (target / "msp.schema.json").exists() and not (target / SURFACE_FILE).exists()
    if handwritten and not replace and not check:
        raise IngestError(
            f"spec/msp/{version} holds a bundle that ingest did not make; "
            "pass --replace to overwrite it"
        )
    wheel_sha256 = hashlib.sha256(wheel.read_bytes()).hexdigest()
    documents = bundle_documents(found, wheel.name, wheel_sha256, package)
    if check:
        differing = sorted(
            name
            for name, text in documents.items()
            if not (target / name).is_file() or (target / name).read_text("utf-8") != text
        )
        if locked.get("wheelSha256") not in (None, wheel_sha256):
            differing.append(f"lock.json (wheel sha256 {locked['wheelSha256'][:12]}...)")
        if locked and locked.get("packageVersion", version) != package:
            differing.append(f"lock.json (package {locked.get('packageVersion', version)})")
        if differing:
            raise IngestError(
                f"spec/msp/{version} is not what {wheel.name} rebuilds: "
                + ", ".join(differing)
                + " differ; run without --check to rewrite them"
            )
        return []
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in documents.items():
        (target / name).write_text(text, encoding="utf-8")
        written.append(target / name)
    provenance = (
        f"Built by `python -m codegen ingest` from the official {PACKAGE} {package} wheel "
        "declarations (facts only; descriptions written for muse-acp)."
    )
    facts = {"hostVersion": version, "fingerprint": found.fingerprint, "wheelSha256": wheel_sha256}
    if package != version:
        facts["packageVersion"] = package
    if experimental is not None:
        # The bundle is the stable surface; the experimental fingerprint is what a host reports
        # to a client that opts in, so it is kept to recognise that host too.
        facts["experimentalFingerprint"] = experimental.fingerprint
    record_files(
        spec_dir, lock_file, [p for p in written if p.suffix == ".json"], provenance, facts
    )
    return written
