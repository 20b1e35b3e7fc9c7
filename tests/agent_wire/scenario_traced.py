"""A session worth tracing, and its replay: tool calls, a multi-stage approval, a question, a
cancel and a load, with a secret planted wherever one may pass (``Recording``)."""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from acp import schema
from pydantic import TypeAdapter

from muse_acp.config import load_config
from muse_acp.sim.in_process import SimLauncher
from muse_acp.traces.check import Outcome, check_trace
from muse_acp.traces.replay import read_trace

from .harness import WAIT, Agent, World, make_world, running_agent

FORMS = schema.ClientCapabilities(
    elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
)
"""The client can show question forms, so the question reaches it."""

_SERVERS: TypeAdapter[list[Any]] = TypeAdapter(
    list[schema.HttpMcpServer | schema.SseMcpServer | schema.McpServerStdio]
)


@dataclass
class Recording:
    """One traced session on one simulated version, and the secrets planted in it."""

    world: World
    trace: Path
    canaries: dict[str, str] = field(default_factory=dict)


def _canaries() -> dict[str, str]:
    names = ("environment", "meta", "mcp-env", "mcp-arg", "header", "prompt")
    return {name: f"canary{name.replace('-', '')}{uuid.uuid4().hex}" for name in names}


def _servers(canaries: dict[str, str], http: bool) -> list[Any]:
    entries: list[dict[str, Any]] = [
        {
            "name": "files",
            "command": sys.executable,
            "args": ["-V", f"--token={canaries['mcp-arg']}"],
            "env": [{"name": "SERVICE_CONFIG", "value": canaries["mcp-env"]}],
        }
    ]
    if http:
        headers = [{"name": "Authorization", "value": f"Bearer {canaries['header']}"}]
        entries.append(
            {"type": "http", "name": "web", "url": "https://mcp.example/x", "headers": headers}
        )
    return _SERVERS.validate_python(entries)


async def play(agent: Agent, world: World, servers: list[Any], words: str) -> str:
    """Play the session on ``agent``; its id."""
    agent.client.answer_elicitations = True
    with anyio.fail_after(WAIT):
        session = (
            await agent.conn.new_session(cwd=str(world.workspace), mcp_servers=servers)
        ).session_id
        await agent.prompt(session, f"{words}\nsim:bash 20\nsim:search needle")
        await agent.prompt(session, "sim:stages 2 make build")
        await agent.prompt(session, "sim:ask")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(agent.prompt, session, "sim:plan\nsim:hold")
            await agent.client.wait_for(session, "plan")
            await agent.conn.cancel(session_id=session)
        await agent.conn.load_session(session_id=session, cwd=str(world.workspace), mcp_servers=[])
    return session


async def record(root: Path, version: str, *, http: bool) -> Recording:
    """Trace the session on ``version`` (redacted, the default) with canaries planted."""
    world = make_world(root, version=version)
    canaries = _canaries()
    world.extra_env.update(
        {
            "MUSE_ACP_TRACE": "redacted",
            "MUSE_ACP_TRACE_DIR": str(root / "traces"),
            "DEPLOY_TOKEN": canaries["environment"],
            "META_API_KEY": canaries["meta"],
        }
    )
    async with running_agent(world, capabilities=FORMS) as agent:
        await play(agent, world, _servers(canaries, http), f"first words {canaries['prompt']}")
    [trace] = (root / "traces").iterdir()
    return Recording(world, trace, canaries)


async def replay(recording: Recording, launcher: SimLauncher | None = None) -> Outcome:
    """Check the recorded trace against muse-acp in this process, in a world of its own."""
    root = Path(tempfile.mkdtemp(prefix="replay-", dir=recording.trace.parent.parent))
    world = make_world(root, version=recording.world.version)
    env = world.env(dict(os.environ))
    trace = await anyio.to_thread.run_sync(read_trace, recording.trace)
    return await check_trace(
        trace, load_config(env), env, launcher or SimLauncher(), cwd=str(world.workspace)
    )


KEPT_ROOT = "/home/user/project"
"""Where a kept trace says its session's folders were."""


async def _record_fixtures(folder: Path, versions: list[str]) -> None:
    """Record the session on each of ``versions`` into ``folder`` (as ``<version>.jsonl``)."""
    for version in versions:
        with tempfile.TemporaryDirectory() as scratch:
            recording = await record(Path(scratch), version, http=False)
            # The recording machine's scratch folder says nothing: the check maps recorded
            # folders to its own, so a neutral one is kept.
            text = recording.trace.read_text(encoding="utf-8").replace(scratch, KEPT_ROOT)
            (folder / f"{version}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    # Re-record the traces the suite replays: python -m tests.agent_wire.scenario_traced
    # tests/fixtures/traces 1.1.1 1.4.4 (after a deliberate change of muse-acp's output).
    anyio.run(_record_fixtures, Path(sys.argv[1]), sys.argv[2:])
