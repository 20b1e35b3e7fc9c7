"""Reading ``session/update`` notifications into typed updates.

Contract: ``UpdateEnvelope`` is what the client's router validates a ``session/update`` into:
the session id and the update left as a JSON object, so one unexpected update cannot cost the
notification its session. ``parse_update`` then reads the update with the generated model its
``sessionUpdate`` tag names (``UPDATE_MODELS``). An update kind this client does not know is
skipped with a debug log (agents add kinds over time), and a known kind that does not validate
is skipped with a warning; neither is ever raised. ``message_text`` extracts the text of an
``agent_message_chunk``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Final, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from muse_acp.rpc import describe_validation_error
from muse_acp_wire import acp

__all__ = ["UPDATE_MODELS", "UpdateEnvelope", "message_text", "parse_update"]

logger: Final = logging.getLogger("muse_acp.client")


class UpdateEnvelope(BaseModel):
    """The params of ``session/update`` with the update itself still unparsed."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    session_id: Annotated[str, Field(alias="sessionId")]
    update: dict[str, Any]


def _update_models() -> Mapping[str, type[acp.SessionUpdate]]:
    table: dict[str, type[acp.SessionUpdate]] = {}
    for model in get_args(acp.SessionUpdate):
        (tag,) = get_args(model.model_fields["session_update"].annotation)
        table[tag] = model
    return MappingProxyType(table)


UPDATE_MODELS: Final[Mapping[str, type[acp.SessionUpdate]]] = _update_models()
"""The generated model of each ``sessionUpdate`` kind this client understands."""


def parse_update(data: Mapping[str, Any]) -> acp.SessionUpdate | None:
    """The typed update, or None when its kind is unknown or it does not validate."""
    tag = data.get("sessionUpdate")
    model = UPDATE_MODELS.get(tag) if isinstance(tag, str) else None
    if model is None:
        logger.debug("skipped a session update of unknown kind %.80r", tag)
        return None
    try:
        return model.model_validate(data, by_alias=True, by_name=False)
    except ValidationError as error:
        detail = describe_validation_error(error, dict(data))
        logger.warning("skipped an invalid %s update: %s", tag, detail)
        return None


def message_text(update: acp.SessionUpdate) -> str | None:
    """The text of an ``agent_message_chunk`` carrying text, else None."""
    if isinstance(update, acp.AgentMessageChunkSessionUpdate) and isinstance(
        update.content, acp.TextContentBlock
    ):
        return update.content.text
    return None
