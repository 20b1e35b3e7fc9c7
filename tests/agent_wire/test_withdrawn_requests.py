"""A withdrawn request changes nothing: every method that changes state, with its
``$/cancel_request`` in the same write, 2 ms or 10 ms after it, is either made and answered as the
success it is, or not made and answered -32800, never both; and what the client was told (the
answer, the updates) matches what the agent says afterwards (``/status``, ``session/list``, its
preference files, the requests Muse received).

One agent per Muse version serves every case, each on sessions of its own, in a raw client that
can put two frames in one write.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from muse_acp.agent.options.preferences import SESSIONS_DIRECTORY
from muse_acp.agent.routes import REQUESTS
from tests.robust.rawagent import EXTENSIONS, RawAgent, id_key, raw_agent

from .harness import make_world
from .test_host_versions import VERSIONS

pytestmark = pytest.mark.anyio

TIMINGS: Final[tuple[float | None, ...]] = (None, 0.002, 0.010)
"""When the cancel is written: in the request's own write (None), or that many seconds later."""

CANCELLED: Final = -32800
STOPPABLE: Final = frozenset({"1.3.0", "1.4.2", "1.4.4", "1.4.13"})
NO_DELETE: Final = frozenset({"1.1.1", "1.2.1", "1.3.0", "1.4.4", "1.4.13"})
"""Muse versions that serve workflow/cancel (``_muse/task``) and goal/set (``/goal``)."""
STATUS_LABELS: Final[Mapping[str, str]] = {
    "mode": "Mode",
    "model": "Model",
    "reasoningEffort": "Reasoning effort",
}
"""``/status`` labels of the options it shows on lines of their own (the rest under Safety)."""

COVERED: Final = frozenset(
    {
        "session/new",
        "session/close",
        "session/delete",
        "session/fork",
        "session/set_mode",
        "session/set_config_option",
        "session/prompt",
        "logout",
        "_muse/task",
        "_muse/steer",
        "_session/steering",
    }
)
"""The methods this file races a cancel against (``session/prompt`` through ``/rename``,
``/plan``, ``/compact`` and ``/goal``)."""


def _member(key: str, value: str) -> Callable[[Any], bool]:
    return lambda update: bool(update[key] == value)


