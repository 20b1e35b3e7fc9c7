"""The MSP bindings the adapter speaks, and names for the unions they fold into fields.

The adapter parses every host with the newest verified bindings: later MSP versions only add
members and methods, and behaviour that exists on one version only is gated by the host's
reported version (see ``muse_acp.host.versions``), not by which model parsed a frame.
"""

from __future__ import annotations

from typing import TypeAlias

from muse_acp_wire import msp_1_2_1 as msp

Item: TypeAlias = (
    msp.UserMessageItem
    | msp.AgentMessageItem
    | msp.ReasoningItem
    | msp.ToolCallItem
    | msp.UserShellItem
    | msp.WorkflowItem
    | msp.SubagentItem
    | msp.CompactionItem
    | msp.UnknownItem
)

TurnInputPart: TypeAlias = msp.TextTurnInputPart | msp.ImageTurnInputPart

__all__ = ["Item", "TurnInputPart", "msp"]
