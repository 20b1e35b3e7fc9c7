"""What a client asks of a turn: to start it (``TurnRequest``), to steer it (``Steer``) and to
end it early (``StopRequest``).

Contract: plain frozen values, made by the turn commands (``turn/start``, ``turn/steer``,
``turn/cancel``, ``turn/interrupt``) and consumed by the turn that plays them. They sit below
the live session, which queues requests and reaches its running turn through them.
"""

from __future__ import annotations

from dataclasses import dataclass

from muse_acp.sim.script.directives import Prompt

__all__ = ["Steer", "StopRequest", "TurnRequest"]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """A turn as ``turn/start`` asked for it."""

    turn_id: str
    command_id: str
    text: str
    """The user message: the input's text parts joined by newlines."""
    prompt: Prompt
    images: tuple[str, ...] = ()
    """How each image part is echoed, e.g. ``[image image/png, 4 bytes]``."""
    attachments: tuple[dict[str, object], ...] = ()
    display_text: str | None = None
    effort: str | None = None
    goal: bool = False
    """A turn the host woke for the session goal: it has no user message."""
    then: tuple[str, ...] = ()
    """A goal turn's: the parts of the objective Muse plays next, each in a turn of its own."""


@dataclass(frozen=True, slots=True)
class Steer:
    text: str
    command_id: str


@dataclass(frozen=True, slots=True)
class StopRequest:
    """How a client ended a turn early."""

    interrupt: bool
    retract: bool
    command_id: str
