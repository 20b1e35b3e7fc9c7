"""Sign-in where the editor looks for it: ``session/new``, ``session/load`` and
``session/resume`` fail with -32000 and the auth methods while Muse has no credential (asked
once per process, again after ``authenticate``), on every simulated version; without any Muse,
they say how to install one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from .harness import WAIT, Agent, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
ZED = schema.ClientCapabilities(auth=schema.AuthCapabilities(terminal=True))


async def _muse(world: World, command: str) -> None:
    """What the user does in a terminal: ``muse login`` or ``muse logout``."""
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([str(world.muse_bin), command], env=world.env())
    assert done.returncode == 0


async def _refused(agent: Agent, method: str, **params: Any) -> acp.RequestError:
    with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
        await getattr(agent.conn, method)(cwd=str(agent.world.workspace), mcp_servers=[], **params)
    return raised.value


def _auth_required(error: acp.RequestError) -> list[str]:
    """The ids of the auth methods an auth_required error carries (asserting it is one)."""
    assert error.code == -32000
    assert "`muse login`" in str(error)
    assert failure_of(error)["kind"] == "authRequired"
    assert isinstance(error.data, dict)
    return [method["id"] for method in error.data["authMethods"]]


@pytest.mark.parametrize("version", VERSIONS)
async def test_sessions_ask_for_sign_in_while_muse_has_no_credential(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=ZED) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            assert (await agent.prompt(session, "hello")).stop_reason == "end_turn"
    await _muse(world, "logout")
    asked = len(world.host_requests("account/read"))
    async with running_agent(world, capabilities=ZED) as agent:
        advertised = [method.id for method in agent_auth_methods(agent)]
        refusals = [
            await _refused(agent, "new_session"),
            await _refused(agent, "load_session", session_id=session),
            await _refused(agent, "resume_session", session_id=session),
        ]
        await _muse(world, "login")
        with anyio.fail_after(WAIT):
            await agent.conn.authenticate(method_id="muse-login")
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
    for refused in refusals:
        assert _auth_required(refused) == advertised
    assert "muse-login" in advertised
    # Asked once for the three refusals, and again by authenticate.
    assert len(world.host_requests("account/read")) == asked + 2


def agent_auth_methods(agent: Agent) -> list[Any]:
    answer = next(m for d, m in agent.frames if d == "in" and m.get("id") == 0)
    methods = schema.InitializeResponse.model_validate(answer["result"]).auth_methods
    return list(methods or [])


async def test_without_any_muse_a_session_says_how_to_install_it(world: World) -> None:
    world.extra_env.update(MUSE_ACP_MUSE_BIN="", PATH=str(world.root / "no-muse-here"))
    world.first_start = True
    async with running_agent(world) as agent:
        refused = await _refused(agent, "new_session")
    assert "install Muse Code" in str(refused)
    assert "MUSE_ACP_MUSE_BIN" in str(refused)
    assert "Traceback" not in str(refused)
