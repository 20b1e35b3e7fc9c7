"""``/status``: where a session stands, told without a model turn.

Contract: ``status_text`` turns a ``StatusFacts`` into the reply ``/status`` sends, one fact per
line, in a fixed order: muse-acp's version; the Muse host (its version and the MSP bindings it
is read with, or why no version is known yet); the session (id, title, workspace); its mode,
model and reasoning effort as the menus name them; the safety settings the installed Muse
offers, as the menus name their values; the MCP servers the client gave the session (names and
transports only, never their settings); the context window's use as Muse last reported it, and
token and subscription usage (``usage``); and whether tool outputs can be read back in full. A
fact not known yet says so rather than being left out. Pure: the caller gathers the facts
(``commands``).
"""

from __future__ import annotations

from dataclasses import dataclass

from muse_acp.text import clip

__all__ = ["ContextUse", "HostFacts", "StatusFacts", "status_text"]

_SHOWN = 120
"""Longest title or path shown, in characters."""


@dataclass(frozen=True, slots=True)
class ContextUse:
    """The context window's use, as Muse last reported it."""

    used: int
    size: int


@dataclass(frozen=True, slots=True)
class HostFacts:
    """What is known of the Muse host that serves (or would serve) the session."""

    version: str | None
    """The version the running host reported, else the executable's ``--version``."""
    running: bool
    """A host runs for this session now."""
    bundle: str | None
    """The MSP bindings bundle the version is read with."""
    exact: bool
    """The bundle is the version's own (not the nearest older one)."""
    problem: str | None = None
    """Why the executable could not be probed, if it could not."""


@dataclass(frozen=True, slots=True)
class StatusFacts:
    """Everything ``/status`` reports (see the module contract)."""

    adapter_version: str
    host: HostFacts
    session_id: str
    title: str | None
    cwd: str
    mode: str
    model: str
    effort: str
    context: ContextUse | None
    stored_output: bool
    usage: tuple[str, ...] = ()
    """Token and subscription usage lines (``usage.usage_lines``), after the context line."""
    safety: tuple[tuple[str, str], ...] = ()
    """Each safety setting the installed Muse offers: its name and its current value's name."""
    mcp_servers: tuple[tuple[str, str], ...] = ()
    """Each MCP server of the session: its name and its transport."""


def _host_line(host: HostFacts) -> str:
    if host.version is None:
        return f"Muse: not known yet ({host.problem})" if host.problem else "Muse: not known yet"
    state = "running for this session" if host.running else "starts with the next prompt"
    if host.bundle is None:
        return f"Muse: {host.version}, {state}"
    how = "its own" if host.exact else "the nearest older"
    return f"Muse: {host.version} ({state}), read with the MSP {host.bundle} bindings ({how})"


def _safety_line(safety: tuple[tuple[str, str], ...]) -> str:
    if not safety:
        return "Safety: Muse's own defaults (this Muse offers no safety settings to change)"
    return "Safety: " + "; ".join(f"{name}: {value}" for name, value in safety)


def _mcp_line(servers: tuple[tuple[str, str], ...]) -> str:
    if not servers:
        return "MCP servers: none from this client"
    shown = ", ".join(f"{clip(name, _SHOWN)} ({transport})" for name, transport in servers)
    return f"MCP servers: {shown}"


def _context_line(context: ContextUse | None) -> str:
    if context is None:
        return "Context: not reported yet (Muse reports it during a turn)"
    share = 100 * context.used / context.size if context.size > 0 else 0.0
    return f"Context: {context.used:,} of {context.size:,} tokens ({share:.0f}%)"


def status_text(facts: StatusFacts) -> str:
    """The ``/status`` reply for ``facts`` (see the module contract)."""
    stored = (
        "readable in full through _muse/readOutput"
        if facts.stored_output
        else "shown as the card text only (this client or host cannot read them back)"
    )
    lines = [
        f"muse-acp: {facts.adapter_version}",
        _host_line(facts.host),
        f"Session: {facts.session_id}"
        + (f" ({clip(facts.title, _SHOWN)!r})" if facts.title else ""),
        f"Workspace: {clip(facts.cwd, _SHOWN)}",
        f"Mode: {facts.mode}",
        f"Model: {facts.model}",
        f"Reasoning effort: {facts.effort}",
        _safety_line(facts.safety),
        _mcp_line(facts.mcp_servers),
        _context_line(facts.context),
        *facts.usage,
        f"Tool outputs: {stored}",
    ]
    return "\n".join(f"- {line}" for line in lines)
