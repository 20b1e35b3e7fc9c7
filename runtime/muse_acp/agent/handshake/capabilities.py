"""The ``initialize`` exchange: what the client negotiated and what the agent advertises.

Contract: capabilities are advertised honestly: images and embedded context but not audio,
HTTP MCP servers only when they reach the installed Muse (never SSE), sessions that can be
loaded, listed, resumed, closed, forked and deleted (delete only on a Muse with its own
``session/delete``, see ``deletion``), and logout. Auth methods are of ACP's types only:
``muse-login`` (terminal) for a client that runs terminal sign-in, then ``muse-account``
(agent-handled) for every client. Muse extensions (and JetBrains AIR's file-change report, a
malformed ask for it being no ask) appear in ``_meta`` only when the client asked for them and,
for stored output and task control, only on a host offering them (``host.features``); so are
additional directories (a Muse taking several ``workspaceRoots``). Both ``_meta`` blocks go
through their generated models (-32602 for an opt-in the extension schema refuses).
``_meta["muse/backend"]`` says which backend serves the connection and why; on the legacy exec
backend sessions can only be created and closed, and no extension is negotiated (``not_on_exec``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any, Final

from annotated_types import Le
from pydantic import BaseModel, ValidationError, field_validator

from muse_acp import __version__
from muse_acp.host.features import HostFeatures
from muse_acp.host.session_mcp import transports as mcp_transports
from muse_acp.rpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError, describe_validation_error
from muse_acp_wire import acp_handshake as acp

__all__ = [
    "ACCOUNT_CHECK_METHOD",
    "FILE_CHANGE_REPORT",
    "MAX_OUTPUT_READ",
    "PROTOCOL_VERSION",
    "InitializeParams",
    "Negotiated",
    "advertised_auth_methods",
    "initialize_response",
    "negotiate",
    "not_on_exec",
    "schema_maximum",
    "within",
]

PROTOCOL_VERSION: Final = 1
FILE_CHANGE_REPORT: Final = "agentFileChangeReport"
"""The JetBrains AIR capability of ``file_change_report``, asked for and advertised here."""
ACCOUNT_CHECK_METHOD: Final = "muse-account"
"""The agent-handled auth method every client is offered: ``authenticate`` checks Muse's
credential."""


def schema_maximum(model: type[BaseModel], member: str) -> int:
    """The inclusive upper bound the extension schema sets on ``model.member``."""
    bounds = [m.le for m in model.model_fields[member].metadata if isinstance(m, Le)]
    if len(bounds) != 1 or not isinstance(bounds[0], int):
        raise TypeError(f"{model.__name__}.{member} has no single integer maximum")
    return bounds[0]


MAX_OUTPUT_READ: Final = schema_maximum(acp.MuseOutputAdvertisement, "max_length_bytes")
"""The largest stored-output read, as the extension schema bounds it."""


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
    mcp_http: bool = False
    """HTTP MCP servers reach Muse: the installed host takes them per session, or reads them
    from a settings overlay (see ``session_mcp.transports``)."""
    compatible_steering: bool = False
    """The compatible ``_session/steering`` extension."""
    elicitation_form: bool = False
    """The client can answer form elicitations (Muse questions)."""
    terminal_auth: bool = False
    file_change_report: bool = False
    tasks: bool = False
    """``_muse/task`` (the client opted in and the installed Muse can stop background work)."""
    tasks_asked: bool = False
    """The client opted in to ``_muse/task``, whether or not the installed Muse can do it."""
    """JetBrains AIR ``agentFileChangeReport`` (see ``file_change_report``)."""
    exec_backend: bool = False
    """The legacy exec backend serves the connection: no MSP feature is offered."""
    delete: bool = False
    """The installed Muse has its own ``session/delete`` (see ``deletion``): only then is
    delete advertised."""
    workspace_roots: bool = False
    """The installed Muse takes several workspace roots: ``additionalDirectories`` are
    advertised (``sessions.workspace_roots``)."""
    terminal_output: bool = False
    """The client shows a shell card's output as a live terminal (``_meta.terminal_output``
    true in its capabilities, as Zed declares it; see ``cards.terminal_cards``)."""
    notices: bool = False
    """The client shows ACP notices (``session.notices``): warnings go out as ``notice``
    updates rather than chat text (``errors.notices``)."""
    compaction: bool = False
    """The client shows compactions (``session.compaction``): ``compaction_update`` and
    ``compaction_summary_chunk`` rather than ``/compact``'s chat reply (``sessions.outlet``)."""
    plans: bool = False
    """The client takes plan operations (``plan``): ``plan_update`` and ``plan_removed`` by
    ``planId`` rather than the legacy ``plan`` update (``translation.plans``)."""
    subagents: bool = False
    """The client takes child sessions (``subagents``): each subagent and workflow child is
    announced with ``subagent_update`` and has a transcript of its own (``child_transcripts``)."""

    @property
    def any_steering(self) -> bool:
        return self.steering or self.compatible_steering


