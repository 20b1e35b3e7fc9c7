"""Secrets stay out of everything the agent writes, and session ids cannot reach other files.

The module's agent runs with canary secrets where they could leak: an exported META_API_KEY and
another secret-named variable in its environment, a bearer token and URL credentials in prompt
text and in host errors (``sim:fail`` and a host that dies quoting them). None may appear in its
stderr (logging at debug) or in a preference file, nor on stdout except where the client's own
prompt text is repeated back to it (the simulated model echoes a prompt, and loading a session
replays it): a message chunk whose text is part of a prompt that was sent is that echo, and
only such chunks are left out of the search. Every stdout line must be a JSON-RPC frame.

The run of every method is a ``muse-acp serve`` process, so that its stdout and stderr are all
the process writes; the other tests run the agent in this process.
"""

from __future__ import annotations

import json
import stat
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any, Final

import pytest

from muse_acp.host.executable_memory import memory_dir
from muse_acp.rpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from tests.agent_wire.harness import World, make_world

from .checks import problems_in
from .oracle import SESSION_REQUESTS
from .rawagent import RawAgent, raw_agent

pytestmark = pytest.mark.anyio

CANARY: Final = f"muse-acp-canary-{uuid.uuid4().hex}"
OTHER_TOKEN: Final = f"muse-acp-token-{uuid.uuid4().hex}"
BEARER: Final = f"muse-acp-bearer-{uuid.uuid4().hex}"
URL_PASSWORD: Final = f"muse-acp-pass-{uuid.uuid4().hex}"
QUERY_KEY: Final = f"muse-acp-query-{uuid.uuid4().hex}"
SECRETS: Final = (CANARY, OTHER_TOKEN, BEARER, URL_PASSWORD, QUERY_KEY)
LEAKY_TEXT: Final = (
    f"Authorization: Bearer {BEARER} and "
    f"https://muse:{URL_PASSWORD}@example.com/repo?api_key={QUERY_KEY}"
)
SECRET_ENV: Final = {"META_API_KEY": CANARY, "SERVICE_ACCESS_TOKEN": OTHER_TOKEN}
ECHO_CARRIERS: Final = frozenset({"agent_message_chunk", "user_message_chunk"})
OUTPUT_META: Final = "muse/output"
ACTIVE_TURN: Final = "muse/activeTurnId"


