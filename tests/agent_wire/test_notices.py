"""Warnings as ACP notices for a client that set ``session.notices``, on every Muse version:
another client's allow-all set back, and (where Muse's catalog names each model's efforts) a
reasoning effort the model lacks. The warning reaches the user once, as a ``notice`` with its
severity and never also as chat text; a client without the capability hears the same warnings
in the chat, as before notices, and gets no notice. Every frame validates against muse-acp's
ACP bundle, and every frame of a kind the official SDK knows against the SDK too."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from acp import schema
from pydantic import ValidationError

from muse_acp_wire import acp

from .harness import WAIT, Agent, make_world, running_agent
from .test_effort_tiers import LACKS_MAX, TIERED, VERSIONS, _values
from .test_safety_rule import SET_BACK

pytestmark = pytest.mark.anyio

NOTICES: Final[dict[str, Any]] = {"session": {"notices": {}}}
"""The client capabilities of a client that shows notices."""
UNKNOWN_TO_SDK: Final = frozenset({"notice"})
"""Update kinds this test sees that the SDK's models (ACP 1.19) do not have."""


def _check_updates(agent: Agent) -> int:
    """Validate every ``session/update`` the agent sent; how many were of SDK-unknown kinds."""
    unknown = 0
    for direction, message in agent.frames:
        if direction != "in" or message.get("method") != "session/update":
            continue
        params = message["params"]
        ours = acp.SessionNotification.model_validate(params)
        dumped = ours.model_dump(mode="json", by_alias=True, exclude_unset=True)
        assert dumped == params, "the frame is exactly what muse-acp's bundle describes"
        if params["update"]["sessionUpdate"] in UNKNOWN_TO_SDK:
            with pytest.raises(ValidationError):
                schema.SessionNotification.model_validate(params)
            unknown += 1
        else:
            schema.SessionNotification.model_validate(params)
    return unknown


async def _set(agent: Agent, session: str, option: str, value: str) -> None:
    await agent.conn.set_config_option(session_id=session, config_id=option, value=value)


async def _warned(agent: Agent, session: str, notices: bool) -> None:
    """Play both warnings: another client's allow-all, then a model without the effort."""
    with anyio.fail_after(WAIT):
        await _set(agent, session, "sandbox", "disabled")
        await agent.prompt(session, "sim:switch-approval allowAll")
        if notices:
            await agent.client.wait_until(lambda: len(agent.raw_updates(session, "notice")) >= 1)
        else:
            await agent.client.wait_until(lambda: SET_BACK in agent.client.text(session))
        await agent.prompt(session, "hello")  # Muse's catalog is read by now
        await _set(agent, session, "model", "muse-spark-1.3")
        await _set(agent, session, "reasoningEffort", "max")
        await _set(agent, session, "model", "muse-spark-1.2")
        await agent.prompt(session, "with the faster model")


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_client_with_notices_hears_warnings_as_notices_not_chat(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world, capabilities=NOTICES) as agent:
        session = await agent.new_session()
        await _warned(agent, session, notices=True)
    notices = agent.raw_updates(session, "notice")
    set_back = notices[0]
    assert set_back["severity"] == "warning"
    assert set_back["title"] == (
        "muse-acp set Muse's approval policy back: another client allowed every action"
    )
    assert SET_BACK in set_back["description"]
    dropped = [n for n in notices if LACKS_MAX in n["description"]]
    if version in TIERED:
        assert [n["severity"] for n in dropped] == ["warning"]
        assert dropped[0]["title"] == "Reasoning effort Max is not sent to 'muse-spark-1.2'"
    else:  # every effort is offered where Muse's catalog does not name a model's own
        assert dropped == []
    assert len(notices) == 1 + len(dropped), notices
    chat = agent.client.text(session)
    assert SET_BACK not in chat, "a notice is never also chat text"
    assert LACKS_MAX not in chat
    assert _check_updates(agent) == len(notices)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_client_without_notices_hears_the_same_warnings_in_the_chat(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        await _warned(agent, session, notices=False)
    chat = agent.client.text(session)
    assert chat.count(SET_BACK) == 1
    assert chat.count(f"'muse-spark-1.2' {LACKS_MAX}") == (1 if version in TIERED else 0)
    assert agent.raw_updates(session, "notice") == []
    assert _check_updates(agent) == 0


@pytest.mark.parametrize("version", TIERED)
async def test_an_effort_the_model_chosen_lacks_is_a_notice_as_the_model_changes(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world, capabilities=NOTICES) as agent:
        first = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(first, "hello")
            # Muse's catalog is known: a change is checked against its tiers as it is made.
            await agent.client.wait_until(
                lambda: "muse-spark-1.2" in _values(agent.options(first), "model")
            )
            # A session with no host running yet: no Muse confirms its model change.
            session = await agent.new_session()
            await _set(agent, session, "model", "muse-spark-1.3")
            await _set(agent, session, "reasoningEffort", "max")
            await _set(agent, session, "model", "muse-spark-1.2")
            await agent.client.wait_until(lambda: len(agent.raw_updates(session, "notice")) > 0)
    [notice] = agent.raw_updates(session, "notice")
    assert notice["title"] == "Reasoning effort Max is not sent to 'muse-spark-1.2'"
    assert LACKS_MAX in notice["description"]
    assert LACKS_MAX not in agent.client.text(session), "a notice is never also chat text"
