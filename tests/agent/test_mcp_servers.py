"""The editor's MCP servers: what is accepted, what is refused and how, and what reaches Muse."""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.agent.mcp.mcp_config import session_config
from muse_acp.agent.mcp.mcp_servers import (
    check_host,
    check_servers,
    delivery,
    secrets_of,
    startup_failure,
)
from muse_acp.host.features import features_of
from muse_acp.host.session_mcp import transports
from muse_acp.redact import REDACTED, SecretRegistry, redact
from muse_acp.rpc import INVALID_PARAMS, RpcError
from muse_acp_wire import acp

SECRET = "s3cr3t-value-never-shown"


def _server(entry: dict[str, Any]) -> acp.McpServer:
    request = acp.NewSessionRequest.model_validate({"cwd": "/w", "mcpServers": [entry]})
    return request.mcp_servers[0]


def _stdio(name: str = "files", command: str = "/usr/bin/mcp", **extra: Any) -> dict[str, Any]:
    return {"name": name, "command": command, "args": [], "env": [], **extra}


def _http(name: str = "web", url: str = "https://mcp.example/x", **extra: Any) -> dict[str, Any]:
    return {"type": "http", "name": name, "url": url, "headers": [], **extra}


ACCEPTED = [
    _stdio(),
    _stdio(command="npx", args=["-y", "server"]),
    _stdio(env=[{"name": "TOKEN", "value": SECRET}]),
    _http(),
    _http(url="http://localhost:8080/mcp"),
    _http(headers=[{"name": "Authorization", "value": f"Bearer {SECRET}"}]),
]


@pytest.mark.parametrize("entry", ACCEPTED)
def test_accepted(entry: dict[str, Any]) -> None:
    (spec,) = check_servers([_server(entry)])
    assert spec.name == entry["name"]
    assert SECRET not in repr(spec)


REFUSED = [
    (_stdio(name=""), "mcpServers[0] has no name"),
    (_stdio(name="  "), "mcpServers[0] has no name"),
    (_stdio(command="./bin/mcp"), "relative command path"),
    (_stdio(command="bin/mcp"), "relative command path"),
    (_stdio(command=""), "no usable command"),
    (_stdio(env=[{"name": "", "value": SECRET}]), "invalid name"),
    (_stdio(env=[{"name": "A=B", "value": SECRET}]), "invalid name"),
    (
        _stdio(env=[{"name": "T", "value": SECRET}, {"name": "T", "value": SECRET}]),
        "sets the environment variable 'T' twice",
    ),
    (_http(url="ftp://host/x"), "http:// or https://"),
    (_http(url=f"https:///{SECRET}"), "http:// or https://"),
    (_http(url="not a url"), "http:// or https://"),
    (_http(headers=[{"name": "Bad Header", "value": SECRET}]), "header with an invalid name"),
    (
        _http(headers=[{"name": "X-A", "value": SECRET}, {"name": "x-a", "value": SECRET}]),
        "sets the header 'x-a' twice",
    ),
    (
        {"type": "sse", "name": "events", "url": "https://e.example", "headers": []},
        "mcpServers[0] ('events') is an SSE server",
    ),
]


@pytest.mark.parametrize(("entry", "says"), REFUSED)
def test_refused(entry: dict[str, Any], says: str) -> None:
    with pytest.raises(RpcError) as refused:
        check_servers([_server(entry)])
    assert refused.value.code == INVALID_PARAMS
    assert says in refused.value.message
    assert SECRET not in refused.value.message


def test_names_must_be_unique() -> None:
    with pytest.raises(RpcError, match=r"mcpServers\[1\] \('a'\) repeats the name"):
        check_servers([_server(_stdio(name="a")), _server(_http(name="a"))])


@pytest.mark.parametrize(
    ("version", "entry", "needed"),
    [
        (None, _stdio(), "Muse Code 1.1.1 or newer"),
        (None, _http(), "Muse Code 1.1.1 or newer"),
        # A Muse between 1.2.1 and 1.3.0, read with 1.2.1's bundle: stdio only.
        ("1.2.2", _http(), "Muse Code 1.3.0 or newer"),
    ],
)
def test_host_refusal_names_the_version(
    version: str | None, entry: dict[str, Any], needed: str
) -> None:
    servers = check_servers([_server(entry)])
    with pytest.raises(RpcError) as refused:
        check_host(servers, features_of(version, trust_newer=False))
    assert refused.value.code == INVALID_PARAMS
    assert needed in refused.value.message


@pytest.mark.parametrize(
    ("version", "entries", "route"),
    [
        ("1.1.1", [_stdio()], "overlay"),
        ("1.1.1", [_http()], "overlay"),
        ("1.2.1", [_stdio()], "native"),
        # One way per session: an http server sends them all through the overlay.
        ("1.2.1", [_stdio(), _http()], "overlay"),
        ("1.3.0", [_stdio()], "native"),
        # Muse's own 1.3.0 declarations already take streamable HTTP servers.
        ("1.3.0", [_stdio(), _http()], "native"),
        ("1.4.2", [_stdio(), _http()], "native"),
    ],
)
def test_host_takes(version: str, entries: list[dict[str, Any]], route: str) -> None:
    servers = check_servers([_server(entry) for entry in entries])
    check_host(servers, features_of(version, trust_newer=False))
    assert delivery(servers, features_of(version, trust_newer=False)) == route


