"""Names for the ACP unions the generated module folds into its fields.

The generator inlines each tagged union at the fields that use it, so the union types
themselves are not importable from ``muse_acp_wire.acp``. These aliases give the runtime one
name per union, in the generator's member order.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from muse_acp_wire import acp

ContentBlock: TypeAlias = (
    acp.TextContentBlock
    | acp.ImageContentBlock
    | acp.AudioContentBlock
    | acp.ResourceLinkContentBlock
    | acp.ResourceContentBlock
)

SessionUpdate: TypeAlias = (
    acp.UserMessageChunkSessionUpdate
    | acp.AgentMessageChunkSessionUpdate
    | acp.AgentThoughtChunkSessionUpdate
    | acp.ToolCallSessionUpdate
    | acp.ToolCallUpdateSessionUpdate
    | acp.PlanSessionUpdate
    | acp.AvailableCommandsUpdateSessionUpdate
    | acp.CurrentModeUpdateSessionUpdate
    | acp.ConfigOptionUpdateSessionUpdate
    | acp.SessionInfoUpdateSessionUpdate
    | acp.UsageUpdateSessionUpdate
)

ToolCallContent: TypeAlias = (
    acp.ContentToolCallContent | acp.DiffToolCallContent | acp.TerminalToolCallContent
)

SessionConfigOption: TypeAlias = acp.SelectSessionConfigOption | acp.BooleanSessionConfigOption

ToolKind: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolCallStatus: TypeAlias = Literal["pending", "in_progress", "completed", "failed"]
StopReason: TypeAlias = Literal[
    "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"
]

__all__ = [
    "ContentBlock",
    "SessionConfigOption",
    "SessionUpdate",
    "StopReason",
    "ToolCallContent",
    "ToolCallStatus",
    "ToolKind",
]