def _frame(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


class Race:
    """One state-changing request and its cancel on ``agent``, as the client saw them."""

    def __init__(self, agent: RawAgent, label: str) -> None:
        self.agent = agent
        self.label = label
        self.response: dict[str, Any] = {}
        self.start = 0

    async def run(self, method: str, params: Mapping[str, Any], delay: float | None) -> bool:
        """Send the request and its cancel; True when it was made (a result), False when it
        was withdrawn (-32800); anything else fails the test."""
        agent = self.agent
        request_id = agent.next_id()
        request = _frame({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        cancel = _frame(
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}
        )
        self.start = len(agent.notifications)
        if delay is None:
            await agent.write(request + cancel)  # one write of two frames
        else:
            await agent.write(request)
            await anyio.sleep(delay)  # the race itself, not a wait for anything
            await agent.write(cancel)
        self.response = await agent.response(id_key(request_id))
        if "result" in self.response:
            return True
        assert self.response["error"]["code"] == CANCELLED, f"{self.label}: {self.response}"
        return False

    def updates(self, session: str, kind: str) -> list[dict[str, Any]]:
        """The updates of ``kind`` for ``session`` since the request was sent."""
        return [
            n["params"]["update"]
            for n in self.agent.notifications[self.start :]
            if n.get("method") == "session/update"
            and n["params"]["sessionId"] == session
            and n["params"]["update"]["sessionUpdate"] == kind
        ]

    async def wait_update(self, session: str, kind: str, holds: Callable[[Any], bool]) -> None:
        """Wait until an update of ``kind`` for which ``holds`` arrived since the request."""
        await self.agent.wait_until(
            lambda: any(holds(u) for u in self.updates(session, kind)),
            f"{self.label}: a {kind} update",
        )


async def _status(agent: RawAgent, session: str) -> dict[str, str] | int:
    """What ``/status`` says of ``session`` (label to shown value, and ``Title``), or the error
    code its prompt was answered with."""
    start = len(agent.notifications)
    response = await agent.prompt_text(session, "/status")
    if "error" in response:
        code = response["error"]["code"]
        assert isinstance(code, int)
        return code
    text = "".join(
        n["params"]["update"]["content"]["text"]
        for n in agent.notifications[start:]
        if n.get("method") == "session/update"
        and n["params"]["sessionId"] == session
        and n["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    shown: dict[str, str] = {"Title": ""}
    for line in text.splitlines():
        label, _, value = line.removeprefix("- ").partition(": ")
        if label == "Safety":
            for entry in value.split("; "):
                name, _, setting = entry.partition(": ")
                shown[name] = setting
        elif label == "Session" and " (" in value:
            shown["Title"] = value.split(" (", 1)[1][1:-2]
        else:
            shown[label] = value
    return shown


async def _new(agent: RawAgent) -> dict[str, Any]:
    return await agent.result("session/new", {"cwd": str(agent.world.workspace), "mcpServers": []})


async def _listed(agent: RawAgent) -> set[str]:
    listed = await agent.result("session/list", {"cwd": str(agent.world.workspace)})
    return {entry["sessionId"] for entry in listed["sessions"]}


def _records(agent: RawAgent) -> set[str]:
    directory = agent.world.data_dir / SESSIONS_DIRECTORY
    return {path.stem for path in directory.glob("*.json")} if directory.exists() else set()


def _shown_name(option: Mapping[str, Any], value: str) -> str:
    name: str = next(o["name"] for o in option["options"] if o["value"] == value)
    return name


def _label(option: Mapping[str, Any]) -> str:
    return STATUS_LABELS.get(option["id"], option["name"])


async def _config_option(agent: RawAgent, option_id: str, version: str) -> None:
    """Each race sets the option to the other of two values on a session of its own."""
    created = await _new(agent)
    session = created["sessionId"]
    if option_id == "model":
        await agent.prompt_text(session, "hello")  # a running host confirms the model first
    [option] = [o for o in created["configOptions"] if o["id"] == option_id]
    values = [o["value"] for o in option["options"]]
    first = option["currentValue"]
    other = next(v for v in values if v != first and v != "autoApprove")
    for delay in TIMINGS:
        label = f"{version} set_config_option {option_id} {delay}"
        before = await _status(agent, session)
        assert isinstance(before, dict), f"{label}: {before}"
        current = first if before[_label(option)] == _shown_name(option, first) else other
        target = other if current == first else first
        race = Race(agent, label)
        params = {"sessionId": session, "configId": option_id, "value": target}
        made = await race.run("session/set_config_option", params, delay)

        def shows(update: Any, wanted: str = target) -> bool:
            options = {o["id"]: o["currentValue"] for o in update["configOptions"]}
            return options.get(option_id) == wanted

        if made:
            answered = {
                o["id"]: o["currentValue"] for o in race.response["result"]["configOptions"]
            }
            assert answered[option_id] == target, label
            await race.wait_update(session, "config_option_update", shows)
        after = await _status(agent, session)
        assert isinstance(after, dict), f"{label}: {after}"
        expected = target if made else current
        assert after[_label(option)] == _shown_name(option, expected), f"{label}: {after}"
        if not made:
            assert race.updates(session, "config_option_update") == [], label


async def _set_mode(agent: RawAgent, version: str) -> None:
    created = await _new(agent)
    session = created["sessionId"]
    names = {m["id"]: m["name"] for m in created["modes"]["availableModes"]}
    current = created["modes"]["currentModeId"]
    for delay in TIMINGS:
        label = f"{version} set_mode {delay}"
        target = "autoApprove" if current != "autoApprove" else "default"
        race = Race(agent, label)
        params = {"sessionId": session, "modeId": target}
        made = await race.run("session/set_mode", params, delay)
        if made:
            current = target
            await race.wait_update(session, "current_mode_update", _member("currentModeId", target))
        after = await _status(agent, session)
        assert isinstance(after, dict), f"{label}: {after}"
        assert after["Mode"] == names[current], f"{label}: {after}"
        if not made:
            assert race.updates(session, "current_mode_update") == [], label
            assert race.updates(session, "config_option_update") == [], label


async def _rename(agent: RawAgent, version: str) -> None:
    session = (await _new(agent))["sessionId"]
    title = ""
    for index, delay in enumerate(TIMINGS):
        label = f"{version} /rename {delay}"
        wanted = f"Title {index}"
        race = Race(agent, label)
        prompt = [{"type": "text", "text": f"/rename {wanted}"}]
        made = await race.run("session/prompt", {"sessionId": session, "prompt": prompt}, delay)
        told = [u.get("title") for u in race.updates(session, "session_info_update")]
        if made:
            assert race.response["result"] == {"stopReason": "end_turn"}, label
            assert told == [wanted], f"{label}: {told}"
            title = wanted
        else:
            assert told == [], f"{label}: {told}"
        after = await _status(agent, session)
        assert isinstance(after, dict), f"{label}: {after}"
        assert after["Title"] == title, f"{label}: {after}"


async def _plan(agent: RawAgent, version: str) -> None:
    """``/plan`` enters plan mode only when made; a withdrawn one announces no mode."""
    for delay in TIMINGS:
        label = f"{version} /plan {delay}"
        created = await _new(agent)  # each race starts outside plan mode
        session, modes = created["sessionId"], created["modes"]
        names = {m["id"]: m["name"] for m in modes["availableModes"]}
        race = Race(agent, label)
        prompt = [{"type": "text", "text": "/plan"}]
        made = await race.run("session/prompt", {"sessionId": session, "prompt": prompt}, delay)
        told = [u["currentModeId"] for u in race.updates(session, "current_mode_update")]
        assert told == (["plan"] if made else []), f"{label}: {told}"
        after = await _status(agent, session)
        assert isinstance(after, dict), f"{label}: {after}"
        shown = names["plan" if made else modes["currentModeId"]]
        assert after["Mode"] == shown, f"{label}: {after}"


async def _host_command(agent: RawAgent, version: str, text: str, method: str) -> None:
    """A local command that has Muse change something (``method``) reaches it only when made."""
    session = (await _new(agent))["sessionId"]
    await agent.prompt_text(session, "hello")  # its host runs: the command reaches it at once
    for delay in TIMINGS:
        label = f"{version} {text} {delay}"
        asked = len(agent.world.host_requests(method))
        prompt = [{"type": "text", "text": text}]
        made = await Race(agent, label).run(
            "session/prompt", {"sessionId": session, "prompt": prompt}, delay
        )
        await _listed(agent)  # a later request answered: the agent has settled the race
        sent = len(agent.world.host_requests(method)) - asked
        assert sent == (1 if made else 0), f"{label}: Muse received {sent} {method}"


async def _new_session(agent: RawAgent, version: str) -> None:
    for delay in TIMINGS:
        label = f"{version} session/new {delay}"
        before = _records(agent)
        race = Race(agent, label)
        params = {"cwd": str(agent.world.workspace), "mcpServers": []}
        made = await race.run("session/new", params, delay)
        await _listed(agent)  # a later request answered: the agent has settled the race
        added = _records(agent) - before
        if made:
            session = race.response["result"]["sessionId"]
            assert added == {session}, f"{label}: {added}"
            assert isinstance(await _status(agent, session), dict), label
        else:
            assert added == set(), f"{label}: recorded {added} for a withdrawn session/new"


async def _close(agent: RawAgent, version: str) -> None:
    for delay in TIMINGS:
        label = f"{version} session/close {delay}"
        session = (await _new(agent))["sessionId"]
        made = await Race(agent, label).run("session/close", {"sessionId": session}, delay)
        after = await _status(agent, session)
        assert (after == -32002) == made, f"{label}: /status then gave {after}"


async def _fork(agent: RawAgent, version: str, source: str) -> None:
    cwd = str(agent.world.workspace)
    for delay in TIMINGS:
        label = f"{version} session/fork {delay}"
        before = await _listed(agent)
        race = Race(agent, label)
        made = await race.run(
            "session/fork", {"sessionId": source, "cwd": cwd, "mcpServers": []}, delay
        )
        added = await _listed(agent) - before
        if made:
            assert added == {race.response["result"]["sessionId"]}, f"{label}: {added}"
        else:
            assert added == set(), f"{label}: Muse has a fork the client never learnt of"


async def _delete(agent: RawAgent, version: str) -> None:
    for delay in TIMINGS:
        label = f"{version} session/delete {delay}"
        session = (await _new(agent))["sessionId"]
        await agent.prompt_text(session, "hello")  # Muse has it
        assert session in await _listed(agent), label
        made = await Race(agent, label).run("session/delete", {"sessionId": session}, delay)
        assert (session not in await _listed(agent)) == made, label
        assert (session not in _records(agent)) == made, label


async def _logout(agent: RawAgent, version: str) -> None:
    for delay in TIMINGS:
        label = f"{version} logout {delay}"
        session = (await _new(agent))["sessionId"]
        made = await Race(agent, label).run("logout", {}, delay)
        after = await _status(agent, session)
        assert (after == -32002) == made, f"{label}: /status then gave {after}"
        # Signed out now: the user signs in again before the next session.
        with anyio.fail_after(30):
            login = await anyio.run_process(
                [str(agent.world.muse_bin), "login"], env=agent.world.env()
            )
        assert login.returncode == 0, label


async def _held_turn(agent: RawAgent, session: str) -> tuple[str, str]:
    """Start a ``sim:hold`` prompt; return its response key and its running turn's id."""
    start = len(agent.notifications)
    prompt = [{"type": "text", "text": "sim:hold"}]
    key = await agent.start_request("session/prompt", {"sessionId": session, "prompt": prompt})

    def announced() -> str | None:
        for n in agent.notifications[start:]:
            meta = n.get("params", {}).get("update", {}).get("_meta") or {}
            if isinstance(meta.get("muse/activeTurnId"), str):
                turn: str = meta["muse/activeTurnId"]
                return turn
        return None

    await agent.wait_until(lambda: announced() is not None, "the held turn to start")
    turn = announced()
    assert turn is not None
    return key, turn


async def _steer(agent: RawAgent, version: str, method: str) -> None:
    session = (await _new(agent))["sessionId"]
    for delay in TIMINGS:
        label = f"{version} {method} {delay}"
        key, turn = await _held_turn(agent, session)
        sent = len(agent.world.host_requests("turn/steer"))
        params: dict[str, Any] = {"sessionId": session, "prompt": [{"type": "text", "text": "ok"}]}
        if method == "_muse/steer":
            params["expectedTurnId"] = turn
        made = await Race(agent, label).run(method, params, delay)
        if not made:
            cancel = {"sessionId": session}
            await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": cancel})
        ended = await agent.response(key)
        stop = ended["result"]["stopReason"]
        assert stop == ("end_turn" if made else "cancelled"), f"{label}: {ended}"
        steered = len(agent.world.host_requests("turn/steer")) - sent
        assert steered == (1 if made else 0), f"{label}: Muse received {steered} corrections"


async def _task(agent: RawAgent, version: str) -> None:
    session = (await _new(agent))["sessionId"]
    for delay in TIMINGS:
        label = f"{version} _muse/task {delay}"
        start = len(agent.notifications)
        await agent.prompt_text(session, "sim:workflow Audit the notes")
        [card] = [
            n["params"]["update"]["toolCallId"]
            for n in agent.notifications[start:]
            if n.get("method") == "session/update"
            and n["params"]["update"]["sessionUpdate"] == "tool_call"
        ]
        asked = len(agent.world.host_requests("workflow/cancel"))
        params = {"sessionId": session, "target": card, "action": "cancel"}
        made = await Race(agent, label).run("_muse/task", params, delay)
        await _listed(agent)  # a later request answered: the agent has settled the race
        stopped = len(agent.world.host_requests("workflow/cancel")) - asked
        assert stopped == (1 if made else 0), f"{label}: Muse was asked {stopped} times"


def test_the_table_covers_every_method_whose_route_changes_state() -> None:
    assert {binding.method for binding in REQUESTS if binding.changes_state} == COVERED


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_withdrawn_request_changes_nothing_and_a_late_cancel_is_ignored(
    tmp_path: Path, version: str
) -> None:
    world = make_world(tmp_path, version=version)
    async with raw_agent(world) as agent:
        capabilities = {"_meta": {**EXTENSIONS["_meta"], "muse/asyncTasks": 1}}
        await agent.result("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        source = (await _new(agent))["sessionId"]
        await agent.prompt_text(source, "/models")  # the model menu, from Muse
        await agent.prompt_text(source, "hello")  # Muse has it: it can be forked
        options = (await _new(agent))["configOptions"]
        cases: list[Callable[[], Awaitable[None]]] = [
            lambda: _set_mode(agent, version),
            *[
                lambda option_id=o["id"]: _config_option(agent, option_id, version)
                for o in options
                if len(o["options"]) > 1
            ],
            lambda: _rename(agent, version),
            lambda: _plan(agent, version),
            lambda: _new_session(agent, version),
            lambda: _close(agent, version),
            lambda: _fork(agent, version, source),
            lambda: _steer(agent, version, "_muse/steer"),
            lambda: _steer(agent, version, "_session/steering"),
        ]
        if version not in NO_DELETE:  # refused before anything changes (test_stable_1_4_4)
            cases.append(lambda: _delete(agent, version))
        if version in STOPPABLE:
            cases.append(lambda: _task(agent, version))
            cases.append(lambda: _host_command(agent, version, "/goal set Ship it", "goal/set"))
        cases.append(lambda: _host_command(agent, version, "/compact", "session/compact"))
        cases.append(lambda: _logout(agent, version))  # last: it closes every session
        for case in cases:
            await case()
        assert agent.alive
