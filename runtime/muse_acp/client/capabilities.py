"""What the client tells the agent it can do, and the opt-ins to the Muse extensions.

Contract: ``client_capabilities`` builds ``ClientCapabilities`` that offer no file system and
no terminal, and form elicitations only when asked to. ``extensions`` adds the Muse extension
opt-ins to ``clientCapabilities._meta`` (stored output reads, ``_muse/steer`` and the
compatible ``_session/steering``), leaving any other ``_meta`` entries in place. Every member
is set explicitly, so it is sent even when it has its default value.
"""

from __future__ import annotations

from typing import Any, Final

from muse_acp_wire import acp

__all__ = [
    "COMPATIBLE_STEERING_KEY",
    "OUTPUT_KEY",
    "STEERING_KEY",
    "client_capabilities",
    "extensions",
    "with_elicitation",
]

_KEYS: Final = acp.MuseClientCapabilitiesMeta.model_fields
OUTPUT_KEY: Final = _KEYS["muse_output"].alias or ""
STEERING_KEY: Final = _KEYS["muse_steering"].alias or ""
COMPATIBLE_STEERING_KEY: Final = "steering"
EXTENSION_VERSION: Final = 1
"""The highest Muse extension version this client understands."""


def client_capabilities(*, elicitation: bool = False) -> acp.ClientCapabilities:
    """No file system, no terminal; form elicitations when ``elicitation`` is true."""
    capabilities = acp.ClientCapabilities(
        fs=acp.FileSystemCapabilities(read_text_file=False, write_text_file=False),
        terminal=False,
    )
    if elicitation:
        capabilities.elicitation = acp.ElicitationCapabilities(
            form=acp.ElicitationFormCapabilities()
        )
    return capabilities


def extensions(
    output: bool = True,
    steering: bool = True,
    compatible_steering: bool = True,
    *,
    base: acp.ClientCapabilities | None = None,
) -> acp.ClientCapabilities:
    """``base`` (default: ``client_capabilities()``) with the chosen Muse extensions opted in."""
    capabilities = (base or client_capabilities()).model_copy(deep=True)
    opt_ins = acp.MuseClientCapabilitiesMeta()
    if output:
        opt_ins.muse_output = EXTENSION_VERSION
    if steering:
        opt_ins.muse_steering = EXTENSION_VERSION
    if compatible_steering:
        opt_ins.steering = acp.SteeringSupport(supported=True)
    meta: dict[str, Any] = dict(capabilities.field_meta or {})
    meta.update(opt_ins.model_dump(mode="json", by_alias=True, exclude_unset=True))
    if meta:
        capabilities.field_meta = meta
    return capabilities


def with_elicitation(capabilities: acp.ClientCapabilities) -> acp.ClientCapabilities:
    """``capabilities`` offering form elicitations, unless they already say anything about them."""
    if capabilities.elicitation is not None:
        return capabilities
    copy = capabilities.model_copy(deep=True)
    copy.elicitation = acp.ElicitationCapabilities(form=acp.ElicitationFormCapabilities())
    return copy