def _client_meta(capabilities: acp.ClientCapabilities | None) -> acp.MuseClientCapabilitiesMeta:
    meta: dict[str, Any] = (capabilities.field_meta if capabilities else None) or {}
    try:
        # Strict: JSON types as the schema states them, so "1" or true is no version number.
        return acp.MuseClientCapabilitiesMeta.model_validate(
            meta, strict=True, by_alias=True, by_name=False
        )
    except ValidationError as error:
        detail = describe_validation_error(error, meta)
        raise RpcError(
            INVALID_PARAMS,
            f"clientCapabilities._meta: {detail}; a Muse extension opt-in is the highest "
            "extension version the client understands, an integer from 1 to 1024 (steering: "
            'true or {"supported": true})',
        ) from None


def negotiate(
    request: acp.InitializeRequest,
    features: HostFeatures,
    backend: acp.MuseBackendReport | None = None,
) -> Negotiated:
    """What the client asked for and the agent agrees to, on ``backend`` (MSP when unknown),
    with the installed Muse offering ``features`` (see ``host.features``).

    Raises:
        RpcError: INVALID_PARAMS for a Muse opt-in the extension schema refuses.
    """
    capabilities = request.client_capabilities
    meta = _client_meta(capabilities)
    compatible = meta.steering
    elicitation = capabilities.elicitation if capabilities else None
    auth = capabilities.auth if capabilities else None
    session = capabilities.session if capabilities else None
    on_msp = backend is None or backend.backend == "msp"
    return Negotiated(
        output=on_msp and meta.muse_output is not None and features.has("storedOutput"),
        steering=on_msp and meta.muse_steering is not None,
        compatible_steering=on_msp
        and (
            compatible is True
            or (isinstance(compatible, acp.SteeringSupport) and compatible.supported)
        ),
        elicitation_form=elicitation is not None and elicitation.form is not None,
        terminal_auth=bool(auth and auth.terminal) or bool(meta.terminal_auth),
        file_change_report=on_msp and _asks_file_changes(capabilities),
        tasks_asked=on_msp and meta.muse_async_tasks is not None,
        tasks=on_msp and meta.muse_async_tasks is not None and features.has("taskControl"),
        exec_backend=not on_msp,
        delete=on_msp and features.has("sessionDelete"),
        mcp_http=on_msp and "streamableHttp" in mcp_transports(features),
        notices=session is not None and session.notices is not None,
        compaction=session is not None and session.compaction is not None,
        plans=capabilities is not None and capabilities.plan is not None,
        terminal_output=_declares_terminal(capabilities),
        workspace_roots=on_msp and features.has("workspaceRoots"),
        subagents=on_msp and capabilities is not None and capabilities.subagents is not None,
    )


def _asks_file_changes(capabilities: acp.ClientCapabilities | None) -> bool:
    """Whether the client's capabilities ask for JetBrains AIR's file-change report (a
    malformed ask is no ask, never an error)."""
    meta = (capabilities.field_meta if capabilities else None) or {}
    try:
        parsed = acp.JetbrainsClientCapabilitiesMeta.model_validate(
            meta, strict=True, by_alias=True, by_name=False
        )
    except ValidationError:
        return False
    air = parsed.jetbrains.air if parsed.jetbrains else None
    return air is not None and FILE_CHANGE_REPORT in air.capabilities


def _declares_terminal(capabilities: acp.ClientCapabilities | None) -> bool:
    """Whether the client declared the terminal convention (``_meta.terminal_output: true``, a
    key of Zed's that no Muse extension schema names)."""
    meta = (capabilities.field_meta if capabilities else None) or {}
    return meta.get("terminal_output") is True


_OFFERS: Final = (
    "output",
    "steering",
    "compatible_steering",
    "tasks",
    "tasks_asked",
    "file_change_report",
    "mcp_http",
    "delete",
    "workspace_roots",
    "subagents",
)
"""What the agent offers a client only where the executable can do it."""


