"""What the editor's usage display gets: one ``usage_update`` per change, each model step's cache
counts, and from the Muse versions whose token totals carry them, Muse's own cost estimate and
the session's cache totals."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.host.bindings import parse_version
from muse_acp.sim.state.store import Store

from .harness import WAIT, Agent, make_world, running_agent
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

COST_VERSIONS = tuple(v for v in VERSIONS if (parse_version(v) or (0, 0, 0)) >= (1, 4, 2))
"""The versions whose token totals carry Muse's cost estimate and cache totals (Muse's own
declarations have them from 1.4.2 on)."""


def _usage_frames(agent: Agent, session: str) -> list[dict[str, Any]]:
    """Every ``usage_update`` of ``session`` exactly as it reached the client, in order."""
    updates = []
    for direction, message in agent.frames:
        params = message.get("params") or {}
        update = params.get("update") or {}
        if (
            direction == "in"
            and message.get("method") == "session/update"
            and params.get("sessionId") == session
            and update.get("sessionUpdate") == "usage_update"
        ):
            updates.append(update)
    return updates


def _host_usage(world: Any, session: str) -> list[dict[str, Any]]:
    """The params of every ``session/tokenUsage`` the host recorded, in order."""
    events = [json.loads(line) for line in Store(world.sim_home).log(session).lines()]
    return [e["params"] for e in events if e["method"] == "session/tokenUsage"]


def _host_totals(world: Any, session: str) -> list[dict[str, Any]]:
    """The ``cumulative`` block of every ``session/tokenUsage`` the host recorded, in order."""
    return [params["cumulative"] for params in _host_usage(world, session)]


def _without_repeats(values: list[Any]) -> list[Any]:
    return [v for i, v in enumerate(values) if i == 0 or values[i - 1] != v]


async def _status(agent: Agent, session: str) -> str:
    before = len(agent.client.text(session))
    with anyio.fail_after(WAIT):
        await agent.prompt(session, "/status")
    return agent.client.text(session)[before:]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_usage_update_is_sent_once_per_change(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            for text in ("first", "second", "sim:bash 200"):
                await agent.prompt(session, text)
        updates = _usage_frames(agent, session)
    steps = len(_host_totals(world, session))
    assert steps >= 4, "the turns made several model steps"
    # Each step after the first tells the client new token figures (the first step's arrive
    # with the context window): one update each, never two alike in a row.
    assert len(updates) >= steps
    repeats = [a for a, b in itertools.pairwise(updates) if a == b]
    assert not repeats, f"{len(repeats)} usage_update(s) repeated the one before"


@pytest.mark.parametrize("version", VERSIONS)
async def test_muses_cost_estimate_reaches_the_editor_where_muse_reports_it(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "first")
            await agent.prompt(session, "second")
        updates = _usage_frames(agent, session)
        status = await _status(agent, session)
    host = _host_totals(world, session)
    reports = [u["_meta"]["muse/usage"] for u in updates]
    # Every version reports each step's cache counts; the latest reach the editor.
    step = _host_usage(world, session)[-1]["usage"]
    assert reports[-1]["lastStep"] == {
        name: step[name] for name in ("cachedTokens", "cacheReadTokens", "cacheWriteTokens")
    }
    assert reports[-1]["lastStep"]["cacheReadTokens"] > 0
    if version not in COST_VERSIONS:
        assert all("cost" not in u for u in updates), "no cost without Muse's figure, never 0"
        assert all("cost" not in r for r in reports)
        assert all("cacheReadTokens" not in r["tokens"] for r in reports)
        assert "Cost:" not in status
        return
    host_costs = [total["cost"]["usd"] for total in host]
    assert len(host_costs) == 2
    assert 0 < host_costs[0] < host_costs[1]
    with_cost = [u for u in updates if "cost" in u]
    assert with_cost == updates, "every usage_update carries Muse's latest figure"
    amounts = _without_repeats([u["cost"]["amount"] for u in with_cost])
    assert amounts == host_costs, "Muse's own figures, in order, each once"
    assert {u["cost"]["currency"] for u in with_cost} == {"USD"}
    assert all(r["cost"] == {"estimatedBy": "muse", "partial": False} for r in reports)
    tokens = reports[-1]["tokens"]
    assert tokens["cacheReadTokens"] == host[-1]["cacheReadTokens"] > 0
    assert tokens["cacheWriteTokens"] == host[-1]["cacheWriteTokens"] > 0
    assert f"Cost: ${host_costs[-1]:,.4f} so far (Muse's estimate)" in status


@pytest.mark.parametrize("version", COST_VERSIONS)
async def test_a_cost_muse_could_not_fully_price_says_so(tmp_path: Path, version: str) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "priced")
            # Another client picks a model without a known price for the turn's last step.
            await agent.prompt(session, "sim:switch-model muse-unpriced-preview")
        updates = _usage_frames(agent, session)
        status = await _status(agent, session)
    host = _host_totals(world, session)
    assert host[-1]["cost"]["partial"] is True
    last = updates[-1]
    assert last["cost"]["amount"] == host[-1]["cost"]["usd"]
    assert last["_meta"]["muse/usage"]["cost"] == {"estimatedBy": "muse", "partial": True}
    assert "(Muse's estimate, leaving out calls it could not price)" in status
