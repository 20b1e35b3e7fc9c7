"""``python -m codegen ingest`` builds an MSP bundle from a release's declarations wheel.

The wheel here is synthetic: a zip holding a ``muse_code_msp/__init__.py`` in the shape of the
official module, written by the test, so the facts the bundle must carry are known exactly.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import codegen.__main__ as codegen_main
import codegen.generate
from codegen.__main__ import main
from codegen.ingest import IngestError, ingest
from codegen.lock import read_lock, verify_lock, write_lock
from codegen.surface import drift, drift_report

VERSION = "9.8.7"
FINGERPRINT = "sha256:" + "ab" * 32
DOC_TEXT = "WORDING-OF-THE-RELEASE"

MODULE = f'''# GENERATED -- DO NOT EDIT.
"""Synthetic declarations. {DOC_TEXT}"""

from __future__ import annotations

from typing import Any, Final, Literal, TypedDict

SCHEMA_FINGERPRINT: Final[str] = "{FINGERPRINT}"
SCHEMA_VERSION: Final[int] = 1
EXPERIMENTAL: Final[bool] = False
REQUIRED_HOST_VERSION: Final[str] = "{VERSION}"

# {DOC_TEXT}
TurnStatus = str  # open enum: unknown values stay representable
TURN_STATUS_KNOWN_VALUES: Final[tuple[str, ...]] = ("running", "done",)

IfBusy = Literal["queue", "steer"]

RequestId = int | str

class _TurnStartParamsBase(TypedDict):
    commandId: str
    sessionId: str


class TurnStartParams(_TurnStartParamsBase, total=False):
    """{DOC_TEXT}"""

    ifBusy: IfBusy
    note: str | None


class TurnStartResult(TypedDict):
    status: TurnStatus
    turnIds: list[str]
    meta: dict[str, Any]


class Empty(TypedDict, total=False):
    hint: str


class ApprovalRequestParams(TypedDict):
    approvalId: str
    requestId: RequestId


class RequestReceipt(TypedDict):
    received: bool


class MethodSpec(TypedDict):
    description: str
    params: str | None
    result: str | None


class NotificationSpec(TypedDict):
    description: str
    params: str | None


class ErrorSpec(TypedDict):
    code: int
    kind: str
    retryable: bool
    overrideKinds: tuple[str, ...]


METHODS: Final[dict[str, MethodSpec]] = {{
    "turn/start": {{
        "description": "{DOC_TEXT}", "params": "TurnStartParams", "result": "TurnStartResult"
    }},
    "ping/read": {{"description": "{DOC_TEXT}", "params": None, "result": "Empty"}},
}}

NOTIFICATIONS: Final[dict[str, NotificationSpec]] = {{
    "initialized": {{"description": "{DOC_TEXT}", "params": None}},
    "approval/requested": {{"description": "{DOC_TEXT}", "params": "ApprovalRequestParams"}},
}}

ERRORS: Final[tuple[ErrorSpec, ...]] = (
    {{
        "code": -32602, "kind": "invalidParams", "retryable": False,
        "overrideKinds": ("experimentalRequired",),
    }},
    {{"code": -32001, "kind": "overloaded", "retryable": True, "overrideKinds": ()}},
)

GRANTABLE_CAPABILITIES: Final[tuple[str, ...]] = ("userShell",)
'''


def _wheel(tmp_path: Path, source: str = MODULE, version: str = VERSION) -> Path:
    wheel = tmp_path / "wheels" / f"muse_code_msp-{version}-py3-none-any.whl"
    wheel.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(zipfile.ZipInfo("muse_code_msp/__init__.py"), source)
    return wheel


def _bundle(spec: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(
        (spec / "msp" / VERSION / "msp.schema.json").read_text(encoding="utf-8")
    )
    return result


def test_the_bundle_is_a_valid_schema_carrying_exactly_the_declared_facts(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    spec = tmp_path / "spec"
    ingest(VERSION, wheel, spec)
    bundle = _bundle(spec)
    Draft202012Validator.check_schema(bundle)
    assert bundle["methods"] == {
        "ping/read": {"handledBy": "host", "result": {"$ref": "#/$defs/Empty"}, "command": False},
        "turn/start": {
            "handledBy": "host",
            "params": {"$ref": "#/$defs/TurnStartParams"},
            "result": {"$ref": "#/$defs/TurnStartResult"},
            "command": True,
        },
        "approval/request": {
            "handledBy": "client",
            "params": {"$ref": "#/$defs/ApprovalRequestParams"},
            "result": {"$ref": "#/$defs/RequestReceipt"},
            "command": False,
        },
    }
    assert bundle["notifications"] == {
        "approval/requested": {
            "handledBy": "client",
            "params": {"$ref": "#/$defs/ApprovalRequestParams"},
        },
        "initialized": {"handledBy": "host"},
    }
    assert [
        (e["code"], e["kind"], e["retryable"], e["overrideKinds"]) for e in bundle["errors"]
    ] == [
        (-32602, "invalidParams", False, ["experimentalRequired"]),
        (-32001, "overloaded", True, []),
    ]
    assert bundle["capabilities"] == {"grantable": ["userShell"]}
    defs = bundle["$defs"]
    assert set(defs) == {
        "TurnStatus",
        "IfBusy",
        "RequestId",
        "TurnStartParams",
        "TurnStartResult",
        "Empty",
        "ApprovalRequestParams",
        "RequestReceipt",
    }
    assert (defs["TurnStatus"]["enum"], defs["TurnStatus"]["x-msp-openness"]) == (
        ["running", "done"],
        "open",
    )
    assert (defs["IfBusy"]["enum"], defs["IfBusy"]["x-msp-openness"]) == (
        ["queue", "steer"],
        "closed",
    )
    assert defs["TurnStartParams"]["required"] == ["commandId", "sessionId"]
    assert list(defs["TurnStartParams"]["properties"]) == [
        "commandId",
        "sessionId",
        "ifBusy",
        "note",
    ]
    assert "required" not in defs["Empty"]

    # The facts hold on the wire: requiredness, nullability and the closed enum are enforced.
    validator = Draft202012Validator({**bundle, "$ref": "#/$defs/TurnStartParams"})
    assert validator.is_valid({"commandId": "c", "sessionId": "s", "note": None})
    assert not validator.is_valid({"commandId": "c", "note": None})
    assert not validator.is_valid({"commandId": "c", "sessionId": "s", "ifBusy": "replace"})
    assert not validator.is_valid({"commandId": "c", "sessionId": "s", "note": 3})

    folder = spec / "msp" / VERSION
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "manifest.json",
        "msp.schema.json",
        "official.surface.json",
    ]
    assert all(DOC_TEXT not in p.read_text(encoding="utf-8") for p in folder.iterdir())
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert manifest == {"experimental": False, "fingerprint": FINGERPRINT, "schemaVersion": 1}
    entry = read_lock(spec / "lock.json")[f"msp/{VERSION}/msp.schema.json"]
    assert entry["fingerprint"] == FINGERPRINT
    assert entry["hostVersion"] == VERSION
    assert entry["wheelSha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    verify_lock(spec, spec / "lock.json")
    assert drift(folder) == []


def test_ingest_is_byte_for_byte_deterministic(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    first, second = tmp_path / "a", tmp_path / "b"
    ingest(VERSION, wheel, first)
    ingest(VERSION, wheel, second)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert len(files) == 5
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative


def test_drift_names_a_changed_requiredness_until_it_is_declared(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, _wheel(tmp_path), spec)
    folder = spec / "msp" / VERSION
    bundle = _bundle(spec)
    bundle["$defs"]["TurnStartParams"]["required"] = ["commandId"]
    schema = folder / "msp.schema.json"
    schema.write_text(json.dumps(bundle), encoding="utf-8")
    path = "types.TurnStartParams.members.sessionId.required"
    assert drift(folder) == [f"{path}: official true, bundle false"]
    assert f"spec/msp/{VERSION} drifts" in drift_report(spec)

    bundle["x-msp-deviations"] = [{"path": path, "reason": "hosts omit it on replay"}]
    schema.write_text(json.dumps(bundle), encoding="utf-8")
    assert drift(folder) == []

    bundle["$defs"]["TurnStartParams"]["required"] = ["commandId", "sessionId"]
    schema.write_text(json.dumps(bundle), encoding="utf-8")
    assert drift(folder) == [
        f"{path}: declared as a deviation (hosts omit it on replay) "
        "but the bundle agrees with the release"
    ]


def test_drift_names_a_method_the_bundle_lacks(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, _wheel(tmp_path), spec)
    bundle = _bundle(spec)
    del bundle["methods"]["ping/read"]
    (spec / "msp" / VERSION / "msp.schema.json").write_text(json.dumps(bundle), encoding="utf-8")
    assert drift(spec / "msp" / VERSION) == [
        'methods["ping/read"].params: official null, missing from the bundle',
        'methods["ping/read"].result: official "Empty", missing from the bundle',
    ]


@pytest.mark.parametrize(
    ("source", "version", "options", "message"),
    [
        (MODULE, "9.8.8", {}, "declares REQUIRED_HOST_VERSION 9.8.7, not 9.8.8"),
        (
            MODULE,
            VERSION,
            {"fingerprint": "sha256:" + "cd" * 32},
            f"declares fingerprint {FINGERPRINT}, but sha256:cdcd",
        ),
        (MODULE.replace("class Empty(", "class Empty(("), VERSION, {}, "does not parse as Python"),
        (MODULE.replace("GRANTABLE_CAPABILITIES:", "OTHER:"), VERSION, {}, "lacks GRANTABLE"),
        (MODULE.replace("hint: str", "hint: Ghost"), VERSION, {}, r"undeclared types \['Ghost'\]"),
    ],
    ids=["version", "fingerprint", "syntax", "not-declarations", "dangling-type"],
)
def test_ingest_refuses_a_wheel_that_is_not_the_release(
    tmp_path: Path, source: str, version: str, options: dict[str, Any], message: str
) -> None:
    spec = tmp_path / "spec"
    with pytest.raises(IngestError, match=message):
        ingest(version, _wheel(tmp_path, source, version), spec, **options)
    assert not (spec / "msp").exists()
    assert not (spec / "lock.json").exists()


def test_a_reingest_must_match_the_locked_fingerprint(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, _wheel(tmp_path), spec)
    locked = (spec / "lock.json").read_bytes()
    other = _wheel(tmp_path / "other", MODULE.replace(FINGERPRINT, "sha256:" + "ef" * 32))
    with pytest.raises(IngestError, match="but sha256:abab"):
        ingest(VERSION, other, spec)
    assert (spec / "lock.json").read_bytes() == locked


def test_a_hand_written_bundle_is_replaced_only_when_asked(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    folder = spec / "msp" / VERSION
    folder.mkdir(parents=True)
    (folder / "msp.schema.json").write_text("{}\n", encoding="utf-8")
    wheel = _wheel(tmp_path)
    with pytest.raises(IngestError, match="pass --replace"):
        ingest(VERSION, wheel, spec)
    assert (folder / "msp.schema.json").read_text(encoding="utf-8") == "{}\n"
    ingest(VERSION, wheel, spec, replace=True)
    assert drift(folder) == []


def test_the_command_line_ingests_and_reports_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = str(_wheel(tmp_path))
    spec = str(tmp_path / "spec")
    assert main(["ingest", VERSION, "--wheel", wheel, "--spec-dir", spec]) == 0
    assert "official.surface.json" in capsys.readouterr().out
    refused = ["ingest", VERSION, "--wheel", wheel, "--spec-dir", spec]
    assert main([*refused, "--fingerprint", "sha256:" + "00" * 32]) == 2
    assert "codegen: muse_code_msp-9.8.7-py3-none-any.whl declares fingerprint" in (
        capsys.readouterr().err
    )


def test_relocking_keeps_the_ingested_release_facts(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, _wheel(tmp_path), spec)
    (spec / "acp").mkdir()
    (spec / "acp" / "acp.schema.json").write_text("{}\n", encoding="utf-8")
    assert write_lock(spec, spec / "lock.json") == ["acp/acp.schema.json"]
    entry = read_lock(spec / "lock.json")[f"msp/{VERSION}/official.surface.json"]
    assert (entry["hostVersion"], entry["fingerprint"]) == (VERSION, FINGERPRINT)


def test_check_fails_on_a_drifting_ingested_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, _wheel(tmp_path), spec)
    bundle = _bundle(spec)
    bundle["$defs"]["TurnStartResult"]["properties"]["meta"] = {
        "anyOf": [{"type": "object"}, {"type": "null"}]
    }
    (spec / "msp" / VERSION / "msp.schema.json").write_text(json.dumps(bundle), encoding="utf-8")
    # generated/ is current here; only the drift of the bundle in `spec` is under test.
    monkeypatch.setattr(codegen_main, "SPEC_DIR", spec)
    monkeypatch.setattr(codegen.generate, "check", lambda: "")
    assert main(["check"]) == 1
    captured = capsys.readouterr()
    assert "types.TurnStartResult.members.meta.nullable: official false, bundle true" in (
        captured.out
    )
    assert "x-msp-deviations" in captured.err
