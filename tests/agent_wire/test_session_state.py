"""The state Muse reports reaches the client: token and subscription usage, and a model or
approval mode another client of Muse switched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from .harness import WAIT, Agent, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

SUBSCRIPTION_USAGE = ("1.3.0", "1.4.2", "1.4.4", "1.4.13")
"""Muse versions that report the account's subscription usage (``usage/changed``)."""


def _of(agent: Agent, session: str, kind: str) -> list[Any]:
    return [u for s, u in agent.client.updates if s == session and u.session_update == kind]


def _usage_meta(update: Any) -> dict[str, Any]:
    meta: dict[str, Any] = update.field_meta or {}
    report: dict[str, Any] = meta.get("muse/usage", {})
    return report


def _model_value(update: Any) -> Any:
    options = (getattr(o, "root", o) for o in update.config_options)
    return next(o.current_value for o in options if o.id == "model")


async def _status(agent: Agent, session: str) -> str:
    before = len(agent.client.text(session))
    with anyio.fail_after(WAIT):
        await agent.prompt(session, "/status")
    return agent.client.text(session)[before:]


@pytest.mark.parametrize("version", VERSIONS)
async def test_token_usage_becomes_usage_updates_and_status_shows_it(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "count my tokens")
        with_tokens = [u for u in _of(agent, session, "usage_update") if _usage_meta(u)]
        assert with_tokens, "token usage arrives as usage_update"
        tokens = _usage_meta(with_tokens[-1])["tokens"]
        assert tokens["totalTokens"] == tokens["promptTokens"] + tokens["outputTokens"] > 0
        assert with_tokens[-1].size > 0
        status = await _status(agent, session)
    assert f"Tokens: {tokens['totalTokens']:,} this session" in status


@pytest.mark.parametrize("version", VERSIONS)
async def test_subscription_usage_is_reported_where_muse_has_it(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "first")
            # usage/changed follows the turn's end; the next turn is certainly after it.
            await agent.prompt(session, "second")
        reports = [_usage_meta(u).get("subscription") for u in _of(agent, session, "usage_update")]
        status = await _status(agent, session)
    if version in SUBSCRIPTION_USAGE:
        assert any(reports)
        assert "Plan usage:" in status
    else:
        assert not any(reports)
        assert "Plan usage:" not in status


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_model_another_client_switched_to_is_shown_and_remembered(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:switch-model muse-spark-1.2")

        def menu_shows_switched_model() -> bool:
            updates = _of(agent, session, "config_option_update")
            return bool(updates) and _model_value(updates[-1]) == "muse-spark-1.2"

        await agent.client.wait_until(menu_shows_switched_model)
        assert "Model: muse-spark-1.2" in await _status(agent, session)
    # A new agent process finds the switched model as it would a choice of the user's.
    async with running_agent(world) as again:
        with anyio.fail_after(WAIT):
            resumed = await again.conn.resume_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
    options = resumed.config_options or []
    model = next(getattr(o, "root", o) for o in options if getattr(o, "root", o).id == "model")
    # Spelled as the menu offers it (the catalog remembered from the last start), not with the
    # provider Muse reported it with.
    assert str(model.current_value) == "muse-spark-1.2"
    assert "muse-spark-1.2" in [value.value for value in model.options]


@pytest.mark.parametrize("version", VERSIONS)
async def test_an_approval_mode_another_client_set_moves_the_session_mode(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:switch-approval allowAll")
        [mode] = _of(agent, session, "current_mode_update")
        assert mode.current_mode_id == "autoApprove"
        options = _of(agent, session, "config_option_update")[-1]
        shown = next(
            getattr(o, "root", o)
            for o in options.config_options
            if getattr(o, "root", o).id == "mode"
        )
        assert shown.current_value == "autoApprove"
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "sim:switch-approval onRequest")
        modes = [u.current_mode_id for u in _of(agent, session, "current_mode_update")]
    assert modes == ["autoApprove", "default"]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_reported_approval_mode_never_leaves_read_only(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.conn.set_session_mode(session_id=session, mode_id="readOnly")
            await agent.prompt(session, "sim:switch-approval allowAll")
        modes = [u.current_mode_id for u in _of(agent, session, "current_mode_update")]
    assert modes == ["readOnly"], "only the user's own choice moved the mode"


@pytest.mark.parametrize("version", VERSIONS)
async def test_status_reads_the_subscription_usage_where_muse_has_it(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "one turn")
        status = await _status(agent, session)
    reads = world.host_requests("usage/read")
    if version in SUBSCRIPTION_USAGE:
        assert reads, "usage/changed is not reliably delivered, so /status asks"
        assert "Plan usage:" in status
    else:
        assert not reads, "a Muse without usage/read is never asked"
        assert "Plan usage:" not in status
