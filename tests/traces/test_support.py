"""``muse-acp support``: one file for a bug report, that says what it holds and holds no secret
(canaries planted in the environment, a trace's frames, its log lines and a full trace)."""

from __future__ import annotations

import json
import logging
import stat
import zipfile
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from muse_acp.cli_commands import app
from muse_acp.sim.launcher import write_launcher
from muse_acp.traces import Tracer

CANARIES = {
    "environment": "canaryenv5d1e0c2b9a7f",
    "meta": "canarymeta8a3b6c1d0e2f",
    "prompt": "canaryprompt7f2e4d9c1b",
    "mcp": "canarymcp0b4c8e2f6a1d",
    "header": "canaryheader3e9f1a7c5b",
}


def _frames() -> list[bytes]:
    server = {
        "name": "files",
        "command": "mcp",
        "env": [{"name": "SERVICE", "value": CANARIES["mcp"]}],
        "headers": [{"name": "Authorization", "value": f"Bearer {CANARIES['header']}"}],
    }
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"mcpServers": [server]}}
    prompt = [{"type": "text", "text": f"ship it {CANARIES['prompt']}"}]
    ask = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"prompt": prompt}}
    return [json.dumps(new).encode(), json.dumps(ask).encode()]


async def _trace(folder: Path, mode: str, environ: dict[str, str]) -> None:
    tracer = Tracer(folder, "redacted" if mode == "redacted" else "full", environ)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(tracer.run)
        await anyio.wait_all_tasks_blocked()
        for frame in _frames():
            tracer.acp("in", frame)
        logging.getLogger("muse_acp.agent").warning("deploying with %s", CANARIES["environment"])
        await anyio.wait_all_tasks_blocked()
        tasks.cancel_scope.cancel()


def test_a_support_bundle_says_what_it_holds_and_holds_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="muse_acp")  # whatever an earlier test configured
    traces = tmp_path / "traces"
    environ = {"DEPLOY_TOKEN": CANARIES["environment"], "META_API_KEY": CANARIES["meta"]}
    for name, value in {
        **environ,
        "MUSE_ACP_MUSE_BIN": str(write_launcher(tmp_path / "muse", version="1.4.4")),
        "MUSE_ACP_TRACE_DIR": str(traces),
        "MUSE_ACP_DATA_DIR": str(tmp_path / "data"),
        "MUSE_SIM_HOME": str(tmp_path / "sim-home"),
        "MUSE_ACP_LOG": "warning",
    }.items():
        monkeypatch.setenv(name, value)
    anyio.run(_trace, traces, "full", environ)
    anyio.run(_trace, traces, "redacted", environ)
    [full, redacted] = sorted(traces.iterdir(), key=lambda p: p.stat().st_mtime)
    assert CANARIES["prompt"] in full.read_text(), "a full trace keeps the user's text"
    out = tmp_path / "bundle.zip"

    result = CliRunner().invoke(app, ["support", "--out", str(out)])

    assert result.exit_code == 0, result.output
    said = result.output
    for shown in ("doctor.json", "settings.json", f"traces/{redacted.name}", "log.txt"):
        assert shown in said
    assert f"(not included) {full.name}: not a redacted trace" in said
    assert said.index("with") < said.index("written: attach")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    with zipfile.ZipFile(out) as bundle:
        files = {name: bundle.read(name).decode() for name in bundle.namelist()}
    assert set(files) == {"doctor.json", "settings.json", "log.txt", f"traces/{redacted.name}"}
    for name, text in files.items():
        for kind, canary in CANARIES.items():
            assert canary not in text, f"the {kind} secret is in {name}"
    doctor = json.loads(files["doctor.json"])
    assert doctor["ready"] is True
    settings = json.loads(files["settings.json"])
    assert settings["META_API_KEY"] == "set"
    assert settings["variables"]["MUSE_ACP_TRACE_DIR"] == str(traces)
    assert "WARNING muse_acp.agent: deploying with [redacted]" in files["log.txt"]
