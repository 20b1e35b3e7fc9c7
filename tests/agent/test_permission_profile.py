"""A saved ``:auto-review`` profile in the settings overlay, and Muse's refusal of a profile as
the user reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.agent.hosting.hosts import SetupFailure
from muse_acp.agent.hosting.mcp_overlay import overlay_root, read_user_settings, settings_overlay
from muse_acp.agent.hosting.permission_profile import interactive, profile_refusal
from muse_acp.rpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError

from .test_mcp_overlay import _servers, _user_home

SAVED: dict[str, Any] = {
    "schema_version": 1,
    "model": "mine",
    "permissions": {"schema_version": 1, "default_profile": ":auto-review", "profiles": {}},
}
HOST_TEXT = (
    "internal error: compose session permission profile: permission profile ':auto-review' "
    "cannot be used: the automated reviewer is unavailable on this host"
)
SESSION = "019a0000-0000-7000-8000-000000000001"


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"permissions": {"default_profile": ":ask-me"}},
        {"permissions": {"default_profile": ":unrestricted"}},
        {"permissions": ":auto-review"},
        {"default_profile": ":auto-review"},
    ],
)
def test_only_a_saved_auto_review_is_replaced(settings: dict[str, Any]) -> None:
    assert interactive(settings) is None


def test_the_interactive_settings_change_the_profile_alone() -> None:
    made = interactive(SAVED)
    assert made == {
        **SAVED,
        "permissions": {"schema_version": 1, "default_profile": ":ask-me", "profiles": {}},
    }
    assert SAVED["permissions"]["default_profile"] == ":auto-review", "the input stays as it was"


async def _written(tmp_path: Path, with_servers: bool) -> dict[str, Any]:
    home = _user_home(tmp_path, SAVED)
    before = (home / "muse" / "settings.json").read_bytes()
    environ = {"XDG_CONFIG_HOME": str(home)}
    user = await read_user_settings(environ)
    servers = _servers() if with_servers else ()
    async with settings_overlay(overlay_root(tmp_path / "data"), servers, user, environ) as env:
        overlay = Path(env["XDG_CONFIG_HOME"])
        written: dict[str, Any] = json.loads((overlay / "muse" / "settings.json").read_text())
        assert (overlay / "muse" / "auth.json").is_symlink()
    assert (home / "muse" / "settings.json").read_bytes() == before
    assert not await anyio.Path(overlay).exists()
    return written


@pytest.mark.anyio
async def test_an_overlay_without_servers_carries_the_users_settings_made_interactive(
    tmp_path: Path,
) -> None:
    assert await _written(tmp_path, with_servers=False) == interactive(SAVED)


@pytest.mark.anyio
async def test_an_overlay_with_servers_makes_the_profile_interactive_too(tmp_path: Path) -> None:
    written = await _written(tmp_path, with_servers=True)
    assert written["permissions"]["default_profile"] == ":ask-me"
    assert set(written["mcpServers"]) == {"files", "web"}


@pytest.mark.anyio
async def test_an_overlay_only_for_the_profile_that_cannot_be_made_says_so(tmp_path: Path) -> None:
    home = _user_home(tmp_path, SAVED)
    environ = {"XDG_CONFIG_HOME": str(home)}
    user = await read_user_settings(environ)
    data = tmp_path / "data"
    data.write_text("a file where muse-acp's data folder should be")
    with pytest.raises(SetupFailure) as failed:
        async with settings_overlay(overlay_root(data), (), user, environ):
            pass
    message = failed.value.message
    assert "':auto-review'" in message
    assert "`permissions.default_profile`" in message
    assert "MCP" not in message
    assert isinstance(failed.value.data, dict)
    failure = failed.value.data["failure"]
    assert isinstance(failure, dict)
    assert failure["kind"] == "settingsOverlayFailed"


@pytest.mark.parametrize(
    ("method", "advice"),
    [
        ("session/resume", "Continue this conversation in Muse itself"),
        ("session/start", "Set `permissions.default_profile` in your Muse settings"),
    ],
)
def test_a_refused_profile_says_why_and_what_to_do(method: str, advice: str) -> None:
    error = profile_refusal(
        RpcError(INTERNAL_ERROR, HOST_TEXT, {"kind": "internal"}), method, SESSION
    )
    assert error is not None
    assert error.code == INTERNAL_ERROR
    assert "':auto-review'" in error.message
    assert SESSION in error.message
    assert advice in error.message
    assert isinstance(error.data, dict)
    assert error.data["failure"] == {
        "kind": "permissionProfileUnavailable",
        "source": "host",
        "retryable": False,
        "phase": "starting",
        "execution": "notSubmitted",
    }


@pytest.mark.parametrize(
    "error",
    [
        RpcError(INTERNAL_ERROR, "internal error: the store is locked"),
        RpcError(INTERNAL_ERROR, "permission profile ':x' cannot be used: it is unknown"),
        RpcError(INVALID_PARAMS, HOST_TEXT),
    ],
)
def test_other_refusals_are_left_to_the_generic_mapping(error: RpcError) -> None:
    assert profile_refusal(error, "session/resume", SESSION) is None
