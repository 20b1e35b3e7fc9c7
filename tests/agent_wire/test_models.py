"""The model menu as an editor shows it: filled from Muse's catalog without the user asking,
and a model change the host confirms (or refuses, keeping the previous model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from .harness import WAIT, Agent, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4")


def _option(options: list[Any], option_id: str) -> Any:
    return next(getattr(o, "root", o) for o in options if getattr(o, "root", o).id == option_id)


def _model_values(options: list[Any]) -> list[str]:
    return [value.value for value in _option(options, "model").options]


async def _menu_update(agent: Agent, session: str) -> list[Any]:
    """The options of the first ``config_option_update`` offering more than one model."""
    count = 1
    while True:
        update = await agent.client.wait_for(session, "config_option_update", count)
        if len(_model_values(update.config_options)) > 1:
            return list(update.config_options)
        count += 1


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_model_menu_fills_in_during_the_first_turn(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "hello")
            options = await _menu_update(agent, session)
    assert response.stop_reason == "end_turn"
    assert "muse-spark-1.2" in _model_values(options)
    assert len(world.host_requests("model/list")) == 1
    # The catalog came from the session's own host: no process was started for it.
    assert len(world.host_requests("initialize")) == 1


async def test_the_model_menu_fills_in_after_a_load_without_a_prompt(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            options = await _menu_update(agent, session)
    assert "muse-spark-1.3" in _model_values(options)


async def test_a_model_change_is_confirmed_by_the_running_host(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
            await _menu_update(agent, session)
            before = len(world.host_requests("session/setModel"))
            answer = await agent.conn.set_config_option(
                session_id=session, config_id="model", value="muse-spark-1.2"
            )
            # Confirmed before the answer: the host already switched.
            [confirm] = world.host_requests("session/setModel")[before:]
            await agent.prompt(session, "again")
    assert confirm["params"]["model"]["modelId"] == "muse-spark-1.2"
    assert str(_option(answer.config_options, "model").current_value) == "muse-spark-1.2"
    # Not sent a second time when the next turn starts.
    assert len(world.host_requests("session/setModel")) == before + 1


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_refused_model_is_an_error_and_the_previous_model_stays(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    world.extra_env["MUSE_SIM_FAULTS"] = "refuse:session/setModel"
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
            options = await _menu_update(agent, session)
            current = str(_option(options, "model").current_value)
            with pytest.raises(acp.RequestError) as raised:
                await agent.conn.set_config_option(
                    session_id=session, config_id="model", value="muse-spark-1.2"
                )
            listed = await agent.conn.set_config_option(
                session_id=session, config_id="reasoningEffort", value="high"
            )
            response = await agent.prompt(session, "still works")
    assert raised.value.code == -32602
    assert failure_of(raised.value)["kind"] == "modelRefused"
    assert failure_of(raised.value)["source"] == "host"
    assert "muse-spark-1.2" in str(raised.value)
    assert str(_option(listed.config_options, "model").current_value) == current
    assert response.stop_reason == "end_turn"


async def test_a_model_refused_when_the_turn_starts_falls_back_visibly(world: World) -> None:
    world.extra_env["MUSE_SIM_FAULTS"] = "refuse:session/setModel"
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "/models")
            # No host runs between /models and the next turn, so the host is asked then.
            shown = agent.client.kinds(session).count("config_option_update") + 1
            await agent.conn.set_config_option(
                session_id=session, config_id="model", value="muse-spark-1.2"
            )
            await agent.client.wait_for(session, "config_option_update", shown)
            with pytest.raises(acp.RequestError) as raised:
                await agent.prompt(session, "with the new model")
            update = await agent.client.wait_for(session, "config_option_update", shown + 1)
            response = await agent.prompt(session, "with the model Muse accepts")
    assert failure_of(raised.value)["kind"] == "modelRefused"
    assert str(_option(update.config_options, "model").current_value) != "muse-spark-1.2"
    assert response.stop_reason == "end_turn"
