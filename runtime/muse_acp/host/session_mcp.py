"""Which MCP servers a Muse host takes per session, read from its MSP bundle.

Contract: ``session_mcp_transports(version)`` is the set of ``transport`` tags (``stdio``,
``streamableHttp``) that the bundle of a host reporting ``version`` declares for
``config.mcpServers`` on ``session/start`` and ``session/resume``; it is empty for a host whose
bundle has no per-session MCP servers, and for an unknown version (nothing is promised for a
host that was not identified). ``transports(features)`` adds what reaches a Muse through a
settings overlay (``OVERLAY_TRANSPORTS``, on a host offering ``mcpOverlay``): what works either
way, for ``initialize``'s ``mcpCapabilities``. ``first_version_with(transport)`` is the oldest
bundle declaring ``transport``, for messages saying which Muse is needed. ``SESSION_MCP`` is
the capability a connection asks for at ``initialize`` before it sends servers: hosts that do
not know it ignore the request, hosts that gate per-session servers on it grant it.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from muse_acp.host.bindings import Bindings, bindings_for, parse_version
from muse_acp.host.features import HostFeatures
from muse_acp_wire.msp_outlines import OUTLINES

__all__ = [
    "OVERLAY_TRANSPORTS",
    "SESSION_MCP",
    "first_version_with",
    "session_mcp_transports",
    "transports",
]

SESSION_MCP: Final = "sessionMcp"

OVERLAY_TRANSPORTS: Final = frozenset({"stdio", "streamableHttp"})
"""What Muse reads from the ``mcpServers`` of its settings file (see ``mcp_overlay``)."""


_MODELS: Final = MappingProxyType(
    {"stdio": "SessionMcpStdioServer", "streamableHttp": "SessionMcpHttpServer"}
)
"""Transport tag -> the bundle model of that arm of ``SessionMcpServerConfig``."""


_VARIANTS: Final = "SESSION_MCP_SERVER_CONFIG_VARIANTS"
"""The tag table of ``SessionMcpServerConfig`` in a bundle that declares more than one arm."""


def _declared(bindings: Bindings) -> frozenset[str]:
    """The arms of ``SessionMcpServerConfig`` the bundle declares: its tag table's tags (every
    bundle with two arms, hand-written or ingested), or the models of a lone arm."""
    tags = bindings.outline.variants.get(_VARIANTS, frozenset())
    return frozenset(tags) | {tag for tag, model in _MODELS.items() if bindings.declares(model)}


def session_mcp_transports(version: str | None) -> frozenset[str]:
    """The transports a host reporting ``version`` takes in ``config.mcpServers``."""
    if parse_version(version) is None:
        return frozenset()
    return _declared(bindings_for(version))


def transports(features: HostFeatures) -> frozenset[str]:
    """The MSP transports that reach the Muse offering ``features``, either way."""
    native = session_mcp_transports(features.version)
    if features.has("mcpOverlay"):
        return native | OVERLAY_TRANSPORTS
    return native


def first_version_with(transport: str) -> str | None:
    """The oldest bundle version declaring ``transport`` for per-session MCP servers."""
    ordered = sorted(
        (key, version) for version in OUTLINES if (key := parse_version(version)) is not None
    )
    for _, version in ordered:
        if transport in _declared(bindings_for(version)):
            return version
    return None
