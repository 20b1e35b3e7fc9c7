"""The fake model's tool calls: ``bash`` output of any size, ``search`` and ``web_search``.

Contract: a ``ToolCall`` is one ``toolCall`` item: ``start``, ``update`` and ``finish`` emit its
revisions; ``stream`` emits output deltas of at most ``CHUNK_BYTES`` while storing the bytes
(1.2.1 only; never more than one chunk in memory), and ``finish`` carries a bounded head and, on
1.2.1, the stored output's reference. A stopped turn completes an open call ``cancelled``;
under ``--disable-shell`` a bash call completes ``rejected``. ``run_shell``, ``run_search``,
``run_web`` and ``run_timed`` (``sim:spawn``, ``sim:paced``) play their directives. A paced call
prints its lines evenly over its duration, one delta each, the next after a pause (the turn's
own pace, costing no work). ``run_spawn`` starts a real ``sleep`` child in
the host's process group and holds the turn until it ends; a turn stopped meanwhile (or a host
shutting down) kills and reaps it first.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from typing import Final

import anyio

from muse_acp.sim.model.outputs import (
    BINARY_MEDIA_TYPE,
    BINARY_UNIT,
    TEXT_MEDIA_TYPE,
    TEXT_UNIT,
    VISIBLE_BYTES,
    OutputSink,
    pattern_chunks,
)
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.script.directives import Paced, Search, Shell, Spawn, WebSearch
from muse_acp.sim.state.ids import new_call_id, new_uuid7, rfc3339_now
from muse_acp_wire.msp import OutputRef, ToolCallItem

__all__ = [
    "ToolCall",
    "compact_json",
    "run_search",
    "run_shell",
    "run_spawn",
    "run_timed",
    "run_web",
]

CANCELLED_REASON: Final = "stopped because the turn ended early"
SHELL_DISABLED: Final = "shell tools are disabled on this host (--disable-shell)"
WRITE_DISABLED: Final = "file writes are disabled on this host (--disable-write)"


def compact_json(value: object) -> str:
    """Tool arguments as hosts write them: compact, non-ASCII kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class ToolCall:
    """One ``toolCall`` item of a turn (see the module contract)."""

    def __init__(self, turn: Turn, tool: str, args: str, *, approval_id: str | None = None) -> None:
        self.turn = turn
        self.tool = tool
        self.args = args
        self.approval_id = approval_id
        self.item_id = new_uuid7()
        self.call_id = new_call_id()
        self._visible = bytearray()
        self._revision = 0
        self._size = 0
        self._sink: OutputSink | None = None

    @classmethod
    def taken_up(cls, turn: Turn, stored: dict[str, object]) -> ToolCall:
        """The call a stored ``toolCall`` item (still in progress) records, to be finished by
        this turn: its next revision follows the stored one."""
        approval = stored.get("approvalId")
        call = cls(
            turn,
            str(stored["tool"]),
            str(stored.get("args") or ""),
            approval_id=approval if isinstance(approval, str) else None,
        )
        call.item_id = str(stored["itemId"])
        call.call_id = str(stored["callId"])
        revision = stored["revision"]
        call._revision = revision if isinstance(revision, int) else 1
        turn.open_items[call.item_id] = call._cancel
        return call

    def item(self, status: str, **members: object) -> ToolCallItem:
        """The item at its next revision."""
        self._revision += 1
        fields: dict[str, object] = {
            "item_id": self.item_id,
            "kind": "toolCall",
            "turn_id": self.turn.turn_id,
            "revision": self._revision,
            "status": status,
            "recorded_at": rfc3339_now(),
            "tool": self.tool,
            "call_id": self.call_id,
            "args": self.args,
            **members,
        }
        if self.approval_id is not None:
            fields["approval_id"] = self.approval_id
        return ToolCallItem.model_validate(fields, by_name=True)

    async def start(self) -> None:
        self.turn.phase = "a tool was running"
        self.turn.open_items[self.item_id] = self._cancel
        await self.turn.item_event("item/started", self.item("inProgress"))

    async def _cancel(self) -> None:
        if self._sink is not None:
            self._sink.finish()
            self._sink = None
        await self.turn.item_event(
            "item/completed",
            self.item("cancelled", failure_reason=CANCELLED_REASON, **self._shown()),
        )

    async def update(self) -> None:
        """``item/updated``: the call is running (after waiting for its approval)."""
        self.turn.phase = "a tool was running"
        await self.turn.item_event("item/updated", self.item("inProgress"))

    def store(self, media_type: str) -> None:
        """Keep the output for ``item/readOutput`` (only hosts with output references do)."""
        if self.turn.ctx.profile.output_refs:
            session = self.turn.session
            self._sink = OutputSink(
                session.store, session.session_id, self.item_id, media_type=media_type
            )

    async def stream(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            if self._sink is not None:
                self._sink.write(chunk)
            self._size += len(chunk)
            room = VISIBLE_BYTES - len(self._visible)
            if room > 0:
                self._visible += chunk[:room]
            await self.turn.delta(self.item_id, "output", chunk.decode("utf-8", "replace"))

    def _shown(self) -> dict[str, object]:
        shown: dict[str, object] = {"visible_output": self._visible.decode("utf-8", "replace")}
        if self._size > len(self._visible):
            shown["truncated"] = True
        return shown

    async def finish(
        self, status: str = "completed", *, available: bool = True, **members: object
    ) -> None:
        ref: OutputRef | None = None
        if self._sink is not None:
            ref = self._sink.finish(available=available)
            self._sink = None
        extra: dict[str, object] = {**self._shown(), **members}
        if ref is not None:
            extra["output_ref"] = ref
        self.turn.open_items.pop(self.item_id, None)
        await self.turn.item_event("item/completed", self.item(status, **extra))
        self.turn.phase = "the model was working"

    async def finish_with(self, status: str, visible_output: str) -> None:
        """Complete the call with a fixed visible output and nothing stored."""
        self.turn.open_items.pop(self.item_id, None)
        await self.turn.item_event(
            "item/completed", self.item(status, visible_output=visible_output)
        )
        self.turn.phase = "the model was working"


def shell_args(command: str, description: str) -> str:
    return compact_json({"command": command, "description": description})


async def run_shell(turn: Turn, directive: Shell) -> None:
    size = directive.size
    binary = directive.output == "binary"
    unit = BINARY_UNIT if binary else TEXT_UNIT
    command = f"yes {'binary-marker' if binary else 'output-marker'} | head -c {size}"
    call = ToolCall(turn, "bash", shell_args(command, f"Print {size} bytes of output"))
    await turn.usage(command, final=False)
    await call.start()
    if turn.ctx.options.disable_shell:
        await call.finish_with("rejected", SHELL_DISABLED)
        return
    call.store(BINARY_MEDIA_TYPE if binary else TEXT_MEDIA_TYPE)
    await call.stream(pattern_chunks(unit, size))
    await call.finish(available=directive.output != "unavailable")


async def run_text_tool(turn: Turn, call: ToolCall, output: str) -> None:
    await turn.usage(call.args, final=False)
    await call.start()
    call.store(TEXT_MEDIA_TYPE)
    await call.stream([output.encode()])
    await call.finish()


async def run_search(turn: Turn, directive: Search) -> None:
    args = {
        "glob": ["**/*"],
        "output_mode": "files_with_matches",
        "paths": [],
        "pattern": directive.pattern,
    }
    output = f"README.md\nnotes/{directive.pattern}.md\n"
    await run_text_tool(turn, ToolCall(turn, "search", compact_json(args)), output)


async def run_web(turn: Turn, directive: WebSearch) -> None:
    query = directive.query
    output = f"1. Simulated result for {query}\n   https://example.invalid/search?q={len(query)}\n"
    await run_text_tool(turn, ToolCall(turn, "web_search", compact_json({"query": query})), output)


async def run_timed(turn: Turn, directive: Spawn | Paced) -> None:
    if isinstance(directive, Spawn):
        await run_spawn(turn, directive)
        return
    lines, seconds = directive.lines, directive.seconds
    command = f"for i in $(seq {lines}); do echo tick $i; sleep {seconds / lines:g}; done"
    call = ToolCall(turn, "bash", shell_args(command, f"Print {lines} lines over {seconds:g} s"))
    await turn.usage(command, final=False)
    await call.start()
    if turn.ctx.options.disable_shell:
        await call.finish_with("rejected", SHELL_DISABLED)
        return
    call.store(TEXT_MEDIA_TYPE)
    for index in range(1, lines + 1):
        await call.stream([f"tick {index}/{lines}\n".encode()])
        await anyio.sleep(seconds / lines)
    await call.finish()


async def run_spawn(turn: Turn, directive: Spawn) -> None:
    seconds = directive.seconds
    command = f"sleep {seconds}"
    call = ToolCall(turn, "bash", shell_args(command, f"Wait {seconds} seconds"))
    await turn.usage(command, final=False)
    await call.start()
    if turn.ctx.options.disable_shell:
        await call.finish_with("rejected", SHELL_DISABLED)
        return
    call.store(TEXT_MEDIA_TYPE)
    process = await anyio.open_process(
        ["sleep", seconds],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await call.stream([f"pid {process.pid}\n".encode()])
        status = await process.wait()
    finally:
        if not turn.ctx.options.quirks.orphan_tools:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.aclose()  # waits for the child: it is always reaped
    await call.stream([f"exit {status}\n".encode()])
    await call.finish("completed" if status == 0 else "failed")
