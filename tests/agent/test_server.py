"""The agent's routing table and its initialize negotiation."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, get_type_hints

import pytest

from muse_acp.agent.handshake.capabilities import (
    InitializeParams,
    Negotiated,
    initialize_response,
    negotiate,
)
from muse_acp.agent.routes import NOTIFICATIONS, REQUESTS, RequestBinding
from muse_acp.host.features import features_of
from muse_acp.rpc import INVALID_PARAMS, RpcError
from muse_acp.sim.launcher import write_launcher
from muse_acp_wire import acp


def test_every_agent_method_in_the_generated_tables_has_a_handler() -> None:
    assert [b.method for b in REQUESTS] == list(dict.fromkeys(b.method for b in REQUESTS))
    assert {b.method for b in REQUESTS} == set(acp.AGENT_REQUESTS)
    assert {b.method for b in NOTIFICATIONS} | {"$/cancel_request"} == set(acp.AGENT_NOTIFICATIONS)


def test_handler_tables_are_immutable() -> None:
    assert isinstance(REQUESTS, tuple)
    assert isinstance(NOTIFICATIONS, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        REQUESTS[0].method = "x"  # type: ignore[misc]


@pytest.mark.parametrize("binding", [*REQUESTS, *NOTIFICATIONS], ids=lambda b: b.method)
def test_each_route_validates_into_the_generated_model_its_handler_takes(binding: Any) -> None:
    table = acp.AGENT_REQUESTS if isinstance(binding, RequestBinding) else acp.AGENT_NOTIFICATIONS
    generated = table[binding.method].params
    assert generated is not None
    assert issubclass(binding.params, generated)
    _context, taken, *_ = inspect.signature(binding.handler).parameters
    annotation = get_type_hints(binding.handler)[taken]
    assert issubclass(binding.params, annotation), (binding.method, annotation)


@pytest.mark.parametrize("version", [1, "2025-08-01"])
def test_initialize_accepts_a_date_string_protocol_version_as_version_1(
    version: object,
) -> None:
    params = InitializeParams.model_validate({"protocolVersion": version})
    assert params.protocol_version == 1


def _request(meta: dict[str, Any] | None = None, **capabilities: Any) -> acp.InitializeRequest:
    client: dict[str, Any] = dict(capabilities)
    if meta is not None:
        client["_meta"] = meta
    return acp.InitializeRequest.model_validate(
        {"protocolVersion": 1, "clientCapabilities": client}
    )


@pytest.mark.parametrize(
    ("meta", "host", "expected"),
    [
        # HTTP MCP servers reach 1.1.1 and 1.2.1 by settings overlay, 1.3.0 on natively.
        (None, "1.2.1", Negotiated(mcp_http=True)),
        ({"muse/output": 1}, "1.2.1", Negotiated(output=True, mcp_http=True)),
        ({"muse/output": 1}, "1.1.1", Negotiated(mcp_http=True)),
        ({"muse/output": 1}, "1.3.0", Negotiated(mcp_http=True)),
        # Only 1.4.1 and 1.4.2 delete sessions: delete is advertised there alone.
        # ... and several workspace roots are taken from 1.4.2 on (additionalDirectories).
        ({"muse/output": 1}, "1.4.2", Negotiated(mcp_http=True, delete=True, workspace_roots=True)),
        ({"muse/output": 1}, None, Negotiated()),
        ({"muse/steering": 1}, "1.1.1", Negotiated(steering=True, mcp_http=True)),
        (
            {"steering": {"supported": True}},
            "1.2.1",
            Negotiated(compatible_steering=True, mcp_http=True),
        ),
        ({"steering": True}, "1.2.1", Negotiated(compatible_steering=True, mcp_http=True)),
        ({"steering": {"supported": False}}, "1.2.1", Negotiated(mcp_http=True)),
        ({"unrelated": "anything", "x/y": [1]}, "1.2.1", Negotiated(mcp_http=True)),
        # Zed's terminal convention: a plain true, nothing else.
        ({"terminal_output": True}, "1.1.1", Negotiated(mcp_http=True, terminal_output=True)),
        ({"terminal_output": "yes"}, "1.1.1", Negotiated(mcp_http=True)),
    ],
)
def test_extensions_are_negotiated_only_when_asked_for_and_verified(
    meta: dict[str, Any] | None, host: str | None, expected: Negotiated
) -> None:
    assert negotiate(_request(meta), features_of(host, trust_newer=False)) == expected


@pytest.mark.parametrize(
    "meta",
    [
        {"muse/output": 0},
        {"muse/output": 5000},
        {"muse/output": -1},
        {"muse/output": 1.5},
        {"muse/output": "1"},
        {"muse/steering": "yes"},
        {"muse/steering": 1025},
        {"steering": "yes"},
        {"steering": {"supported": "maybe"}},
        {"muse/output": 0, "muse/steering": "yes"},
    ],
)
def test_an_opt_in_the_extension_schema_refuses_is_refused(meta: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as raised:
        negotiate(_request(meta), features_of("1.2.1", trust_newer=False))
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message.startswith("clientCapabilities._meta")
    assert "pydantic" not in raised.value.message
    assert "input_value" not in raised.value.message


def test_the_response_advertises_exactly_what_was_negotiated() -> None:
    bare = initialize_response(Negotiated()).model_dump(
        mode="json", by_alias=True, exclude_unset=True
    )
    assert "_meta" not in bare
    assert bare["protocolVersion"] == 1
    capabilities = bare["agentCapabilities"]
    assert capabilities["promptCapabilities"] == {
        "image": True,
        "audio": False,
        "embeddedContext": True,
    }
    assert set(capabilities["sessionCapabilities"]) == {"list", "resume", "close", "fork"}
    # Only ACP's own method types: an agent-handled check (no "type") for every client.
    assert bare["authMethods"] == [
        {
            "id": "muse-account",
            "name": "Muse sign-in",
            "description": "Checks that Muse has a credential: an account signed in with "
            "`muse login`, or META_API_KEY exported to muse-acp.",
        }
    ]

    full = initialize_response(
        Negotiated(
            output=True, steering=True, compatible_steering=True, terminal_auth=True, delete=True
        )
    ).model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert "delete" in full["agentCapabilities"]["sessionCapabilities"]
    assert full["_meta"] == {
        "muse/output": {"version": 1, "method": "_muse/readOutput", "maxLengthBytes": 1048576},
        "muse/steering": {"version": 1, "method": "_muse/steer"},
        "steering": {"supported": True},
    }
    assert [m["id"] for m in full["authMethods"]] == ["muse-login", "muse-account"]
    assert [m.get("type") for m in full["authMethods"]] == ["terminal", None]


def test_form_elicitation_and_terminal_auth_are_read_from_client_capabilities() -> None:
    negotiated = negotiate(
        _request(elicitation={"form": {}}, auth={"terminal": True}),
        features_of("1.2.1", trust_newer=False),
    )
    assert negotiated.elicitation_form
    assert negotiated.terminal_auth


def test_the_registry_convention_for_terminal_sign_in_gets_a_whole_login_command(
    tmp_path: Path,
) -> None:
    negotiated = negotiate(
        _request(meta={"terminal-auth": True}), features_of("1.2.1", trust_newer=False)
    )
    response = initialize_response(negotiated).model_dump(mode="json", by_alias=True)
    [terminal] = [m for m in response["authMethods"] if m.get("type") == "terminal"]
    launch = terminal["_meta"]["terminal-auth"]
    # The command signs in however the client launched the agent: run it against muse-sim.
    muse = write_launcher(tmp_path / "muse")
    home = tmp_path / "sim-home"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MUSE_")},
        "MUSE_ACP_MUSE_BIN": str(muse),
        "MUSE_SIM_HOME": str(home),
    }
    done = subprocess.run(
        [launch["command"], *launch["args"]],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (home / "credentials.json").exists()


def test_answering_initialize_loads_neither_the_sessions_machinery_nor_most_models() -> None:
    # An editor waits for initialize when its user opens the agent panel: the serving module
    # holds only what that answer needs, and the rest loads after it (see agent.server). Of
    # the ACP models, only acp_handshake's are created for the answer; the editor's MCP
    # servers are checked, and traces recorded, only after it.
    probe = (
        "import sys, muse_acp.agent.server; "
        "from muse_acp.agent.handshake.startup import Startup; "
        "from muse_acp.config import load_config; "
        "Startup(load_config({}), {}); "
        "print(sorted(m for m in sys.modules if m.startswith(('muse_acp_wire.msp_1', "
        "'muse_acp.agent.context', 'muse_acp.agent.routes', 'muse_acp.agent.sessions.session', "
        "'muse_acp.agent.mcp', 'muse_acp.traces')) or m == 'muse_acp_wire.acp'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_loading_the_agent_does_not_scan_installed_distributions() -> None:
    # pydantic's own plugin loader imports importlib.metadata (and email, zipfile, csv with
    # it) to scan entry points: a start that skips plugins skips that load too, so the
    # initialize answer does not wait for it.
    probe = (
        "import sys; from muse_acp.loading import begin_loading; begin_loading(); "
        "import muse_acp.agent.server, pydantic\n"
        "class M(pydantic.BaseModel):\n    a: int\n"
        "M.model_validate({'a': 1}); print('importlib.metadata' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "False"
