"""``python -m codegen diff`` reports what a new MSP release adds, removes and changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codegen.config import SPEC_DIR
from codegen.protocol_diff import diff_bundles, summarise


def _bundle(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "msp.schema.json").write_text(json.dumps(document), encoding="utf-8")
    return folder


def test_the_shipped_bundles_show_read_output_and_rename_as_added_in_1_2_1() -> None:
    text = diff_bundles(SPEC_DIR / "msp" / "1.1.1", SPEC_DIR / "msp" / "1.2.1")
    added_methods = {
        line.split()[1] for line in text.splitlines() if line.startswith("  + ") and "(host" in line
    }
    assert {"item/readOutput", "session/rename"} <= added_methods
    assert text.startswith("MSP protocol diff: 1.1.1 -> 1.2.1\n")


def test_the_shipped_bundles_read_as_a_changelog_of_1_3_0_and_1_4_4() -> None:
    msp = SPEC_DIR / "msp"
    to_130 = diff_bundles(msp / "1.2.1", msp / "1.3.0")
    for line in (
        "  + goal/set  (host, command)",
        "  + task/background  (host, command)",
        "  + usage/read  (host, request)",
        "  + session/statusChanged  (client, notification)",
        "  + subagent/stop  (host, command)",
        "      + attention: array of AttentionFlag (optional)",
        "  + -32032 skillNotFound",
    ):
        assert line in to_130.splitlines(), line
    # Ingested from Muse's declarations from 1.3.0 on, consecutive bundles share their names, so
    # a diff is what the release changed: 1.4.2 adds deletion, feedback, the session events.
    to_142 = diff_bundles(msp / "1.3.0", msp / "1.4.2")
    for line in (
        "  + session/delete  (host, command)",
        "  + session/started  (client, notification)",
        "  + CumulativeCost",
        '  ~ CapabilityName: + "feedback"',
    ):
        assert line in to_142.splitlines(), line
    assert not [ln for ln in to_142.splitlines() if ln.lstrip().startswith("- ")]
    # 1.4.4: its additions, the removal of deletion, one member relaxed.
    to_144 = diff_bundles(msp / "1.4.2", msp / "1.4.4")
    for line in (
        "  + workflow/pause  (host, command)",
        "  - session/delete  (host, command)",
        "  + turn/foregroundCompleted  (client, notification)",
        "  + userInput/engaged  (host, notification)",
        "  - session/deleteCompleted  (client, notification)",
        "      + decidedAt: string (optional)",
        "      ~ sessionId: now optional",
    ):
        assert line in to_144.splitlines(), line
    removed = [ln.strip() for ln in to_144.splitlines() if ln.lstrip().startswith("- ")]
    assert all("Delete" in ln or "delete" in ln for ln in removed), removed


def test_union_variants_are_named_by_tag_or_type(tmp_path: Path) -> None:
    def part(tag: str) -> dict[str, Any]:
        return {"properties": {"type": {"const": tag}}, "required": ["type"]}

    old = {
        "$defs": {
            "Part": {
                "oneOf": [part("text"), part("image")],
                "discriminator": {"propertyName": "type"},
            },
            "Item": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
        }
    }
    new = {
        "$defs": {
            "Part": {
                "oneOf": [part("text"), part("skill")],
                "discriminator": {"propertyName": "type"},
            },
            "Item": {
                "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/C"}, {"$ref": "#/$defs/B"}]
            },
        }
    }
    text = diff_bundles(_bundle(tmp_path, "1.0.0", old), _bundle(tmp_path, "2.0.0", new))
    assert '      + variant "skill"' in text
    assert '      - variant "image"' in text
    assert "      + variant C" in text
    assert "variant A" not in text


def test_members_enum_values_errors_and_capabilities_are_compared(tmp_path: Path) -> None:
    status = {"type": "string", "enum": ["idle", "running"]}
    old = {
        "methods": {"a/b": {"handledBy": "host", "result": {"$ref": "#/$defs/R"}}},
        "$defs": {"R": {"type": "object", "properties": {"status": status, "gone": {}}}},
        "errors": [{"code": -1, "kind": "old"}],
        "capabilities": {"grantable": ["userShell"]},
    }
    new_status = {"type": "string", "enum": ["idle", "paused"]}
    new = {
        "methods": {"a/b": {"handledBy": "host", "result": {"$ref": "#/$defs/R2"}}},
        "$defs": {
            "R": {
                "type": "object",
                "properties": {"status": new_status, "name": {"type": "string"}},
                "required": ["name"],
            }
        },
        "errors": [{"code": -2, "kind": "new"}],
        "capabilities": {"grantable": ["userShell", "rawLog"]},
    }
    text = diff_bundles(_bundle(tmp_path, "1.0.0", old), _bundle(tmp_path, "2.0.0", new))
    assert "  ~ a/b  (result: R -> R2)" in text
    assert "      + name: string (required)" in text
    assert "      - gone" in text
    assert '  ~ R.status: + "paused"; - "running"' in text
    assert "  + -2 new" in text
    assert "  - -1 old" in text
    assert "  + rawLog" in text


def test_identical_bundles_say_so(tmp_path: Path) -> None:
    document = {"methods": {}, "$defs": {"R": {"type": "object"}}}
    text = diff_bundles(_bundle(tmp_path, "1.0.0", document), _bundle(tmp_path, "1.0.1", document))
    assert text.endswith("no protocol differences\n")


def test_member_types_are_summarised_in_one_line() -> None:
    assert summarise({"$ref": "#/$defs/Session"}) == "Session"
    assert summarise({"type": ["string", "null"]}) == "string|null"
    assert summarise({"type": "array", "items": {"$ref": "#/$defs/Item"}}) == "array of Item"
    assert summarise({"anyOf": [{"type": "string"}, {"type": "null"}]}) == "string|null"


def test_consecutive_ingested_releases_read_as_a_changelog() -> None:
    msp = SPEC_DIR / "msp"
    retry = diff_bundles(msp / "1.4.6", msp / "1.4.8")
    assert "  + turn/modelRetryScheduled  (client, notification)\n" in retry
    assert "  + sessionRename\n" in retry
    assert diff_bundles(msp / "1.4.8", msp / "1.4.9") == (
        "MSP protocol diff: 1.4.8 -> 1.4.9\n\n"
        "Notifications\n"
        "  + approval/reviewing  (client, notification)\n\n"
        "Types\n"
        "  + ToolDisplayLabel\n"
        "  ~ Item\n"
        "      + displayLabel: ToolDisplayLabel (optional)\n"
    )
    leave = diff_bundles(msp / "1.4.9", msp / "1.4.11")
    assert "  + session/leave  (host, command)\n" in leave
    assert "  + session/leaveCompleted  (client, notification)\n" in leave
    # A change of values only is listed once, with the values; prose is not a protocol change.
    newest = diff_bundles(msp / "1.4.11", msp / "1.4.13")
    assert '  ~ ItemKind: + "backgroundTerminalCompletion", "overdueNotice"\n' in newest
    assert "  ~ ItemKind\n" not in newest
    for old, new in (("1.4.4", "1.4.6"), ("1.4.6", "1.4.8"), ("1.4.11", "1.4.13")):
        assert "(description or constraints changed)" not in diff_bundles(msp / old, msp / new)
