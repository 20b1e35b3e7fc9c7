"""The one safety rule wherever a session's state comes from, on every Muse version: with the
sandbox disabled, no turn runs while approvals are granted unasked, whether another Muse client
switched Muse to ``allowAll``, a host restart found it so, or a stored file held the combination;
and a stored restriction the installed Muse cannot apply is kept and never silently dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from muse_acp.sim.launcher import sim_command

from .harness import WAIT, Agent, World, failure_of, host_flags, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
SET_BACK = "muse-acp set Muse's approval policy back to 'promptUnmatched'"


def _options(options: list[Any]) -> dict[str, Any]:
    return {getattr(o, "root", o).id: getattr(o, "root", o) for o in options}


def _modes(agent: Agent, session: str) -> list[str]:
    return [
        u.current_mode_id
        for s, u in agent.client.updates
        if s == session and u.session_update == "current_mode_update"
    ]


async def _asked_before_acting(agent: Agent, session: str) -> bool:
    """Whether a command that needs approval reaches the client as a permission request."""
    asked = len(agent.client.permission_requests)
    await agent.prompt(session, "sim:approve make")
    return len(agent.client.permission_requests) > asked


async def _set(agent: Agent, session: str, config_id: str, value: str) -> Any:
    return await agent.conn.set_config_option(session_id=session, config_id=config_id, value=value)


@pytest.mark.parametrize("version", VERSIONS)
async def test_another_clients_allow_all_is_set_back_while_the_sandbox_is_off(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await _set(agent, session, "sandbox", "disabled")
            await agent.prompt(session, "sim:switch-approval allowAll")
            await agent.client.wait_until(lambda: SET_BACK in agent.client.text(session))
            asked = await _asked_before_acting(agent, session)
            flags = await host_flags(agent, session)
    assert _modes(agent, session) == [], "the session stays in Ask mode"
    assert asked, "Muse asks before acting"
    assert flags.startswith("[host flags: --disable-sandbox")
    assert flags.endswith("approval mode: promptUnmatched]")
    assert agent.client.text(session).count(SET_BACK) == 1, "the chat hears of it once"
    policies = [r["params"]["mode"] for r in world.host_requests("session/setApprovalMode")]
    assert policies == ["promptUnmatched"]
    stored = json.loads((world.data_dir / "sessions" / f"{session}.json").read_text())
    assert stored["settings"]["modeId"] == "default"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_host_restart_that_finds_allow_all_with_the_sandbox_off_sets_it_back(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            # With the sandbox on, another client's allowAll is adopted as Auto-approve, and
            # Muse keeps allowAll with the session after the user goes back to Ask.
            await agent.prompt(session, "sim:switch-approval allowAll")
            await agent.conn.set_session_mode(session_id=session, mode_id="default")
            await _set(agent, session, "sandbox", "disabled")  # the next host starts anew
            asked = await _asked_before_acting(agent, session)
            flags = await host_flags(agent, session)
    assert _modes(agent, session) == ["autoApprove", "default"]
    assert asked, "Muse asks before acting"
    assert flags.startswith("[host flags: --disable-sandbox")
    assert flags.endswith("approval mode: promptUnmatched]")
    assert agent.client.text(session).count(SET_BACK) == 1


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_stored_file_with_the_refused_combination_loads_safe_and_says_so(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await _set(agent, session, "sandbox", "disabled")
            await agent.prompt(session, "first turn")
    path = world.data_dir / "sessions" / f"{session}.json"
    document = json.loads(path.read_text())
    document["settings"]["modeId"] = "autoApprove"  # as a hand-edited or older file may hold
    path.write_text(json.dumps(document))
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            asked = await _asked_before_acting(agent, session)
    assert loaded.modes is not None
    assert loaded.modes.current_mode_id == "default"
    assert str(_options(loaded.config_options or [])["sandbox"].current_value) == "disabled"
    said = agent.client.text(session)
    assert "sandbox disabled with Auto-approve mode" in said
    assert "it is in Ask mode" in said
    assert asked, "Muse asks before acting"


def _muse_without(world: World, flag: str) -> Path:
    """A Muse whose ``serve --help`` does not list ``flag`` (as an older or trimmed build)."""
    path = world.root / "muse-without-flag"
    sim = sim_command()
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = serve ] && [ "$2" = --help ]; then {sim} "$@" | sed "s/{flag}//g"; '
        "exit 0; fi\n"
        f'exec {sim} "$@"\n'
    )
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_stored_restriction_muse_cannot_apply_is_kept_and_refuses_turns(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await _set(agent, session, "shell", "disabled")
    world.muse_bin = _muse_without(world, "--disable-shell")
    path = world.data_dir / "sessions" / f"{session}.json"
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            with pytest.raises(acp.RequestError) as refused:
                await agent.prompt(session, "sim:bash 10")
            await _set(agent, session, "reasoningEffort", "high")
            kept = json.loads(path.read_text())["settings"]["safety"]
            released = await _set(agent, session, "shell", "enabled")
            ran = await agent.prompt(session, "sim:bash 10")
    shell = _options(loaded.config_options or [])["shell"]
    assert str(shell.current_value) == "disabled"
    assert "stays stored" in agent.client.text(session)
    assert refused.value.code == -32600
    assert failure_of(refused.value)["kind"] == "safetySettingUnavailable"
    assert "'Shell: Enabled'" in str(refused.value)
    assert kept == {"shell": "disabled"}, "an unrelated change keeps the stored choice"
    assert "shell" not in _options(released.config_options), "nothing is held any more"
    assert ran.stop_reason == "end_turn"
    assert json.loads(path.read_text())["settings"]["safety"] == {}
    # The first agent's session host never started; the load's and the last prompt's did, the
    # refused prompt's did not (the others checked sign-in, once per agent).
    assert len(world.session_hosts()) == 2
