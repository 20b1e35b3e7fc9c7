"""A saved ``:auto-review`` permission profile never breaks a session, on every version muse-sim
plays (whose ``serve``, like Muse's, runs no automated reviewer): the session's host reads a
private view of the user's Muse settings with an interactive profile, holding no copy of the
credentials and gone with the host, the user's own files untouched; a session Muse saved under
``:auto-review`` loads, and a prompt to it says why it cannot go on and what to do."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from muse_acp.sim.options.versions import HOST_VERSIONS
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.store import SessionMeta, Store
from tests.robust.faults_harness import wait_until

from .harness import WAIT, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = tuple(HOST_VERSIONS)
SECRET = "auth-secret-3e81c0d4"
_SETTINGS = {
    "schema_version": 1,
    "model": "users-own-model",
    "permissions": {"schema_version": 1, "default_profile": ":auto-review"},
}


def _world(tmp_path: Path, version: str) -> tuple[World, Path]:
    """A world whose user saved ``:auto-review`` in their Muse settings, beside a credential."""
    world = make_world(tmp_path, version)
    muse = tmp_path / "user-config" / "muse"
    muse.mkdir(parents=True)
    (muse / "settings.json").write_text(json.dumps(_SETTINGS, indent=4) + "\n")
    credentials = {"schema_version": 1, "providers": {"meta": {"api_key": SECRET}}}
    (muse / "auth.json").write_text(json.dumps(credentials))
    world.extra_env["XDG_CONFIG_HOME"] = str(muse.parent)
    world.extra_env["MUSE_SIM_SETTINGS_CAPTURE"] = str(tmp_path / "settings-capture.jsonl")
    return world, muse


def _files(muse: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(muse.iterdir())}


def _overlays(world: World) -> list[Path]:
    root = world.data_dir / "run" / "settings-overlays"
    return sorted(root.iterdir()) if root.exists() else []


def _profiles_read(world: World, muse: Path) -> list[Any]:
    """The default profile each host read from a settings file other than the user's own."""
    path = Path(world.extra_env["MUSE_SIM_SETTINGS_CAPTURE"])
    reads = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [read["defaultProfile"] for read in reads if read["configHome"] != str(muse.parent)]


def _assert_no_copy_of_credentials(overlay: Path, muse: Path) -> None:
    auth = overlay / "muse" / "auth.json"
    assert auth.is_symlink(), "the credentials are linked, not copied"
    assert auth.resolve() == (muse / "auth.json").resolve()
    for folder, _, names in os.walk(overlay):
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink():
                assert SECRET not in path.read_text(errors="replace"), path


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_full_session_runs_and_leaves_the_users_settings_as_they_were(
    tmp_path: Path, version: str
) -> None:
    world, muse = _world(tmp_path, version)
    before = _files(muse)
    cwd = str(world.workspace)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            first = await agent.prompt(session, "hello")
            (overlay,) = _overlays(world)  # the running host's own view
            _assert_no_copy_of_credentials(overlay, muse)
            await agent.conn.load_session(session_id=session, cwd=cwd, mcp_servers=[])
            second = await agent.prompt(session, "and again")
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert "and again" in agent.client.text(session)
    assert len(world.host_requests("session/resume")) == 1, "the load's host resumed it"
    assert set(_profiles_read(world, muse)) == {":ask-me"}
    assert _files(muse) == before, "the user's settings files are byte-identical"
    assert _overlays(world) == [], "no private view outlived its host"


def _stored_under_auto_review(world: World) -> str:
    """A session Muse keeps under ``:auto-review``, as ``muse exec`` leaves one."""
    session_id, now = new_uuid7(), "2026-11-30T10:00:00Z"
    lease = Store(world.sim_home).create(
        SessionMeta(
            session_id=session_id,
            created_at=now,
            updated_at=now,
            workspace_root=str(world.workspace),
            provider_id="meta",
            model_id=None,
            approval_mode="promptUnmatched",
            first_user_prompt="made by muse exec",
            permission_profile=":auto-review",
        )
    )
    assert lease is not None
    lease.release()
    return session_id


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_session_saved_under_auto_review_loads_and_says_what_to_do(
    tmp_path: Path, version: str
) -> None:
    world, muse = _world(tmp_path, version)
    before = _files(muse)
    session = _stored_under_auto_review(world)
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "go on")
    error = raised.value
    assert error.code == -32603
    assert failure_of(error) == {
        "kind": "permissionProfileUnavailable",
        "source": "host",
        "retryable": False,
        "phase": "starting",
        "execution": "notSubmitted",
    }
    message = str(error)
    assert "':auto-review'" in message
    assert "Continue this conversation in Muse itself, or start a new session here" in message
    assert world.host_requests("turn/start") == []
    assert _files(muse) == before
    assert _overlays(world) == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_private_view_goes_with_a_host_that_crashed(tmp_path: Path, version: str) -> None:
    world, muse = _world(tmp_path, version)
    before = _files(muse)
    world.extra_env["MUSE_SIM_FAULTS"] = "exit:stream"  # the host dies mid-turn
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.prompt(session, "hello")
        assert failure_of(raised.value)["kind"] == "hostExited"
        overlays = world.data_dir / "run" / "settings-overlays"
        await wait_until(
            lambda: not any(overlays.iterdir()), WAIT, lambda: f"{_overlays(world)} are left"
        )
    assert _profiles_read(world, muse) == [":ask-me"], "the host ran with the private view"
    assert _files(muse) == before
