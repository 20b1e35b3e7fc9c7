"""The schema pre-pass names union members by tag, widens open enums and merges spec files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codegen.prepass import SCHEMA_DIALECT, SchemaError, camel_case, prepare


def _write(root: Path, name: str, document: dict[str, Any]) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"$schema": SCHEMA_DIALECT, **document}), encoding="utf-8")


def _tagged(tag: str, *values: str) -> dict[str, Any]:
    members = [
        {
            "type": "object",
            "properties": {tag: {"type": "string", "const": value}},
            "required": [tag],
        }
        for value in values
    ]
    return {"oneOf": members, "discriminator": {"propertyName": tag}}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("resource_link", "ResourceLink"),
        ("agentMessage", "AgentMessage"),
        ("text", "Text"),
        ("tool_call_update", "ToolCallUpdate"),
    ],
)
def test_camel_case_turns_tag_values_into_class_name_prefixes(value: str, expected: str) -> None:
    assert camel_case(value) == expected


def test_inline_union_members_are_named_by_tag_value_not_position(tmp_path: Path) -> None:
    _write(tmp_path, "a.json", {"$defs": {"ContentBlock": _tagged("type", "text", "image")}})
    prepared = prepare(tmp_path, ("a.json",))
    members = prepared.schema["$defs"]["ContentBlock"]["oneOf"]
    assert [m["title"] for m in members] == ["TextContentBlock", "ImageContentBlock"]
    assert {"ContentBlock", "TextContentBlock", "ImageContentBlock"} == prepared.class_names


def test_inline_member_without_required_tag_is_refused(tmp_path: Path) -> None:
    union = _tagged("type", "text")
    union["oneOf"][0]["required"] = []
    _write(tmp_path, "a.json", {"$defs": {"ContentBlock": union}})
    with pytest.raises(SchemaError, match="required const"):
        prepare(tmp_path, ("a.json",))


def test_open_enums_accept_any_string_and_closed_enums_stay_closed(tmp_path: Path) -> None:
    defs = {
        "Thing": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["idle"], "x-msp-openness": "open"},
                "mode": {"type": "string", "enum": ["a"], "x-msp-openness": "closed"},
                "maybe": {
                    "type": ["string", "null"],
                    "enum": ["x", None],
                    "x-msp-openness": "open",
                },
            },
        }
    }
    _write(tmp_path, "a.json", {"$defs": defs})
    properties = prepare(tmp_path, ("a.json",)).schema["$defs"]["Thing"]["properties"]
    assert properties["status"] == {
        "anyOf": [{"type": "string", "enum": ["idle"]}, {"type": "string"}]
    }
    assert properties["mode"] == {"type": "string", "enum": ["a"]}
    assert properties["maybe"]["anyOf"][-1] == {"type": "null"}


def test_cross_file_references_point_at_the_merged_definitions(tmp_path: Path) -> None:
    _write(tmp_path, "acp/acp.json", {"$defs": {"Block": {"type": "object"}}})
    ref = {"$ref": "../acp/acp.json#/$defs/Block"}
    _write(tmp_path, "ext/ext.json", {"$defs": {"Steer": {"type": "array", "items": ref}}})
    prepared = prepare(tmp_path, ("acp/acp.json", "ext/ext.json"))
    assert prepared.schema["$defs"]["Steer"]["items"] == {"$ref": "#/$defs/Block"}


def test_a_definition_declared_in_two_files_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, "a.json", {"$defs": {"Block": {"type": "object"}}})
    _write(tmp_path, "b.json", {"$defs": {"Block": {"type": "object"}}})
    with pytest.raises(SchemaError, match="already defined"):
        prepare(tmp_path, ("a.json", "b.json"))


def test_references_outside_the_target_are_refused(tmp_path: Path) -> None:
    ref = {"$ref": "../elsewhere.json#/$defs/Block"}
    _write(tmp_path, "x/a.json", {"$defs": {"Steer": {"type": "array", "items": ref}}})
    with pytest.raises(SchemaError, match="leaves this target"):
        prepare(tmp_path, ("x/a.json",))


def test_method_tables_are_collected_and_bundle_members_stay_out_of_the_schema(
    tmp_path: Path,
) -> None:
    document = {
        "$defs": {"P": {"type": "object"}, "R": {"type": "object"}},
        "methods": {"m": {"handledBy": "host", "params": {"$ref": "#/$defs/P"}}},
        "notifications": {"n": {"handledBy": "client"}},
        "errors": [{"code": -1, "kind": "k"}],
        "capabilities": {"grantable": []},
    }
    _write(tmp_path, "a.json", document)
    prepared = prepare(tmp_path, ("a.json",))
    assert set(prepared.schema) == {"$schema", "$defs"}
    assert list(prepared.methods) == ["m"]
    assert list(prepared.notifications) == ["n"]
    assert prepared.errors == [{"code": -1, "kind": "k"}]
