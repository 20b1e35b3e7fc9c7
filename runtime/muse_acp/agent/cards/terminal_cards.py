"""Shell cards as live terminals: the ``terminal_info``, ``terminal_output`` and ``terminal_exit``
entries of a card's ``_meta``, for a client that declares ``clientCapabilities._meta
.terminal_output`` (``OutputPolicy.terminal``).

Contract (pure): a shell card (a ``userShell`` item, or a tool call of ACP kind ``execute``)
shown under ``OutputPolicy.terminal`` holds a ``terminal`` content block named by its
``toolCallId`` (then its notes, if any, as text) instead of its output text. Its ``tool_call``
names the terminal (``terminal_info``: id and the session's workspace); each output delta
becomes one ``terminal_output`` chunk while the card runs; the update that ends it carries
``terminal_exit`` (the exit code and signal Muse reported, null when it reported none), after
the card's text as one chunk when no delta came. A ``TerminalStream`` keeps what one card sent:
at most ``CARD_TEXT_LIMIT_BYTES`` of output in all; the chunk that reaches that bound ends with a
note saying the rest is not shown, and the card's notes say how much there was.
"""

from __future__ import annotations

from typing import Any, Final

from muse_acp.agent.cards.progress import CARD_TEXT_LIMIT_BYTES
from muse_acp.text import cut_utf8, utf8_size
from muse_acp_wire import acp, msp

__all__ = [
    "CAP_NOTE",
    "TerminalStream",
    "info_meta",
    "is_shell",
    "terminal_content",
]

CAP_NOTE: Final = (
    f"\r\n[muse-acp shows only the first {CARD_TEXT_LIMIT_BYTES} bytes of this output here; "
    "the card says how much there was.]\r\n"
)
"""Written into the terminal where its output stops being shown."""

_SHELL_TOOLS: Final = frozenset({"bash", "powershell"})


def is_shell(item: object) -> bool:
    """Whether ``item`` runs a shell command (its card can show a terminal)."""
    if isinstance(item, msp.UserShellItem):
        return True
    return isinstance(item, msp.ToolCallItem) and item.tool in _SHELL_TOOLS


def terminal_content(call_id: str) -> acp.TerminalToolCallContent:
    """The content block that shows the card's terminal."""
    return acp.TerminalToolCallContent(type="terminal", terminal_id=call_id)


def info_meta(call_id: str, cwd: str | None) -> dict[str, Any]:
    """The ``_meta`` entry of a shell card's ``tool_call`` that opens its terminal."""
    info: dict[str, Any] = {"terminal_id": call_id}
    if cwd is not None:
        info["cwd"] = cwd
    return {"terminal_info": info}


def _exit(item: object) -> tuple[int | None, str | None]:
    if isinstance(item, msp.UserShellItem):
        signal = item.exit_signal
        return item.exit_code, None if signal is None else str(signal)[:64]
    return None, None  # a tool call's exit status is not published by Muse


class TerminalStream:
    """What one shell card sent to its terminal (see the module contract)."""

    __slots__ = ("_call_id", "_sent", "capped", "exited")

    def __init__(self, call_id: str) -> None:
        self._call_id = call_id
        self._sent = 0
        self.capped = False
        self.exited = False

    def _output(self, data: str) -> dict[str, Any]:
        return {"terminal_output": {"terminal_id": self._call_id, "data": data}}

    def chunk(self, delta: str) -> dict[str, Any] | None:
        """The ``_meta`` that shows ``delta`` in the terminal, or None once nothing more is
        shown (the card ended, or its output reached the bound)."""
        if self.exited or self.capped or not delta:
            return None
        kept, cut = cut_utf8(delta, CARD_TEXT_LIMIT_BYTES - self._sent)
        self._sent += utf8_size(kept)
        if cut:
            self.capped = True
            kept += CAP_NOTE
        return self._output(kept)

    def closing(self, item: object, text: str) -> dict[str, Any]:
        """The ``_meta`` of the update that ends the card: ``text`` (its output as the card
        has it) when nothing was streamed, then the exit."""
        meta: dict[str, Any] = {}
        if self._sent == 0 and not self.capped and text:
            meta.update(self.chunk(text) or {})
        code, signal = _exit(item)
        meta["terminal_exit"] = {"terminal_id": self._call_id, "exit_code": code, "signal": signal}
        self.exited = True
        return meta