def within(advertised: Negotiated, actual: Negotiated) -> Negotiated:
    """The negotiation once the executable is probed: ``actual`` (the same request against it),
    less every offer ``advertised`` did not make; a client is never offered more than it was
    told at ``initialize``."""
    kept = {name: getattr(advertised, name) and getattr(actual, name) for name in _OFFERS}
    return replace(actual, **kept)


def not_on_exec(method: str) -> RpcError:
    """The answer to a session method the exec backend does not advertise."""
    return RpcError(
        METHOD_NOT_FOUND,
        f"{method} is not available on the legacy exec backend: `muse exec` keeps no session "
        "muse-acp can read back, so only new sessions work; use the MSP backend (Muse Code "
        "1.1.1 or newer) to list, load, resume, fork or delete sessions",
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
                # The whole command, for clients that launched the agent through a wrapper
                # (uvx, pipx): the agent's own arguments with "login" would not sign in.
                field_meta=acp.MuseTerminalAuthMeta(
                    terminal_auth=acp.MuseTerminalLaunch(
                        command=sys.executable,
                        args=["-m", "muse_acp", "login"],
                        label="Muse login",
                    )
                ).model_dump(mode="json", by_alias=True),
            )
        )
    # Agent-handled (no "type", as ACP's stable schema spells it): ``authenticate`` asks Muse
    # whether it has a credential. Every client gets it; an exported META_API_KEY is one such
    # credential, so no env_var method (no ACP schema has that type) is offered for it.
    methods.append(
        acp.AuthMethodAgent(
            id=ACCOUNT_CHECK_METHOD,
            name="Muse sign-in",
            description="Checks that Muse has a credential: an account signed in with "
            "`muse login`, or META_API_KEY exported to muse-acp.",
        )
    )
    return methods


def advertised_auth_methods(negotiated: Negotiated) -> list[dict[str, Any]]:
    """The ``authMethods`` of the ``initialize`` result for ``negotiated``, as JSON (for an
    ``auth_required`` error to carry them too)."""
    return [
        method.model_dump(mode="json", by_alias=True, exclude_none=True)
        for method in _auth_methods(negotiated)
    ]


def initialize_response(
    negotiated: Negotiated, backend: acp.MuseBackendReport | None = None
) -> acp.InitializeResponse:
    """The ``initialize`` result for ``negotiated``; ``backend`` is reported when known."""
    meta = acp.MuseAgentMeta()
    if negotiated.output:
        meta.muse_output = acp.MuseOutputAdvertisement(
            version=1, method="_muse/readOutput", max_length_bytes=MAX_OUTPUT_READ
        )
    if negotiated.steering:
        meta.muse_steering = acp.MuseSteeringAdvertisement(version=1, method="_muse/steer")
    if negotiated.compatible_steering:
        meta.steering = acp.SteeringSupport(supported=True)
    if negotiated.tasks:
        meta.muse_async_tasks = acp.MuseTaskAdvertisement(
            version=1, method="_muse/task", actions=["cancel"]
        )
    if negotiated.file_change_report:
        meta.jetbrains = acp.JetbrainsAgentMeta(
            air=acp.JetbrainsAirAdvertisement(version=1, capabilities=[FILE_CHANGE_REPORT])
        )
    if backend is not None:
        meta.muse_backend = backend
    sessions = acp.SessionCapabilities(close=acp.SessionCloseCapabilities())
    if not negotiated.exec_backend:
        sessions = acp.SessionCapabilities(
            list=acp.SessionListCapabilities(),
            resume=acp.SessionResumeCapabilities(),
            close=acp.SessionCloseCapabilities(),
            fork=acp.SessionForkCapabilities(),
        )
        if negotiated.delete:
            sessions.delete = acp.SessionDeleteCapabilities()
        if negotiated.workspace_roots:
            sessions.additional_directories = acp.SessionAdditionalDirectoriesCapabilities()
    response = acp.InitializeResponse(
        protocol_version=PROTOCOL_VERSION,
        agent_capabilities=acp.AgentCapabilities(
            load_session=not negotiated.exec_backend,
            prompt_capabilities=acp.PromptCapabilities(
                image=True, audio=False, embedded_context=True
            ),
            mcp_capabilities=acp.McpCapabilities(http=negotiated.mcp_http, sse=False),
            session_capabilities=sessions,
            auth=acp.AgentAuthCapabilities(logout=acp.LogoutCapabilities()),
        ),
        auth_methods=_auth_methods(negotiated),
        agent_info=acp.Implementation(name="muse-acp", title="Muse Code", version=__version__),
    )
    advertised = meta.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if advertised:
        response.field_meta = advertised
    return response
