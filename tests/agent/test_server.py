"""The agent's routing table and its initialize negotiation."""

from __future__ import annotations

from typing import Any

import pytest

from muse_acp.agent.capabilities import (
    InitializeParams,
    Negotiated,
    initialize_response,
    negotiate,
)
from muse_acp.agent.server import NOTIFICATION_HANDLERS, REQUEST_HANDLERS
from muse_acp_wire import acp


def test_every_agent_method_in_the_generated_tables_has_a_handler() -> None:
    assert set(REQUEST_HANDLERS) == set(acp.AGENT_REQUESTS)
    assert set(NOTIFICATION_HANDLERS) | {"$/cancel_request"} == set(acp.AGENT_NOTIFICATIONS)


def test_handler_tables_are_immutable() -> None:
    with pytest.raises(TypeError):
        REQUEST_HANDLERS["x"] = REQUEST_HANDLERS["initialize"]  # type: ignore[index]


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
        (None, "1.2.1", Negotiated()),
        ({"muse/output": 1}, "1.2.1", Negotiated(output=True)),
        ({"muse/output": 1}, "1.1.1", Negotiated()),
        ({"muse/output": 1}, "1.4.2", Negotiated()),
        ({"muse/output": 1}, None, Negotiated()),
        ({"muse/steering": 1}, "1.1.1", Negotiated(steering=True)),
        ({"steering": {"supported": True}}, "1.2.1", Negotiated(compatible_steering=True)),
        ({"steering": True}, "1.2.1", Negotiated(compatible_steering=True)),
        ({"steering": {"supported": False}}, "1.2.1", Negotiated()),
        ({"muse/output": 0, "muse/steering": "yes"}, "1.2.1", Negotiated()),
    ],
)
def test_extensions_are_negotiated_only_when_asked_for_and_verified(
    meta: dict[str, Any] | None, host: str | None, expected: Negotiated
) -> None:
    assert negotiate(_request(meta), host) == expected


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
    assert [m["id"] for m in bare["authMethods"]] == ["meta-api-key"]

    full = initialize_response(
        Negotiated(output=True, steering=True, compatible_steering=True, terminal_auth=True)
    ).model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert full["_meta"] == {
        "muse/output": {"version": 1, "method": "_muse/readOutput", "maxLengthBytes": 1048576},
        "muse/steering": {"version": 1, "method": "_muse/steer"},
        "steering": {"supported": True},
    }
    assert [m["id"] for m in full["authMethods"]] == ["muse-login", "meta-api-key"]


def test_form_elicitation_and_terminal_auth_are_read_from_client_capabilities() -> None:
    negotiated = negotiate(_request(elicitation={"form": {}}, auth={"terminal": True}), "1.2.1")
    assert negotiated.elicitation_form
    assert negotiated.terminal_auth
