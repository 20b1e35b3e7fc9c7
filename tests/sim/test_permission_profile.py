"""A saved ``:auto-review`` permission profile, as muse-sim plays it on every version: with it in
the settings file ``serve`` starts no session, and a session stored under it is not resumed;
any other profile is recorded with the sessions it starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from muse_acp.ids import new_uuid7
from muse_acp.sim.options.mcp_settings import capture_settings, read_settings
from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.state.store import SessionMeta, Store

from .harness import sim_served

pytestmark = pytest.mark.anyio

VERSIONS = tuple(HOST_VERSIONS)
REFUSAL = (
    "internal error: compose session permission profile: permission profile ':auto-review' "
    "cannot be used: the automated reviewer is unavailable on this host"
)


def _refused(error: dict[str, Any]) -> None:
    assert (error["code"], error["message"]) == (-32603, REFUSAL)
    assert error["data"]["kind"] == "internal"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_saved_auto_review_profile_starts_no_session(tmp_path: Path, version: str) -> None:
    async with sim_served(tmp_path / "home", version, default_profile=":auto-review") as peer:
        await peer.initialize()
        error = await peer.error(
            "session/start",
            {"commandId": new_uuid7(), "sessionId": new_uuid7(), "workspaceRoot": "/p"},
        )
    _refused(error)
    assert list(Store(tmp_path / "home").all_metas()) == [], "no session was made"


def _stored(home: Path, profile: str | None) -> str:
    """A session stored under ``profile``, as ``muse exec`` leaves one."""
    session_id, now = new_uuid7(), "2026-11-30T10:00:00Z"
    lease = Store(home).create(
        SessionMeta(
            session_id=session_id,
            created_at=now,
            updated_at=now,
            workspace_root="/p",
            provider_id="meta",
            model_id=None,
            approval_mode="promptUnmatched",
            permission_profile=profile,
        )
    )
    assert lease is not None
    lease.release()
    return session_id


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_session_stored_under_auto_review_is_read_but_not_resumed(
    tmp_path: Path, version: str
) -> None:
    home = tmp_path / "home"
    refused, interactive = _stored(home, ":auto-review"), _stored(home, ":ask-me")
    async with sim_served(home, version) as peer:
        await peer.initialize()
        read = await peer.call("session/read", {"sessionId": refused, "excludeItems": True})
        error = await peer.error("session/resume", {"commandId": new_uuid7(), "sessionId": refused})
        resumed = await peer.call(
            "session/resume", {"commandId": new_uuid7(), "sessionId": interactive}
        )
    assert read["session"]["sessionId"] == refused
    _refused(error)
    assert resumed["session"]["sessionId"] == interactive


@pytest.mark.parametrize("version", VERSIONS)
async def test_an_interactive_profile_is_kept_with_the_sessions_it_starts(
    tmp_path: Path, version: str
) -> None:
    home = tmp_path / "home"
    async with sim_served(home, version, default_profile=":ask-me") as peer:
        await peer.initialize()
        session_id = await peer.start()
    meta = Store(home).read_meta(session_id)
    assert meta is not None
    assert meta.permission_profile == ":ask-me"


def test_the_profile_is_read_and_captured(tmp_path: Path) -> None:
    muse = tmp_path / "config" / "muse"
    muse.mkdir(parents=True)
    settings = {"permissions": {"schema_version": 1, "default_profile": ":auto-review"}}
    (muse / "settings.json").write_text(json.dumps(settings))
    env = {"XDG_CONFIG_HOME": str(muse.parent)}
    read = read_settings(env)
    assert (dict(read.servers), read.default_profile) == ({}, ":auto-review")
    (muse / "settings.json").write_text(json.dumps({"permissions": ":auto-review"}))
    assert read_settings(env).default_profile is None, "no profile where none is named"
    env["MUSE_SIM_SETTINGS_CAPTURE"] = str(tmp_path / "capture.jsonl")
    capture_settings(env, {}, ":auto-review")
    (record,) = [json.loads(line) for line in (tmp_path / "capture.jsonl").read_text().splitlines()]
    assert (record["defaultProfile"], record["mcpServers"]) == (":auto-review", {})
