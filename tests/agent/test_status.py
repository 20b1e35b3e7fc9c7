"""``/status`` text: every fact on its own line, unknown facts said to be unknown."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from muse_acp.agent.translation.status import ContextUse, HostFacts, StatusFacts, status_text

RUNNING = HostFacts("1.4.2", True, "1.4.2", True)


BASE = StatusFacts(
    adapter_version="0.1.0",
    host=RUNNING,
    session_id="019a0000-0000-7000-8000-000000000001",
    title="tests",
    cwd="/srv/muse-example",
    mode="Ask",
    model="muse-spark-1.3",
    effort="High",
    context=ContextUse(1272, 1_000_000),
    stored_output=True,
)


def facts(**changes: Any) -> StatusFacts:
    return replace(BASE, **changes)


def test_every_fact_has_its_own_line_in_a_fixed_order() -> None:
    assert status_text(facts()).splitlines() == [
        "- muse-acp: 0.1.0",
        "- Muse: 1.4.2 (running for this session), read with the MSP 1.4.2 bindings (its own)",
        "- Session: 019a0000-0000-7000-8000-000000000001 ('tests')",
        "- Workspace: /srv/muse-example",
        "- Mode: Ask",
        "- Model: muse-spark-1.3",
        "- Reasoning effort: High",
        "- Safety: Muse's own defaults (this Muse offers no safety settings to change)",
        "- MCP servers: none from this client",
        "- Context: 1,272 of 1,000,000 tokens (0%)",
        "- Tool outputs: readable in full through _muse/readOutput",
    ]


def test_safety_settings_and_mcp_servers_are_named_without_their_settings() -> None:
    lines = status_text(
        facts(
            safety=(("Sandbox", "Disabled"), ("Shell", "Enabled")),
            mcp_servers=(("docs", "stdio"), ("search", "http")),
        )
    ).splitlines()
    assert lines[7] == "- Safety: Sandbox: Disabled; Shell: Enabled"
    assert lines[8] == "- MCP servers: docs (stdio), search (http)"


@pytest.mark.parametrize(
    ("host", "line"),
    [
        (
            HostFacts("1.3.5", False, "1.3.0", False),
            "- Muse: 1.3.5 (starts with the next prompt), read with the MSP 1.3.0 bindings "
            "(the nearest older)",
        ),
        (
            HostFacts(None, False, None, False, problem="no Muse executable found"),
            "- Muse: not known yet (no Muse executable found)",
        ),
        (HostFacts(None, False, None, False), "- Muse: not known yet"),
    ],
)
def test_the_host_line_says_what_is_known(host: HostFacts, line: str) -> None:
    assert status_text(facts(host=host)).splitlines()[1] == line


def test_facts_not_known_yet_are_said_to_be_unknown() -> None:
    lines = status_text(facts(title=None, context=None, stored_output=False)).splitlines()
    assert lines[2] == "- Session: 019a0000-0000-7000-8000-000000000001"
    assert lines[9] == "- Context: not reported yet (Muse reports it during a turn)"
    assert lines[10].startswith("- Tool outputs: shown as the card text only")


def test_a_context_share_is_rounded_and_an_empty_window_does_not_divide() -> None:
    assert "(75%)" in status_text(facts(context=ContextUse(750, 1000)))
    assert "0 of 0 tokens (0%)" in status_text(facts(context=ContextUse(0, 0)))
