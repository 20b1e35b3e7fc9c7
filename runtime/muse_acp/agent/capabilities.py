"""The ``initialize`` exchange: what the client negotiated and what the agent advertises.

Capabilities are advertised honestly: images and embedded context but not audio, sessions that
can be loaded, listed, resumed, closed and forked, and logout. Muse extensions appear in the
response ``_meta`` only when the client asked for them in ``clientCapabilities._meta``, and
stored output only when the configured Muse host is a version verified to serve it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pydantic import field_validator

from muse_acp import __version__
from muse_acp.host.versions import supports
from muse_acp_wire import acp

PROTOCOL_VERSION: Final = 1
OUTPUT_EXTENSION: Final = "muse/output"
OUTPUT_METHOD: Final = "_muse/readOutput"
MAX_OUTPUT_READ: Final = 1048576
STEERING_EXTENSION: Final = "muse/steering"
STEERING_METHOD: Final = "_muse/steer"
COMPATIBLE_STEERING: Final = "steering"


class InitializeParams(acp.InitializeRequest):
    """``initialize`` params as clients really send them.

    Some early clients send a date string as ``protocolVersion``; it is read as version 1
    (the only version this agent speaks, and the one it answers with) instead of failing.
    """

    @field_validator("protocol_version", mode="before")
    @classmethod
    def _legacy_version(cls, value: object) -> object:
        return 1 if isinstance(value, str) else value


@dataclass(frozen=True, slots=True)
class Negotiated:
    """What this connection's client asked for and the agent agreed to."""

    output: bool = False
    """Stored-output references and reads (client opted in and the host is verified)."""
    steering: bool = False
    """The original ``_muse/steer`` extension."""
    compatible_steering: bool = False
    """The compatible ``_session/steering`` extension."""
    elicitation_form: bool = False
    """The client can answer form elicitations (Muse questions)."""
    terminal_auth: bool = False

    @property
    def any_steering(self) -> bool:
        return self.steering or self.compatible_steering


def _opted_in(meta: dict[str, Any], key: str) -> bool:
    value = meta.get(key)
    return value is True or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)


def negotiate(request: acp.InitializeRequest, host_version: str | None) -> Negotiated:
    capabilities = request.client_capabilities
    meta: dict[str, Any] = (capabilities.field_meta if capabilities else None) or {}
    compatible = meta.get(COMPATIBLE_STEERING)
    elicitation = capabilities.elicitation if capabilities else None
    auth = capabilities.auth if capabilities else None
    return Negotiated(
        output=_opted_in(meta, OUTPUT_EXTENSION) and supports("storedOutput", host_version),
        steering=_opted_in(meta, STEERING_EXTENSION),
        compatible_steering=compatible is True
        or (isinstance(compatible, dict) and compatible.get("supported") is True),
        elicitation_form=elicitation is not None and elicitation.form is not None,
        terminal_auth=bool(auth and auth.terminal),
    )


def _auth_methods(negotiated: Negotiated) -> list[Any]:
    methods: list[Any] = []
    if negotiated.terminal_auth:
        methods.append(
            acp.AuthMethodTerminal(
                type="terminal",
                id="muse-login",
                name="Muse account",
                description="Sign in to Muse in a terminal (runs `muse login`).",
                args=["login"],
            )
        )
    methods.append(
        acp.AuthMethodEnvVar(
            type="env_var",
            id="meta-api-key",
            name="META_API_KEY",
            description="Use an API key exported as META_API_KEY in the agent's environment.",
            vars=[acp.AuthEnvVar(name="META_API_KEY", label="API key", secret=True)],
        )
    )
    return methods


def initialize_response(negotiated: Negotiated) -> acp.InitializeResponse:
    meta: dict[str, Any] = {}
    if negotiated.output:
        meta[OUTPUT_EXTENSION] = {
            "version": 1,
            "method": OUTPUT_METHOD,
            "maxLengthBytes": MAX_OUTPUT_READ,
        }
    if negotiated.steering:
        meta[STEERING_EXTENSION] = {"version": 1, "method": STEERING_METHOD}
    if negotiated.compatible_steering:
        meta[COMPATIBLE_STEERING] = {"supported": True}
    response = acp.InitializeResponse(
        protocol_version=PROTOCOL_VERSION,
        agent_capabilities=acp.AgentCapabilities(
            load_session=True,
            prompt_capabilities=acp.PromptCapabilities(
                image=True, audio=False, embedded_context=True
            ),
            mcp_capabilities=acp.McpCapabilities(http=False, sse=False),
            session_capabilities=acp.SessionCapabilities(
                list=acp.SessionListCapabilities(),
                resume=acp.SessionResumeCapabilities(),
                close=acp.SessionCloseCapabilities(),
                fork=acp.SessionForkCapabilities(),
            ),
            auth=acp.AgentAuthCapabilities(logout=acp.LogoutCapabilities()),
        ),
        auth_methods=_auth_methods(negotiated),
        agent_info=acp.Implementation(name="muse-acp", title="Muse Code", version=__version__),
    )
    if meta:
        response.field_meta = meta
    return response
