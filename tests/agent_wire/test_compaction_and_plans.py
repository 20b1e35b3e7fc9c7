"""Compactions and plans as a client that opts in sees them, and as every other client still
does, on every Muse version (each has ``session/compact``, compaction items and todo lists).

One session per client plays the same story: ``/compact`` with nothing to compact, a turn with
a compaction Muse does by itself (``sim:autocompact``) and a todo list, ``/compact`` again, and
a ``/plan`` turn. A client with ``session.compaction`` and ``plan`` sees compaction updates (the
summary as a chunk) and the todo list as an ``items`` plan by ``planId``, Plan mode's answer as
a Markdown plan, and no ``/compact`` chat text; a client with neither sees exactly what it saw
before: ``/compact``'s chat replies, the legacy ``plan``, nothing of Muse's own compaction.
``session/load`` replays each the same way for each client (Plan mode's plan where Muse's
record shows the turn ran in Plan mode: hosts without Muse's plan skill). Every frame is
validated as in every wire test (``frame_check``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from .harness import WAIT, Agent, make_world, running_agent
from .test_effort_tiers import VERSIONS

pytestmark = pytest.mark.anyio

OPTED_IN: Final[dict[str, Any]] = {"session": {"compaction": {}}, "plan": {}}
"""The client capabilities of a client that shows compactions and takes plan operations."""
PLAN_SKILL_HOSTS: Final = frozenset({"1.4.2", "1.4.4", "1.4.13"})
"""Versions whose Plan mode turns are led by Muse's plan skill, which Muse's record omits."""
NOTHING: Final = "Nothing was compacted: Muse says there is no history to compact yet."
COMPACTED: Final = "Compacted: Muse summarised this session's earlier history."
REQUEST: Final = "tidy the parser"


def _of(updates: list[dict[str, Any]], *kinds: str) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] in kinds]


async def _story(agent: Agent) -> str:
    """Play the story on a new session (see the module docstring); its id."""
    session = await agent.new_session()
    with anyio.fail_after(WAIT):
        await agent.prompt(session, "/compact")
        await agent.prompt(session, "sim:autocompact\nsim:plan\nsim:stream 2")
        await agent.prompt(session, "/compact")
        await agent.prompt(session, f"/plan {REQUEST}")
    return session


async def _load(agent: Agent, session: str) -> list[dict[str, Any]]:
    with anyio.fail_after(WAIT):
        await agent.conn.load_session(
            session_id=session, cwd=str(agent.world.workspace), mcp_servers=[]
        )
    return agent.raw_updates(session)


def _check_opted_in(updates: list[dict[str, Any]], *, live: bool, markdown: bool) -> None:
    """What a client that opted in sees of the story, live or replayed."""
    compactions = _of(updates, "compaction_update", "compaction_summary_chunk")
    ids = list(dict.fromkeys(u["compactionId"] for u in compactions))
    # Live, the first /compact found nothing to compact; Muse recorded no item of it.
    assert len(ids) == (3 if live else 2), compactions
    for compaction_id in ids[-2:]:  # Muse's own, then /compact's: started, summary, completed
        shown = [u for u in compactions if u["compactionId"] == compaction_id]
        assert [(u["sessionUpdate"], u.get("status")) for u in shown] == [
            ("compaction_update", "in_progress"),
            ("compaction_summary_chunk", None),
            ("compaction_update", "completed"),
        ]
        summary = shown[1]["content"]["text"]
        assert summary.startswith("Muse summarised this session's earlier history. Context went")
    if live:
        noop = [u for u in compactions if u["compactionId"] == ids[0]]
        assert [u["sessionUpdate"] for u in noop] == [
            "compaction_summary_chunk",
            "compaction_update",
        ]
        assert noop[0]["content"]["text"] == NOTHING
        assert noop[1]["status"] == "completed"
    assert _of(updates, "plan") == [], "no legacy plan for a client that takes plan operations"
    plans = [u["plan"] for u in _of(updates, "plan_update")]
    todo = [p for p in plans if p["type"] == "items"]
    assert [p["planId"] for p in todo] == ["muse-todo-list"]
    assert [e["content"] for e in todo[0]["entries"]] == [
        "Read the request",
        "Simulate the work",
        "Report the result",
    ]
    written = [p for p in plans if p["type"] == "markdown"]
    assert len(written) == (1 if markdown else 0), plans
    if markdown:
        assert written[0]["planId"] == "muse-plan-mode"
        assert REQUEST in written[0]["content"]
    text = "".join(
        u["content"]["text"] for u in _of(updates, "agent_message_chunk") if "text" in u["content"]
    )
    assert NOTHING not in text, "no /compact chat for this client"
    assert COMPACTED not in text
    assert REQUEST in text, "Plan mode's answer is still the agent's message"


def _check_legacy(updates: list[dict[str, Any]], *, live: bool) -> None:
    """What a client without the capabilities sees of the story: exactly what it saw before."""
    kinds = {u["sessionUpdate"] for u in updates}
    assert not kinds & {"compaction_update", "compaction_summary_chunk"}
    assert not kinds & {"plan_update", "plan_removed"}
    plans = _of(updates, "plan")
    assert [[e["content"] for e in p["entries"]] for p in plans] == [
        ["Read the request", "Simulate the work", "Report the result"]
    ]
    text = "".join(
        u["content"]["text"] for u in _of(updates, "agent_message_chunk") if "text" in u["content"]
    )
    if live:
        assert text.count(NOTHING) == 1
        assert text.count(COMPACTED) == 1
    else:  # /compact's replies were never Muse's: a replay has none
        assert NOTHING not in text
        assert COMPACTED not in text


@pytest.mark.parametrize("version", VERSIONS)
async def test_compactions_and_plans_for_each_client_live_and_replayed(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        opted = await _story(agent)
    _check_opted_in(agent.raw_updates(opted), live=True, markdown=True)
    async with running_agent(world) as agent:
        legacy = await _story(agent)
        _check_legacy(agent.raw_updates(legacy), live=True)
        _check_legacy(await _load(agent, opted), live=False)
    async with running_agent(world, capabilities=OPTED_IN) as agent:
        replayed = await _load(agent, legacy)
    _check_opted_in(replayed, live=False, markdown=version not in PLAN_SKILL_HOSTS)