def secrets_in(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def fresh_data_dir(world: World) -> Path:
    """A data directory whose parent does not exist yet either."""
    return world.root / "fresh" / "muse-acp"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return make_world(tmp_path_factory.mktemp("secrets"))


@pytest.fixture(scope="module")
async def agent(world: World) -> AsyncIterator[RawAgent]:
    env = {**SECRET_ENV, "MUSE_ACP_DATA_DIR": str(fresh_data_dir(world))}
    async with raw_agent(world, env) as running:
        await running.initialize()
        yield running
        assert running.alive, world.stderr_text()[-3000:]


class Script:
    """Runs requests on the module's agent, remembering every prompt text sent."""

    def __init__(self, agent: RawAgent) -> None:
        self.agent = agent
        self.prompts: list[str] = []

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        self.prompts.append(text)
        return await self.agent.prompt_text(session_id, text)

    async def start_prompt(self, session_id: str, text: str) -> str:
        self.prompts.append(text)
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        return await self.agent.start_request("session/prompt", params)

    async def ok(self, method: str, params: Any = None) -> dict[str, Any]:
        return await self.agent.result(method, params)

    async def ended(self, key: str, stop_reason: str) -> None:
        response = await self.agent.response(key)
        assert response.get("result") == {"stopReason": stop_reason}, response

    def is_echo(self, text: str) -> bool:
        return any(text in prompt for prompt in self.prompts)


def updates(agent: RawAgent, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [
        n["params"]["update"]
        for n in agent.notifications
        if n.get("method") == "session/update"
        and n["params"].get("sessionId") == session_id
        and n["params"]["update"].get("sessionUpdate") == kind
    ]


def announcements(agent: RawAgent, session_id: str) -> list[Any]:
    """Every ``muse/activeTurnId`` announced for the session: turn ids, and None at a turn's end."""
    infos = updates(agent, session_id, "session_info_update")
    return [u["_meta"][ACTIVE_TURN] for u in infos if ACTIVE_TURN in u.get("_meta", {})]


async def active_turn(agent: RawAgent, session_id: str, seen: int) -> str:
    """The first running turn announced after the first ``seen`` announcements."""
    await agent.wait_until(
        lambda: any(isinstance(t, str) for t in announcements(agent, session_id)[seen:]),
        "an active turn",
    )
    return next(t for t in announcements(agent, session_id)[seen:] if isinstance(t, str))


def without_echo(line: bytes, script: Script) -> str:
    """``line`` as text, with message chunks that repeat sent prompt text emptied."""
    message = json.loads(line)
    update = message.get("params", {}).get("update") if isinstance(message, dict) else None
    if isinstance(update, dict) and update.get("sessionUpdate") in ECHO_CARRIERS:
        content = update.get("content", {})
        if content.get("type") == "text" and script.is_echo(content.get("text", "")):
            content["text"] = ""
    return json.dumps(message)


def files_under(root: Path, skip: Iterable[Path] = ()) -> dict[Path, bytes]:
    skipped = set(skip)
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and p not in skipped}


def session_params(
    method: str, session_id: str, world: World, read: dict[str, Any]
) -> dict[str, Any]:
    """Params for ``method`` that are valid apart from, possibly, the session id.

    ``read`` names a stored output of the session (``itemId`` and ``outputRef``).
    """
    text = [{"type": "text", "text": "hello"}]
    cwd = str(world.workspace)
    extra: dict[str, dict[str, Any]] = {
        "session/load": {"cwd": cwd, "mcpServers": []},
        "session/resume": {"cwd": cwd},
        "session/fork": {"cwd": cwd},
        "session/close": {},
        "session/delete": {},
        "session/set_mode": {"modeId": "readOnly"},
        "session/set_config_option": {"configId": "mode", "value": "default"},
        "session/prompt": {"prompt": text},
        "_muse/readOutput": read,
        "_muse/steer": {"expectedTurnId": "turn", "prompt": text},
        "_session/steering": {"prompt": text},
    }
    return {"sessionId": session_id, **extra[method]}


def stored_output(agent: RawAgent, session_id: str) -> dict[str, Any]:
    """``itemId`` and ``outputRef`` of the first stored output announced in the session."""
    cards = updates(agent, session_id, "tool_call") + updates(agent, session_id, "tool_call_update")
    stored = next(c["_meta"][OUTPUT_META] for c in cards if OUTPUT_META in c.get("_meta", {}))
    return {"itemId": stored["itemId"], "outputRef": stored["outputRef"]}


def bad_session_ids(world: World) -> list[str]:
    return [
        "../x",
        "../../../../etc/passwd",
        "/abs",
        str(world.root / "escape"),
        "a/b",
        "a\\b",
        "x" * 129,
        "x" * 100_000,
        "a\x00b",
        "",
        ".",
        "..",
        "ok\n",
        ".hidden",
        "ü",
    ]


@pytest.mark.parametrize("method", SESSION_REQUESTS)
async def test_a_session_id_that_could_name_another_file_is_refused_and_creates_nothing(
    agent: RawAgent, world: World, method: str
) -> None:
    session_id = await agent.new_session()
    response = await agent.prompt_text(session_id, "sim:bash 10")
    assert response.get("result") == {"stopReason": "end_turn"}
    read = stored_output(agent, session_id)
    # With the real id the same params are accepted (steering only lacks a running turn).
    control = await agent.request(method, session_params(method, session_id, world, read))
    # Steering only lacks a running turn; this Muse has no session/delete (refused as such).
    refusals = (INVALID_REQUEST, METHOD_NOT_FOUND)
    assert "result" in control or control["error"]["code"] in refusals, control
    before = files_under(world.root, skip=(world.stderr, world.capture))
    for bad in bad_session_ids(world):
        answer = await agent.request(method, session_params(method, bad, world, read))
        assert answer.get("error", {}).get("code") == INVALID_PARAMS, (bad[:40], answer)
    for bad in bad_session_ids(world):
        await agent.send(
            {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": bad}}
        )
    await agent.initialize()  # answered only after every cancel before it was handled
    assert files_under(world.root, skip=(world.stderr, world.capture)) == before
    assert not any(p.name.startswith("escape") for p in world.root.iterdir())


async def test_preference_files_are_private_even_in_a_new_data_directory(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    data_dir = fresh_data_dir(world)
    async with raw_agent(world, {**SECRET_ENV, "MUSE_ACP_DATA_DIR": str(data_dir)}) as agent:
        await agent.initialize()
        session_id = await agent.new_session()
        answer = await agent.prompt_text(session_id, "/rename A title of my own")
        assert answer.get("result") == {"stopReason": "end_turn"}, answer
    memory = memory_dir(data_dir)
    remembered = list(memory.glob("*.json"))
    files = [p for p in data_dir.rglob("*.json") if p.parent != memory]
    assert [p.stem for p in files] == [session_id]
    # What is remembered of the executable (its probe, its catalog) is private too.
    assert remembered, "the agent remembers its Muse for the next start"
    assert stat.S_IMODE(memory.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in remembered)
    for directory in (data_dir, files[0].parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert "A title of my own" in files[0].read_text()
    assert secrets_in(files[0].read_text()) == []


async def run_every_method(script: Script, world: World) -> None:
    """Every method the agent serves, to logout, with secrets in prompts and host errors."""
    agent = script.agent
    cwd = str(world.workspace)
    session_id = await agent.new_session()
    assert (await script.prompt(session_id, "hello there"))["result"]["stopReason"] == "end_turn"
    assert (await script.prompt(session_id, LEAKY_TEXT))["result"]["stopReason"] == "end_turn"
    failed = await script.prompt(session_id, f"sim:fail {LEAKY_TEXT} {CANARY} {OTHER_TOKEN}")
    assert "error" in failed, failed
    assert secrets_in(json.dumps(failed)) == [], failed
    assert "[redacted]" in failed["error"]["message"], "the host's message is quoted, redacted"
    tools = "sim:bash 100\nsim:plan\nsim:approve ls -la\nsim:stages 2 echo hi\nsim:search x"
    assert (await script.prompt(session_id, tools))["result"]["stopReason"] == "end_turn"
    asked = [r["method"] for r in agent.agent_requests]
    assert "session/request_permission" in asked, "the approvals went to the client"
    # This client offers no forms, so Muse's question is withdrawn and Muse goes on.
    assert (await script.prompt(session_id, "sim:ask"))["result"]["stopReason"] == "end_turn"
    read = {"sessionId": session_id, **stored_output(agent, session_id)}
    await script.ok("_muse/readOutput", {**read, "offsetBytes": 0, "lengthBytes": 64})
    for command in ("/models", "/skills", "/rename Plain title"):
        assert (await script.prompt(session_id, command))["result"]["stopReason"] == "end_turn"
    await script.ok("session/set_mode", {"sessionId": session_id, "modeId": "autoApprove"})
    await script.ok(
        "session/set_config_option",
        {"sessionId": session_id, "configId": "reasoningEffort", "value": "low"},
    )
    await script.ok("session/list", {"cwd": cwd})
    seen = len(announcements(agent, session_id))
    held = await script.start_prompt(session_id, "sim:hold")
    turn = await active_turn(agent, session_id, seen)
    script.prompts.append("go on")
    correction = [{"type": "text", "text": "go on"}]
    await script.ok(
        "_muse/steer", {"sessionId": session_id, "expectedTurnId": turn, "prompt": correction}
    )
    await script.ended(held, "end_turn")
    steering = {"sessionId": session_id, "prompt": correction}
    assert "error" in await agent.request("_session/steering", steering), "no turn is running"
    seen = len(announcements(agent, session_id))
    held = await script.start_prompt(session_id, "sim:hold")
    await active_turn(agent, session_id, seen)
    cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
    await agent.send(cancel)
    await script.ended(held, "cancelled")
    await script.ok("session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []})
    await script.ok("session/resume", {"sessionId": session_id, "cwd": cwd})
    forked = await script.ok("session/fork", {"sessionId": session_id, "cwd": cwd})
    await script.ok("session/close", {"sessionId": forked["sessionId"]})
    await script.ok("authenticate", {"methodId": "meta-api-key"})
    for method in ("_robust/unknown", "session/unknown"):
        assert "error" in await agent.request(method, {"token": OTHER_TOKEN})
    await agent.write(b"garbage\n\xff\xfe\n{}\n[]\n")
    await script.ok("logout", {})


async def test_a_run_of_every_method_writes_only_frames_and_never_a_secret(
    tmp_path: Path,
) -> None:
    world = make_world(tmp_path)
    env = {**SECRET_ENV, "MUSE_ACP_DATA_DIR": str(fresh_data_dir(world))}
    async with raw_agent(world, env, process=True) as agent:
        await agent.initialize()
        script = Script(agent)
        await run_every_method(script, world)
        assert agent.alive, world.stderr_text()[-3000:]
    assert problems_in(agent.lines) == []
    assert BEARER in b"\n".join(agent.lines).decode(), "the prompt's echo carries the token"
    stdout = "\n".join(without_echo(line, script) for line in agent.lines)
    assert secrets_in(stdout) == []
    assert secrets_in(world.stderr_text()) == []
    data_dir = fresh_data_dir(world)
    preference_files = list(data_dir.rglob("*.json"))
    assert preference_files, "the run renamed a session, so a preference file must exist"
    for path in preference_files:
        assert secrets_in(path.read_text()) == [], path


async def test_a_host_that_dies_quoting_secrets_is_reported_without_them(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    # muse-sim refuses a fault list it cannot parse by quoting the entry on stderr and exiting.
    env = {**SECRET_ENV, "MUSE_SIM_FAULTS": f"{LEAKY_TEXT} {CANARY} {OTHER_TOKEN}"}
    async with raw_agent(world, env) as agent:
        await agent.initialize()
        session_id = await agent.new_session()
        answer = await agent.prompt_text(session_id, "hello")
        assert "error" in answer, answer
        assert "muse-sim" in answer["error"]["message"], "the host's last line is quoted"
    assert problems_in(agent.lines) == []
    assert secrets_in(b"\n".join(agent.lines).decode()) == []
    assert "unknown fault" in world.stderr_text(), "the host's stderr reached the log"
    assert secrets_in(world.stderr_text()) == []
