"""Which MCP transports a host takes per session is read off the bundle it is read with, whether
the bundle was written by hand or ingested from Muse's declarations (which name the arms
differently)."""

from __future__ import annotations

import pytest

from muse_acp.host.session_mcp import first_version_with, session_mcp_transports

BOTH = frozenset({"stdio", "streamableHttp"})


@pytest.mark.parametrize(
    ("version", "transports"),
    [
        ("1.1.1", frozenset()),
        ("1.2.1", frozenset({"stdio"})),
        # Muse's own 1.3.0 declarations already have the streamable HTTP arm.
        ("1.3.0", BOTH),
        ("1.4.2", BOTH),
        ("1.4.4", BOTH),
        ("1.4.13", BOTH),
        ("1.9.0", BOTH),
        (None, frozenset()),
    ],
)
def test_each_bundle_says_which_transports_a_session_takes(
    version: str | None, transports: frozenset[str]
) -> None:
    assert session_mcp_transports(version) == transports


def test_the_first_muse_taking_each_transport_is_named() -> None:
    assert first_version_with("stdio") == "1.2.1"
    assert first_version_with("streamableHttp") == "1.3.0"
