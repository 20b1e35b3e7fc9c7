"""``python -m codegen diff`` reads ACP bundles too: a move of ``spec/acp`` to a newer ACP
release reads as a changelog, down to members added inside inline session-update variants."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from codegen.__main__ import main
from codegen.config import SPEC_DIR
from codegen.protocol_diff import diff_bundles

ACP = SPEC_DIR / "acp"


def _older_acp(tmp_path: Path) -> Path:
    """The shipped ACP bundle as an older release had it: no tool name, no notices."""
    document: dict[str, Any] = json.loads((ACP / "acp.schema.json").read_text(encoding="utf-8"))
    older = copy.deepcopy(document)
    updates = older["$defs"]["SessionUpdate"]["oneOf"]
    tool_call = next(v for v in updates if v["properties"]["sessionUpdate"]["const"] == "tool_call")
    del tool_call["properties"]["name"]
    updates[:] = [v for v in updates if v["properties"]["sessionUpdate"]["const"] != "notice"]
    del older["$defs"]["ClientSessionCapabilities"]["properties"]["notices"]
    del older["$defs"]["NoticeCapabilities"]
    folder = tmp_path / "older"
    folder.mkdir()
    (folder / "acp.schema.json").write_text(json.dumps(older), encoding="utf-8")
    return folder


def test_an_acp_release_change_reads_as_a_changelog(tmp_path: Path) -> None:
    lines = diff_bundles(_older_acp(tmp_path), ACP).splitlines()
    assert lines[0] == "ACP protocol diff: older -> acp"
    at = lines.index('      ~ variant "tool_call"')
    assert lines[at + 1] == "          + name: string|null (optional)"
    for line in (
        "  + NoticeCapabilities",
        "  ~ SessionUpdate",
        '      + variant "notice"',
        "  ~ ClientSessionCapabilities",
        "      + notices: NoticeCapabilities|null (optional)",
    ):
        assert line in lines, line
    # What both releases have unchanged is not listed.
    assert '      ~ variant "plan"' not in lines
    assert "tool_call_update" not in "\n".join(lines)


def test_the_command_takes_acp_files_and_refuses_what_is_no_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    older = _older_acp(tmp_path) / "acp.schema.json"
    assert main(["diff", str(older), str(ACP / "acp.schema.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ACP protocol diff: older -> acp\n")
    assert '      + variant "notice"' in out.splitlines()
    assert main(["diff", str(tmp_path / "missing"), str(ACP)]) == 2
    assert "neither a schema file nor a folder" in capsys.readouterr().err
