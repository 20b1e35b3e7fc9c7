"""The model menu at ``session/new``, as Zed uses it: every model of the user's Muse is offered
in the first answer, on the process's first session after a restart too (the catalog is
remembered from the last host, whatever else is remembered at that moment, and refreshed once
a host runs), so the model Zed remembered is applied right after ``session/new``; a value the
menu does not offer is refused, naming those it does."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp import schema

from muse_acp.agent.announcements import catalog
from muse_acp.host.binary import probed
from muse_acp.host.executable_memory import remember_catalog, remember_probe
from muse_acp.sim.state.catalog import MODELS

from .harness import WAIT, Agent, make_world, running_agent

pytestmark = pytest.mark.anyio

VERSIONS = ("1.1.1", "1.2.1", "1.3.0", "1.4.2", "1.4.4", "1.4.13")
ZED = schema.ClientCapabilities(
    fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True),
    terminal=True,
    auth=schema.AuthCapabilities(terminal=True),
)
CATALOG = [row.model_id for row in MODELS]


def _model(options: list[Any] | None) -> Any:
    return next(o for o in (getattr(o, "root", o) for o in options or []) if o.id == "model")


def _models(options: list[Any] | None) -> list[str]:
    return [value.value for value in _model(options).options]


async def _new_and_remembered_model(agent: Agent) -> tuple[str, list[str], list[Any]]:
    """What Zed does: ``session/new``, then the model the user chose last time; the session,
    the models offered and the options after the choice."""
    with anyio.fail_after(WAIT):
        opened = await agent.conn.new_session(cwd=str(agent.world.workspace), mcp_servers=[])
        chosen = await agent.conn.set_config_option(
            session_id=opened.session_id, config_id="model", value="muse-spark-1.2"
        )
    return opened.session_id, _models(opened.config_options), list(chosen.config_options)


def _current_model(options: list[Any]) -> str:
    return str(_model(options).current_value)


@pytest.mark.parametrize("version", VERSIONS)
async def test_every_model_is_offered_at_session_new_even_first_after_a_restart(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with running_agent(world, capabilities=ZED) as agent:
        _, first, chosen = await _new_and_remembered_model(agent)
    assert set(CATALOG) <= set(first)
    assert _current_model(chosen) == "muse-spark-1.2"
    read_once = len(world.host_requests("model/list"))
    assert read_once == 1  # on the host that asked whether Muse is signed in
    assert len(world.host_requests("initialize")) == 1

    async with running_agent(world, capabilities=ZED) as agent:
        session, after_restart, chosen = await _new_and_remembered_model(agent)
        # Answered from the remembered catalog: no host listed it before the answer.
        assert len(world.host_requests("model/list")) == read_once
        with anyio.fail_after(WAIT):
            await agent.prompt(session, "hello")
            # Kept fresh: the session's own host lists it again while the turn runs.
            await agent.client.wait_until(
                lambda: len(world.host_requests("model/list")) == read_once + 1
            )
    assert after_restart == first
    assert _current_model(chosen) == "muse-spark-1.2"


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_menu_is_remembered_for_the_next_start_while_a_probe_is_remembered_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """The executable's probe is remembered (as a start settles, this one or another
    muse-acp's) at the moment the first host's catalog is: the next start still answers
    ``session/new`` from the remembered catalog."""
    world = make_world(tmp_path, version=version)
    replace = os.replace
    under_way = threading.local()  # the worker thread's write the catalog's lands inside
    landed: list[str] = []

    def replacing(source: str, target: str) -> None:
        pending: list[Callable[[], None]] = getattr(under_way, "pending", [])
        while pending:  # between the probe's write reading and replacing what is remembered
            pending.pop()()
        replace(source, target)

    def with_a_probe_under_way(folder: Path, path: str, listed: dict[str, Any]) -> None:
        binary = probed(path)
        assert binary is not None, "the start probed its Muse before listing models"
        under_way.pending = [lambda: remember_catalog(folder, path, listed)]
        remember_probe(folder, binary)
        landed.append(path)

    monkeypatch.setattr(os, "replace", replacing)
    monkeypatch.setattr(catalog, "remember_catalog", with_a_probe_under_way)
    async with running_agent(world, capabilities=ZED) as agent:
        await _new_and_remembered_model(agent)
    assert landed, "the catalog was remembered while the probe was"
    read_once = len(world.host_requests("model/list"))
    async with running_agent(world, capabilities=ZED) as agent:
        _, after_restart, chosen = await _new_and_remembered_model(agent)
        assert len(world.host_requests("model/list")) == read_once  # none before the answer
    assert set(CATALOG) <= set(after_restart)
    assert _current_model(chosen) == "muse-spark-1.2"


async def test_a_model_the_menu_does_not_offer_is_refused_naming_those_it_does(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    async with running_agent(world, capabilities=ZED) as agent:
        session = await agent.new_session()
        with anyio.fail_after(WAIT), pytest.raises(acp.RequestError) as raised:
            await agent.conn.set_config_option(
                session_id=session, config_id="model", value="muse-spark-0.9"
            )
    assert raised.value.code == -32602
    assert "'muse-spark-0.9'" in str(raised.value)
    for offered in CATALOG:
        assert offered in str(raised.value)
