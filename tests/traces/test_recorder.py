"""The tracer's promises: the setting, owner-only files, a size cap and a queue bound that say
so, secrets and text kept out in redacted mode and secrets alone in full mode."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from muse_acp.config import ConfigError, load_config
from muse_acp.redact import REDACTED
from muse_acp.traces import Redactor, Tracer, is_placeholder

pytestmark = pytest.mark.anyio

SECRET = "canary-4b1d9e3f7a"


def _lines(folder: Path) -> list[dict[str, Any]]:
    [trace] = folder.iterdir()
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]


def _size(folder: Path) -> int:
    [trace] = folder.iterdir()
    return trace.stat().st_size


def _frame(text: str) -> bytes:
    params = {"sessionId": "s1", "prompt": [{"type": "text", "text": text}]}
    message = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": params}
    return json.dumps(message).encode()


async def _traced(tracer: Tracer, frames: list[bytes]) -> None:
    async with anyio.create_task_group() as tasks:
        for frame in frames:
            tracer.acp("in", frame)
        tasks.start_soon(tracer.run)
        await anyio.wait_all_tasks_blocked()
        tasks.cancel_scope.cancel()


def test_the_setting_comes_from_the_flag_or_the_environment(tmp_path: Path) -> None:
    assert load_config({}).trace == "off"
    assert load_config({"MUSE_ACP_TRACE": "1"}).trace == "redacted"
    assert load_config({"MUSE_ACP_TRACE": "off"}, trace="full").trace == "full"
    config = load_config({"MUSE_ACP_DATA_DIR": str(tmp_path)})
    assert config.traces == tmp_path / "traces"
    with pytest.raises(ConfigError, match="MUSE_ACP_TRACE must be off, redacted"):
        load_config({"MUSE_ACP_TRACE": "verbose"})


async def test_a_trace_is_owner_only_and_keeps_no_secret_or_text(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    tracer = Tracer(folder, "redacted", {"DEPLOY_TOKEN": SECRET}, home="/home/ada")
    env = [{"name": "API", "value": SECRET}]
    server = {"name": "files", "command": "/home/ada/bin/mcp", "env": env}
    params = {"cwd": "/home/ada/project", "mcpServers": [server]}
    new = {"jsonrpc": "2.0", "id": 0, "method": "session/new", "params": params}
    await _traced(tracer, [json.dumps(new).encode(), _frame(f"deploy with {SECRET}")])
    [trace] = folder.iterdir()
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert SECRET not in trace.read_text(encoding="utf-8")
    header, first, second, end = _lines(folder)
    assert header["mode"] == "redacted"
    [written] = first["frame"]["params"]["mcpServers"]
    assert written["env"] == [{"name": "API", "value": REDACTED}]
    assert is_placeholder(written["command"])  # a command line may hold anything
    assert first["frame"]["params"]["cwd"] == "~/project"
    text = second["frame"]["params"]["prompt"][0]["text"]
    assert is_placeholder(text)
    assert text.startswith("[text 29 bytes #")
    assert second["frame"]["params"]["sessionId"] == "s1"
    assert end == {"end": True, "entries": 2, "capped": 0, "lost": 0}


def test_full_mode_keeps_text_but_not_secrets() -> None:
    redactor = Redactor("full", {"DEPLOY_TOKEN": SECRET}, home="/home/ada")
    redactor.refresh()
    frame = redactor.frame(_frame(f"read /home/ada/notes with {SECRET}"))
    assert isinstance(frame, dict)
    assert json.dumps(frame).count("read ~/notes with [redacted]") == 1


async def test_a_trace_stops_at_its_size_limit_and_says_so(tmp_path: Path) -> None:
    tracer = Tracer(tmp_path, "redacted", {}, max_bytes=2000)
    await _traced(tracer, [_frame(f"prompt {i}") for i in range(100)])
    lines = _lines(tmp_path)
    assert any(line.get("capped") == 2000 for line in lines)
    assert lines[-1]["end"] is True
    assert lines[-1]["capped"] + lines[-1]["lost"] > 0
    assert _size(tmp_path) < 2000 + 200  # the cap, and the notes saying so


async def test_frames_beyond_the_queue_are_dropped_and_counted_never_waited_for(
    tmp_path: Path,
) -> None:
    tracer = Tracer(tmp_path, "redacted", {}, max_queue=10)
    await _traced(tracer, [_frame(f"prompt {i}") for i in range(25)])
    lines = _lines(tmp_path)
    assert lines[1]["dropped"] == 15
    assert lines[-1]["entries"] == 11  # the note of the loss, then the ten frames kept
    assert lines[-1]["lost"] == 15
