"""An ingested bundle is checked against the official surface recorded beside it: any
difference fails ``python -m codegen check`` unless the bundle declares it as a deviation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import codegen.__main__ as codegen_main
import codegen.generate
from codegen.__main__ import main
from codegen.ingest import ingest
from codegen.surface import drift, drift_report

from .msp_wheel import VERSION, read_bundle, write_wheel


def test_drift_names_a_changed_requiredness_until_it_is_declared(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, write_wheel(tmp_path), spec)
    folder = spec / "msp" / VERSION
    bundle = read_bundle(spec)
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
    ingest(VERSION, write_wheel(tmp_path), spec)
    bundle = read_bundle(spec)
    del bundle["methods"]["ping/read"]
    (spec / "msp" / VERSION / "msp.schema.json").write_text(json.dumps(bundle), encoding="utf-8")
    assert drift(spec / "msp" / VERSION) == [
        'methods["ping/read"].params: official "PageParams", missing from the bundle',
        'methods["ping/read"].result: official "Empty", missing from the bundle',
    ]


def test_check_fails_on_a_drifting_ingestedread_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "spec"
    ingest(VERSION, write_wheel(tmp_path), spec)
    bundle = read_bundle(spec)
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
