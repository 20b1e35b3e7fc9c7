"""``python -m codegen ingest`` builds an MSP bundle from a release's declarations wheel (a
synthetic one, ``msp_wheel``), and refuses a wheel that is not the release asked for."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from codegen.__main__ import main
from codegen.ingest import IngestError, ingest
from codegen.lock import read_lock, verify_lock, write_lock
from codegen.surface import drift

from .msp_wheel import (
    DOC_TEXT,
    EXPERIMENTAL_FINGERPRINT,
    EXPERIMENTAL_MODULE,
    FINGERPRINT,
    MODULE,
    VERSION,
    read_bundle,
    write_wheel,
)


def test_the_bundle_is_a_valid_schema_carrying_exactly_the_declared_facts(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path)
    spec = tmp_path / "spec"
    ingest(VERSION, wheel, spec)
    bundle = read_bundle(spec)
    Draft202012Validator.check_schema(bundle)
    assert bundle["methods"] == {
        "ping/read": {
            "handledBy": "host",
            "params": {"$ref": "#/$defs/PageParams"},
            "result": {"$ref": "#/$defs/Empty"},
            "command": False,
        },
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
    assert sorted(defs) == (
        [
            "ApprovalRequestParams",
            "Empty",
            "IfBusy",
            "PageParams",
            "RequestId",
            "RequestReceipt",
            "TurnStartParams",
            "TurnStartResult",
            "TurnStatus",
        ]
    )
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
    assert "required" not in defs["PageParams"]
    assert defs["PageParams"]["properties"] == {
        "from": {"type": "integer"},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    }

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
    assert entry["experimentalFingerprint"] == EXPERIMENTAL_FINGERPRINT
    verify_lock(spec, spec / "lock.json")
    assert drift(folder) == []


def test_ingest_is_byte_for_byte_deterministic(tmp_path: Path) -> None:
    wheel = write_wheel(tmp_path)
    first, second = tmp_path / "a", tmp_path / "b"
    ingest(VERSION, wheel, first)
    ingest(VERSION, wheel, second)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert len(files) == 5
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative


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
        ingest(version, write_wheel(tmp_path, source, version), spec, **options)
    assert not (spec / "msp").exists()
    assert not (spec / "lock.json").exists()


def test_a_reingest_must_match_the_locked_fingerprint(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, write_wheel(tmp_path), spec)
    locked = (spec / "lock.json").read_bytes()
    other = write_wheel(tmp_path / "other", MODULE.replace(FINGERPRINT, "sha256:" + "ef" * 32))
    with pytest.raises(IngestError, match="but sha256:abab"):
        ingest(VERSION, other, spec)
    assert (spec / "lock.json").read_bytes() == locked


def test_a_hand_written_bundle_is_replaced_only_when_asked(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    folder = spec / "msp" / VERSION
    folder.mkdir(parents=True)
    (folder / "msp.schema.json").write_text("{}\n", encoding="utf-8")
    wheel = write_wheel(tmp_path)
    with pytest.raises(IngestError, match="pass --replace"):
        ingest(VERSION, wheel, spec)
    assert (folder / "msp.schema.json").read_text(encoding="utf-8") == "{}\n"
    ingest(VERSION, wheel, spec, replace=True)
    assert drift(folder) == []


def test_the_command_line_ingests_and_reports_a_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = str(write_wheel(tmp_path))
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
    ingest(VERSION, write_wheel(tmp_path), spec)
    (spec / "acp").mkdir()
    (spec / "acp" / "acp.schema.json").write_text("{}\n", encoding="utf-8")
    assert write_lock(spec, spec / "lock.json") == ["acp/acp.schema.json"]
    entry = read_lock(spec / "lock.json")[f"msp/{VERSION}/official.surface.json"]
    assert (entry["hostVersion"], entry["fingerprint"]) == (VERSION, FINGERPRINT)


def test_the_experimental_surface_is_recognised_but_not_bundled(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, write_wheel(tmp_path, experimental=None), spec)
    entry = read_lock(spec / "lock.json")[f"msp/{VERSION}/msp.schema.json"]
    assert "experimentalFingerprint" not in entry
    ingest(VERSION, write_wheel(tmp_path / "both"), spec)
    assert "secret/read" not in read_bundle(spec)["methods"]
    older = EXPERIMENTAL_MODULE.replace(f'"{VERSION}"', '"9.8.6"')
    with pytest.raises(IngestError, match=r"declares REQUIRED_HOST_VERSION 9\.8\.6, not 9\.8\.7"):
        ingest(VERSION, write_wheel(tmp_path / "mixed", experimental=older), spec)


def test_a_cached_wheel_is_used_without_fetching(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = write_wheel(tmp_path).parent

    def no_pip(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"pip was called: {args}")

    monkeypatch.setattr(subprocess, "run", no_pip)
    spec = tmp_path / "spec"
    assert main(["ingest", VERSION, "--cache-dir", str(cache), "--spec-dir", str(spec)]) == 0
    assert drift(spec / "msp" / VERSION) == []


def test_a_package_holding_another_host_version_is_ingested_under_that_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As muse-code-msp 1.3.1 holds host 1.3.0's declarations: the package is 9.8.8, the host 9.8.7.
    wheel = write_wheel(tmp_path, version="9.8.8")
    spec = tmp_path / "spec"
    assert main(["ingest", "9.8.8", "--wheel", str(wheel), "--spec-dir", str(spec)]) == 2
    assert (
        "declares REQUIRED_HOST_VERSION 9.8.7, not 9.8.8; if it holds host 9.8.7's declarations, "
        "run `python -m codegen ingest 9.8.7 --package 9.8.8`"
    ) in capsys.readouterr().err
    with pytest.raises(IngestError, match=r"is not a muse-code-msp 9\.8\.7 wheel"):
        ingest(VERSION, wheel, spec)
    assert not (spec / "msp").exists()
    args = ["ingest", VERSION, "--package", "9.8.8", "--wheel", str(wheel), "--spec-dir", str(spec)]
    assert main(args) == 0
    sha256 = hashlib.sha256(wheel.read_bytes()).hexdigest()
    entry = read_lock(spec / "lock.json")[f"msp/{VERSION}/msp.schema.json"]
    assert (entry["hostVersion"], entry["packageVersion"], entry["wheelSha256"]) == (
        VERSION,
        "9.8.8",
        sha256,
    )
    assert "muse-code-msp 9.8.8 wheel" in entry["provenance"]
    readme = (spec / "msp" / VERSION / "README.md").read_text(encoding="utf-8")
    assert f"`python -m codegen ingest {VERSION} --package 9.8.8`" in readme
    assert f"`muse-code-msp` 9.8.8 wheel (`{wheel.name}`, sha256 `{sha256}`)" in readme
    assert f"which declares host version {VERSION}" in readme
    assert read_bundle(spec)["description"].startswith(
        f"Muse Session Protocol (MSP) of Muse host {VERSION},"
    )
    assert drift(spec / "msp" / VERSION) == []
