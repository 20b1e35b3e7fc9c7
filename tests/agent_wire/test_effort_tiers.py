"""Reasoning effort as an editor shows it: the current model's own tiers where Muse's catalog
names them (1.4.2), every effort elsewhere; the values follow a model change, and an effort the
model lacks (just chosen, or stored before Muse was updated) is reported, never sent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError

from muse_acp.agent.announcements import catalog
from muse_acp.agent.commands import commands
from muse_acp.host.executable_memory import Remembered

from .harness import WAIT, Agent, World, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
TIERED = ("1.4.2", "1.4.4", "1.4.13")
"""The versions whose catalog names each model's tiers."""
EVERY = ["default", "none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra"]
SPARK = ["default", "minimal", "low", "medium", "high", "xhigh"]
"""The values of muse-spark-1.2's efforts (muse-spark-1.3 adds max, the default model none)."""
LACKS_MAX = "does not offer the reasoning effort Max, so muse-acp does not send it"


def _option(options: list[Any], option_id: str) -> Any:
    return next(getattr(o, "root", o) for o in options if getattr(o, "root", o).id == option_id)


def _values(options: list[Any], option_id: str = "reasoningEffort") -> list[str]:
    return [value.value for value in _option(options, option_id).options]


def _current(options: list[Any]) -> str:
    return str(_option(options, "reasoningEffort").current_value)


async def _set(agent: Agent, session: str, option: str, value: str) -> tuple[list[Any], list[Any]]:
    """Set ``option``; the options answered and those of the update announced after."""
    shown = agent.client.kinds(session).count("config_option_update")
    answer = await agent.conn.set_config_option(session_id=session, config_id=option, value=value)
    update = await agent.client.wait_for(session, "config_option_update", shown + 1)
    return list(answer.config_options), list(update.config_options)


def _turn_effort(agent: Agent) -> str | None:
    start = agent.world.host_requests("turn/start")[-1]
    effort: str | None = start["params"].get("reasoningEffort")
    return effort


