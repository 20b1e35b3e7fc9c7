"""The params models of the methods that carry prompt content, with one check made on raw input.

Contract: ``PROMPT_PARAMS`` maps ``session/prompt``, ``_muse/steer`` and ``_session/steering`` to
subclasses of their generated params models that behave the same, except that a prompt holding
an embedded resource with both ``text`` and ``blob`` is refused INVALID_PARAMS before
validation (``refuse_ambiguous_resources``). Validation alone cannot see it: wire models drop
members they do not know and the resource union keeps its first matching variant, so the blob
would disappear and the prompt would run without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from pydantic import BaseModel, model_validator

from muse_acp.agent.translation.prompt_content import refuse_ambiguous_resources
from muse_acp_wire import acp
from muse_acp_wire._base import WireModel

__all__ = ["PROMPT_PARAMS", "MuseSteerRequest", "PromptRequest", "SessionSteeringRequest"]


class _WholeResources(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _refuse_ambiguous_resources(cls, data: Any) -> Any:
        if isinstance(data, dict):
            refuse_ambiguous_resources(data.get("prompt"))
        return data


class PromptRequest(_WholeResources, acp.PromptRequest):
    """``session/prompt`` params."""


class MuseSteerRequest(_WholeResources, acp.MuseSteerRequest):
    """``_muse/steer`` params."""


class SessionSteeringRequest(_WholeResources, acp.SessionSteeringRequest):
    """``_session/steering`` params."""


PROMPT_PARAMS: Final[Mapping[str, type[WireModel]]] = MappingProxyType(
    {
        "session/prompt": PromptRequest,
        "_muse/steer": MuseSteerRequest,
        "_session/steering": SessionSteeringRequest,
    }
)
