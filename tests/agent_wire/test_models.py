"""The model menu as an editor shows it: filled from Muse's catalog without the user asking,
and a model change the host confirms (or refuses, keeping the previous model)."""
# The menu at session/new itself, and after a restart: test_model_menu_at_start.

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest

from .harness import WAIT, World, failure_of, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")


def _option(options: list[Any], option_id: str) -> Any:
    return next(getattr(o, "root", o) for o in options if getattr(o, "root", o).id == option_id)


def _model_values(options: list[Any]) -> list[str]:
    return [value.value for value in _option(options, "model").options]


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_catalog_read_for_the_menu_costs_no_process_of_its_own(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            response = await agent.prompt(session, "hello")
            options = agent.options(session)
    assert response.stop_reason == "end_turn"
    assert "muse-spark-1.2" in _model_values(options)
    # Read once, on the host that asked whether Muse is signed in; the session's own host is
    # the only other one.
    assert len(world.host_requests("model/list")) == 1
    assert len(world.host_requests("initialize")) == 2


async def test_a_load_offers_the_menu_and_refreshes_it_without_a_prompt(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
    listed = len(world.host_requests("model/list"))
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            # The remembered catalog is listed again on the host the load used.
            await agent.client.wait_until(
                lambda: len(world.host_requests("model/list")) == listed + 1
            )
    assert "muse-spark-1.3" in _model_values(list(loaded.config_options or []))


async def test_a_model_change_is_confirmed_by_the_running_host(world: World) -> None:
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
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
            current = str(_option(agent.options(session), "model").current_value)
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
