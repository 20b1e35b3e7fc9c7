"""Safety options and plan mode as an editor sees them, on every Muse version: each option
reaches ``muse serve`` as its flag (the simulator reports its flags with ``sim:flags``), plan mode
and ``/plan`` keep Muse from writing files or running commands, dangerous combinations and
changes during a turn are refused, and the choices survive a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from .harness import WAIT, Agent, World, failure_of, host_flags, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
SAFETY_IDS = ["sandbox", "sandboxNetwork", "workspaceWrite", "shell", "approvalPolicy"]
PREAMBLE_MARK = "[Plan mode] Work out a plan"
SKILL_MARK = "[skill bundled:plan]"


def _options(options: list[Any]) -> dict[str, Any]:
    return {getattr(o, "root", o).id: getattr(o, "root", o) for o in options}


def _statuses(agent: Agent, session: str) -> list[str]:
    return [
        str(u.status)
        for s, u in agent.client.updates
        if s == session and u.session_update == "tool_call_update" and u.status
    ]


@pytest.mark.parametrize("version", VERSIONS)
async def test_each_safety_option_changes_the_host_flags(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            created = await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=[])
            session = created.session_id
            before = await host_flags(agent, session)
            chosen = {
                "sandbox": "disabled",
                "sandboxNetwork": "restricted",
                "workspaceWrite": "disabled",
                "shell": "disabled",
                "approvalPolicy": "denyUnmatched",
            }
            for config_id, value in chosen.items():
                answer = await agent.conn.set_config_option(
                    session_id=session, config_id=config_id, value=value
                )
            after = await host_flags(agent, session)
    offered = list(_options(created.config_options or []))
    assert offered == ["mode", "model", "reasoningEffort", *SAFETY_IDS]
    current = {k: str(o.current_value) for k, o in _options(answer.config_options).items()}
    assert current.items() >= chosen.items()
    assert before == "[host flags: --sandbox-network=proxy-only; approval mode: promptUnmatched]"
    assert after == (
        "[host flags: --disable-write --disable-shell --disable-sandbox "
        "--sandbox-network=restricted; approval mode: denyUnmatched]"
    )
    # Applied by starting the session's host again, once, at the next prompt.
    assert len(world.session_hosts()) == 2
    [policy] = world.host_requests("session/setApprovalMode")
    assert policy["params"]["mode"] == "denyUnmatched"


@pytest.mark.parametrize("version", VERSIONS)
async def test_plan_mode_refuses_writes_and_shell_and_leads_with_the_plan(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.set_session_mode(session_id=session, mode_id="plan")
            response = await agent.prompt(
                session, "plan the cache\nsim:bash 10\nsim:edit app.py old new"
            )
            flags = await host_flags(agent, session)
    assert response.stop_reason == "end_turn"
    assert _statuses(agent, session)[-2:] == ["failed", "failed"]
    assert flags.startswith("[host flags: --disable-write --disable-shell ")
    reply = agent.client.text(session)
    assert "plan the cache" in reply
    # Muse's own plan skill where the host plans that way, our preamble elsewhere.
    assert (SKILL_MARK in reply) == (version in ("1.4.2", "1.4.4", "1.4.13"))
    assert (PREAMBLE_MARK in reply) == (version not in ("1.4.2", "1.4.4", "1.4.13"))
    assert not agent.client.permission_requests


@pytest.mark.parametrize("version", VERSIONS)
async def test_plan_command_enters_plan_mode_until_the_mode_is_changed(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            planned = await agent.prompt(session, "/plan add a cache")
            mode = await agent.client.wait_for(session, "current_mode_update")
            await agent.prompt(session, "sim:bash 10")
            still = _statuses(agent, session)[-1]
            await agent.conn.set_session_mode(session_id=session, mode_id="default")
            await agent.prompt(session, "sim:bash 10")
    assert planned.stop_reason == "end_turn"
    assert mode.current_mode_id == "plan"
    assert "add a cache" in agent.client.text(session)
    assert still == "failed"
    assert _statuses(agent, session)[-1] == "completed"
    modes = [
        u.current_mode_id
        for s, u in agent.client.updates
        if s == session and u.session_update == "current_mode_update"
    ]
    assert modes == ["plan", "default"]


async def test_plan_is_advertised_with_a_hint(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        update = await agent.client.wait_for(session, "available_commands_update")
    [plan] = [c for c in update.available_commands if c.name == "plan"]
    assert plan.input is not None


@pytest.mark.parametrize("version", VERSIONS)
async def test_no_sandbox_with_auto_approve_is_refused_saying_why(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.set_session_mode(session_id=session, mode_id="autoApprove")
            with pytest.raises(acp.RequestError) as raised:
                await agent.conn.set_config_option(
                    session_id=session, config_id="sandbox", value="disabled"
                )
            await agent.conn.set_session_mode(session_id=session, mode_id="default")
            await agent.conn.set_config_option(
                session_id=session, config_id="sandbox", value="disabled"
            )
            with pytest.raises(acp.RequestError) as back:
                await agent.conn.set_session_mode(session_id=session, mode_id="autoApprove")
            flags = await host_flags(agent, session)
    assert raised.value.code == -32602
    assert failure_of(raised.value)["kind"] == "unsafeSafetyCombination"
    assert "sandbox disabled and Auto-approve mode" in str(raised.value)
    assert failure_of(back.value)["kind"] == "unsafeSafetyCombination"
    assert "--disable-sandbox" in flags


async def test_a_safety_change_during_a_turn_is_refused(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.prompt, session, "sim:plan\nsim:hold")
            with anyio.fail_after(WAIT):
                await agent.client.wait_for(session, "plan")
                with pytest.raises(acp.RequestError) as raised:
                    await agent.conn.set_config_option(
                        session_id=session, config_id="shell", value="disabled"
                    )
            await agent.conn.cancel(session_id=session)
    assert raised.value.code == -32600
    assert "busy with a prompt" in str(raised.value)


@pytest.mark.parametrize("version", VERSIONS)
async def test_safety_choices_survive_a_restart(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.set_config_option(
                session_id=session, config_id="shell", value="disabled"
            )
            await agent.conn.set_config_option(
                session_id=session, config_id="approvalPolicy", value="onRequest"
            )
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            flags = await host_flags(agent, session)
    options = _options(loaded.config_options or [])
    assert str(options["shell"].current_value) == "disabled"
    assert str(options["approvalPolicy"].current_value) == "onRequest"
    assert flags == (
        "[host flags: --disable-shell --sandbox-network=proxy-only; approval mode: onRequest]"
    )