@pytest.mark.parametrize("version", VERSIONS)
async def test_effort_values_follow_the_model_and_a_lacking_effort_is_dropped(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
            menu = agent.options(session)
            deep, deep_update = await _set(agent, session, "model", "muse-spark-1.3")
            await _set(agent, session, "reasoningEffort", "max")
            told = len(agent.client.text(session))
            fast, fast_update = await _set(agent, session, "model", "muse-spark-1.2")
            said = agent.client.text(session)[told:]
            thought = len(agent.client.text(session, "agent_thought_chunk"))
            response = await agent.prompt(session, "with the faster model")
        reasoning = agent.client.text(session, "agent_thought_chunk")[thought:]
    assert response.stop_reason == "end_turn"
    if version not in TIERED:
        assert _values(menu) == _values(deep) == _values(fast) == EVERY
        assert _current(fast) == "max"
        assert LACKS_MAX not in said
        assert _turn_effort(agent) == "max"
        return
    assert _values(menu) == ["default", "none", *SPARK[1:]]
    assert _option(menu, "reasoningEffort").options[0].name == "Muse default (High)"
    assert _values(deep) == _values(deep_update) == [*SPARK, "max"]
    # muse-spark-1.2 has no max: Muse's default for it applies, and the user hears why.
    assert _values(fast) == _values(fast_update) == SPARK
    assert _current(fast) == _current(fast_update) == "default"
    assert _option(fast, "reasoningEffort").options[0].name == "Muse default (Medium)"
    assert f"'muse-spark-1.2' {LACKS_MAX}" in said
    assert _turn_effort(agent) is None
    assert "Planning a reply with medium reasoning effort." in reasoning


@pytest.mark.parametrize("version", VERSIONS)
async def test_an_effort_chosen_from_the_remembered_catalog_is_checked_before_it_is_sent(
    tmp_path: Path, version: str
) -> None:
    # The catalog was remembered while Muse listed no tiers; then Muse was updated.
    world = make_world(tmp_path, "1.3.0")
    async with running_agent(world) as agent:
        await agent.new_session()
    world.version = version
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            # Until a host lists the catalog again, the remembered one offers every effort.
            chosen, _ = await _set(agent, session, "reasoningEffort", "ultra")
            response = await agent.prompt(session, "hello")
            options = agent.options(session)
        said = agent.client.text(session)
    assert _values(chosen) == EVERY
    assert response.stop_reason == "end_turn"
    assert len(world.host_requests("model/list")) == 2  # remembered, then listed before the turn
    if version not in TIERED:
        assert _turn_effort(agent) == "ultra"
        assert _current(options) == "ultra"
        return
    assert _turn_effort(agent) is None
    assert _current(options) == "default"
    assert "'muse-spark-1.3-contributor' does not offer the reasoning effort Ultra" in said


def _stored_effort(tmp_path: Path, session: str) -> str | None:
    path = tmp_path / "acp-data" / "sessions" / f"{session}.json"
    effort: str | None = json.loads(path.read_text(encoding="utf-8"))["settings"]["effort"]
    return effort


async def _max_stored_before_the_update(world: World) -> str:
    """A session whose effort Max was stored while Muse offered every effort (1.3.0 for a
    version with tiers), then Muse updated to ``world.version``: the session's id."""
    target, world.version = world.version, "1.3.0" if world.version in TIERED else world.version
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
            await _set(agent, session, "reasoningEffort", "max")
    world.version = target
    return session


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_stored_effort_the_updated_muse_lacks_is_reported_at_load(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    session = await _max_stored_before_the_update(world)
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            options = list(loaded.config_options or [])
            if version in TIERED:
                # Read as the load began (nothing remembered in time), the updated catalog is
                # applied as the session's records are read, and the load answers with it;
                # read after the load, it is applied then, in an update.
                await agent.client.wait_until(
                    lambda: _current(_options_now(agent, session, options)) == "default"
                )
                options = _options_now(agent, session, options)
            said = agent.client.text(session)
            response = await agent.prompt(session, "after the update")
    assert response.stop_reason == "end_turn"
    if version not in TIERED:
        assert _current(options) == "max"
        assert _turn_effort(agent) == "max"
        assert _stored_effort(tmp_path, session) == "max"
        return
    assert _current(options) == "default"
    assert _told_max_is_lacking(said)
    assert _turn_effort(agent) is None
    assert _stored_effort(tmp_path, session) is None


@pytest.mark.parametrize("version", TIERED)
async def test_a_stored_effort_is_reported_at_load_when_the_catalog_was_read_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, "1.3.0")
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
            await _set(agent, session, "reasoningEffort", "max")
    # Nothing remembered of the updated Muse in time: the load reads its catalog first, with
    # the account, before the session it loads is open.
    monkeypatch.setattr(catalog, "recall", lambda folder, path: Remembered())
    world.version = version
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            loaded = await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            said = agent.client.text(session)
            response = await agent.prompt(session, "after the update")
    assert _current(list(loaded.config_options or [])) == "default"
    assert _told_max_is_lacking(said), said
    assert response.stop_reason == "end_turn"
    assert _turn_effort(agent) is None
    assert _stored_effort(tmp_path, session) is None


def _options_now(agent: Agent, session: str, loaded: list[Any]) -> list[Any]:
    """The session's options as the client last heard them: the latest update's, else the
    load's answer."""
    if "config_option_update" in agent.client.kinds(session):
        return _last_options(agent, session)
    return loaded


def _told_max_is_lacking(said: str) -> bool:
    """The user heard that the stored effort Max is not offered by the session's model, as
    the catalog is applied after the load or as the session's records are read."""
    model = "'muse-spark-1.3-contributor'"
    return f"{model} {LACKS_MAX}" in said or f"effort Max is not offered by {model}" in said


def _last_options(agent: Agent, session: str) -> list[Any]:
    kinds = [u for s, u in agent.client.updates if s == session]
    return list([u for u in kinds if u.session_update == "config_option_update"][-1].config_options)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_model_another_client_chose_takes_its_own_efforts(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version)
    async with running_agent(world) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
            await _set(agent, session, "model", "muse-spark-1.3")
            await _set(agent, session, "reasoningEffort", "max")
            await agent.prompt(session, "sim:switch-model muse-spark-1.2")
            await agent.client.wait_until(
                lambda: (
                    _option(_last_options(agent, session), "model").current_value
                    == "muse-spark-1.2"
                )
            )
            options = _last_options(agent, session)
            said = agent.client.text(session)
            await agent.prompt(session, "on the other client's model")
    if version not in TIERED:
        assert _current(options) == "max"
        assert _turn_effort(agent) == "max"
        return
    assert f"'muse-spark-1.2' {LACKS_MAX}" in said
    assert _values(options) == SPARK
    assert _current(options) == "default"
    assert _turn_effort(agent) is None


@dataclass
class _Loaded:
    agent: Agent
    session: str
    outcome: Any
    """The prompt's response, or the error it was answered with."""
    written: int
    """The ``turn/start`` written for the prompt before the held read was released."""
    before: int
    """The ``turn/start`` written before the prompt."""


UNCHECKED = "could not be read before this turn, so the reasoning effort Max is sent"


async def _prompt_during_held_read(
    world: World, monkeypatch: pytest.MonkeyPatch, *, release_at_once: bool
) -> _Loaded:
    """A session whose effort Max was stored, and catalog remembered, while Muse offered every
    effort, loaded on ``world.version``; the catalog read that follows the load is held, and a
    prompt sent at once; the read is released once the prompt is as far as it goes (at once),
    else once it has been answered."""
    session = await _max_stored_before_the_update(world)
    released, reading = anyio.Event(), catalog.read_catalog

    async def held(*args: Any) -> Any:
        await released.wait()
        return await reading(*args)

    monkeypatch.setattr(catalog, "read_catalog", held)
    before = len(world.host_requests("turn/start"))
    async with running_agent(world) as agent:
        with anyio.fail_after(WAIT):
            await agent.conn.load_session(
                session_id=session, cwd=str(world.workspace), mcp_servers=[]
            )
            answered, outcome = anyio.Event(), list[Any]()
            async with anyio.create_task_group() as tasks:

                async def prompt() -> None:
                    try:
                        outcome.append(await agent.prompt(session, "right after the load"))
                    except RequestError as error:
                        outcome.append(error)
                    answered.set()

                tasks.start_soon(prompt)
                if release_at_once:
                    await anyio.wait_all_tasks_blocked()
                else:
                    await answered.wait()
                written = len(world.host_requests("turn/start")) - before
                released.set()
        return _Loaded(agent, session, outcome[0], written, before)


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_turn_waits_for_the_catalog_read_under_way_to_check_its_effort(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, version)
    loaded = await _prompt_during_held_read(world, monkeypatch, release_at_once=True)
    agent, said = loaded.agent, loaded.agent.client.text(loaded.session)
    assert not isinstance(loaded.outcome, RequestError), loaded.outcome
    assert loaded.outcome.stop_reason == "end_turn"
    assert len(world.host_requests("turn/start")) == loaded.before + 1
    assert UNCHECKED not in said
    if version in TIERED:
        # The updated catalog says the model lacks Max: dropped before Muse hears of it.
        assert _told_max_is_lacking(said), said
        assert _turn_effort(agent) is None
        assert _current(_last_options(agent, loaded.session)) == "default"
    else:
        assert _turn_effort(agent) == "max"
    assert loaded.written == 0  # the turn waited for the read


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_catalog_read_that_outlasts_the_read_budget_leaves_the_effort_unchecked_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, version)
    world.extra_env.update(MUSE_ACP_READ_TIMEOUT="1")
    loaded = await _prompt_during_held_read(world, monkeypatch, release_at_once=False)
    said = loaded.agent.client.text(loaded.session)
    # Past the budget the turn goes on with the remembered catalog, which offers Max, and the
    # user hears that it was not checked against Muse's current list.
    assert loaded.written == 1
    assert _turn_effort(loaded.agent) == "max"
    assert f"{UNCHECKED} checked only against the model list remembered" in said, said
    if version in TIERED:  # the updated Muse refuses it, as it would have unchecked
        assert isinstance(loaded.outcome, RequestError)
        assert "reasoning effort 'max' is not a tier" in str(loaded.outcome)
    else:
        assert loaded.outcome.stop_reason == "end_turn"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_turn_waits_for_the_models_command_read_in_another_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    world = make_world(tmp_path, version)
    entered, released, reading = anyio.Event(), anyio.Event(), catalog.read_catalog

    async def held(*args: Any) -> Any:
        entered.set()
        await released.wait()
        return await reading(*args)

    monkeypatch.setattr(commands, "read_catalog", held)
    async with running_agent(world) as agent:
        listing, other = await agent.new_session(), await agent.new_session()
        with anyio.fail_after(WAIT):
            await agent.prompt(listing, "hello")
            await agent.prompt(other, "hello")
            await _set(agent, other, "reasoningEffort", "high")
            before = len(world.host_requests("turn/start"))
            answers: dict[str, Any] = {}

            async def prompt(session: str, text: str) -> None:
                answers[session] = await agent.prompt(session, text)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(prompt, listing, "/models")
                await entered.wait()
                tasks.start_soon(prompt, other, "while the menu is read")
                await anyio.wait_all_tasks_blocked()
                written = len(world.host_requests("turn/start")) - before
                released.set()
    # The effort went out checked against the list /models read, not before it was read.
    assert written == 0
    assert answers[other].stop_reason == answers[listing].stop_reason == "end_turn"
    assert len(world.host_requests("turn/start")) == before + 1
    assert _turn_effort(agent) == "high"
    assert "Model menu refreshed" in agent.client.text(listing)
    assert UNCHECKED.replace("Max", "High") not in agent.client.text(other)