def test_http_before_1_3_0_needs_trust_in_newer_hosts() -> None:
    servers = check_servers([_server(_stdio()), _server(_http())])
    with pytest.raises(RpcError) as refused:
        check_host(servers, features_of("1.2.2", trust_newer=False))
    assert "MUSE_ACP_TRUST_NEWER_HOST=1" in refused.value.message
    assert delivery(servers, features_of("1.2.2", trust_newer=True)) == "overlay"


@pytest.mark.parametrize(
    ("version", "trust_newer", "expected"),
    [
        ("1.1.1", False, {"stdio", "streamableHttp"}),
        ("1.2.1", False, {"stdio", "streamableHttp"}),
        ("1.2.2", False, {"stdio"}),
        ("1.2.2", True, {"stdio", "streamableHttp"}),
        ("1.3.0", False, {"stdio", "streamableHttp"}),
        ("1.4.2", False, {"stdio", "streamableHttp"}),
        (None, True, set()),
    ],
)
def test_transports_that_reach_each_host(
    version: str | None, trust_newer: bool, expected: set[str]
) -> None:
    assert transports(features_of(version, trust_newer=trust_newer)) == expected


def test_session_config_shape() -> None:
    servers = check_servers(
        [
            _server(_stdio(args=["--x"], env=[{"name": "TOKEN", "value": "v"}])),
            _server(_http(headers=[{"name": "Authorization", "value": "h"}])),
        ]
    )
    config = session_config(servers)
    assert config is not None
    dumped = config.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert dumped == {
        "mcpServers": {
            "files": {
                "transport": "stdio",
                "command": "/usr/bin/mcp",
                "args": ["--x"],
                "env": {"TOKEN": "v"},
                "mode": "required",
            },
            "web": {
                "transport": "streamableHttp",
                "url": "https://mcp.example/x",
                "headers": {"Authorization": "h"},
                "mode": "required",
            },
        }
    }
    assert session_config(()) is None


def test_startup_failure_names_the_server() -> None:
    servers = check_servers([_server(_stdio(name="sim-broken"))])
    host = RpcError(-32603, 'Required MCP server "sim-broken" failed during startup: unreachable')
    failure = startup_failure(host, servers)
    assert failure is not None
    assert "'sim-broken'" in failure.message
    assert startup_failure(RpcError(-32603, "something else"), servers) is None


def test_accepted_servers_give_their_secrets_to_the_redactor() -> None:
    stdio = _stdio(
        args=["--token=arg-secret-1"], env=[{"name": "PLAIN", "value": "sk-env-secret-2f9a8c"}]
    )
    http = _http(
        url="https://u:url-secret-3@mcp.example/",
        headers=[{"name": "Authorization", "value": "Basic hdr-secret-4"}],
    )
    servers = tuple(check_servers([_server(entry)])[0] for entry in (stdio, http))
    assert set(secrets_of(servers[0])) >= {"arg-secret-1", "sk-env-secret-2f9a8c"}
    text = "arg-secret-1 sk-env-secret-2f9a8c url-secret-3 hdr-secret-4"
    assert redact(text, environ={}) == " ".join([REDACTED] * 4)


def test_ordinary_settings_stay_readable_while_secret_ones_are_redacted() -> None:
    registry = SecretRegistry()
    stdio = _stdio(
        args=["--no-auth", "--transport", "stdio", "--api-key", "-v"],
        env=[
            {"name": "HOME", "value": "/home/alice"},
            {"name": "NODE_ENV", "value": "production"},
            {"name": "SERVICE_URL", "value": "https://api.example/v1"},
            {"name": "GITHUB_TOKEN", "value": "gh-secret-01"},
            {"name": "PLAIN", "value": "ghp_4f9Qx2LmT8rV1zK7"},
        ],
    )
    http = _http(
        headers=[
            {"name": "Accept", "value": "application/json, text/event-stream"},
            {"name": "X-Session-Id", "value": "sess-0042"},
            {"name": "X-Tenant", "value": "Bearer tn7Vq2Xw9Lp4Rz8Kb3"},
        ],
    )
    for entry in (stdio, http):
        registry.remember(secrets_of(check_servers([_server(entry)])[0]))
    ordinary = (
        "Muse could not open /home/alice/project/app.py in production mode with --transport "
        "stdio -v via https://api.example/v1; the server answered text/event-stream, not "
        "application/json"
    )
    assert redact(ordinary, environ={}, registry=registry) == ordinary
    secret = "gh-secret-01 ghp_4f9Qx2LmT8rV1zK7 sess-0042 tn7Vq2Xw9Lp4Rz8Kb3"
    assert redact(secret, environ={}, registry=registry) == " ".join([REDACTED] * 4)
