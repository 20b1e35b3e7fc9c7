"""A prompt's ``turn/start`` written as the prompt is read, when nothing stands between them.

Contract: ``start_early`` is the agent connection's ``rpc.EarlyStart``, offered every request as
its frame is read, before the request's task starts. It takes only a ``session/prompt`` the
ordinary way (``prompting``) would run at once as a model turn, unchanged: a well-formed prompt
(its file-change report too) of an open, free session served by MSP, no command, not in plan
mode, no effort to check against Muse's catalog, and a host ready as it stands
(``ExecutionHost.ready_now``). For such a prompt it writes ``turn/start`` at once
(``submission.submit_at_once``), then claims the session and takes the request's cancel as the
handler would, and leaves what it did on the session (``EarlyPrompt``); the request's handler
takes it (``take``) and goes on from there (``model_turn.run_submitted``). It never waits, and
nothing it declines (or whose write would have to wait) is changed: the ordinary way runs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from muse_acp.agent.context import AgentContext
from muse_acp.agent.handshake import file_change_report
from muse_acp.agent.prompts.model_turn import unsent_roots
from muse_acp.agent.sessions.session import PROMPT, AcpSession
from muse_acp.agent.translation.plans import PLAN_MODE
from muse_acp.agent.translation.prompt_content import convert_prompt
from muse_acp.agent.translation.prompt_params import PromptRequest
from muse_acp.agent.turns.submission import Submission, submit_at_once, turn_start_params
from muse_acp.agent.turns.turn import MAX_HELD_EVENTS
from muse_acp.agent.turns.work import SessionWork
from muse_acp.host.client import MspHost
from muse_acp.rpc import JsonValue, RequestContext, RequestId, RpcError, validate_params
from muse_acp_wire import acp

__all__ = ["METHOD", "EarlyPrompt", "Withdrawal", "start_early", "take"]

METHOD: Final = "session/prompt"


class Withdrawal:
    """A prompt request's cancel by its client (``$/cancel_request``): its work stops, and the
    prompt answers REQUEST_CANCELLED once that settled (``prompting``)."""

    __slots__ = ("_work", "withdrawn")

    def __init__(self, work: SessionWork) -> None:
        self._work = work
        self.withdrawn = False

    def __call__(self) -> None:
        self.withdrawn = True
        self._work.cancel()


@dataclass(frozen=True, slots=True)
class EarlyPrompt:
    """A prompt whose turn ``start_early`` started: what its handler goes on from."""

    request_id: RequestId
    session: AcpSession
    work: SessionWork
    withdrawal: Withdrawal
    host: MspHost
    submission: Submission
    roots: list[str] | None


def start_early(ctx: AgentContext, method: str, params: JsonValue, rctx: RequestContext) -> None:
    """Write the prompt's ``turn/start`` now when nothing stands between them (see the module
    contract); anything else is left to the prompt's handler, untouched."""
    if method != METHOD or not _on_msp(ctx):
        return
    try:
        request = validate_params(PromptRequest, params, METHOD)  # the route's own model
        file_change_report.requested(ctx.negotiated.file_change_report, request.field_meta)
        session = ctx.sessions.get(request.session_id)
        if session is None or not _free(session, rctx.arrival) or _maybe_command(request):
            return
        host = session.execution.ready_now()
        if host is None:
            return
        parts = convert_prompt(request.prompt)
    except RpcError:
        return  # the handler meets it again, and answers it
    roots = unsent_roots(session, host)
    turn_start = turn_start_params(session.session_id, parts, None, roots)
    submission = submit_at_once(host, turn_start, hold_limit=MAX_HELD_EVENTS)
    if submission is None:
        return
    # The turn is Muse's now: the session is the prompt's in the same step (it was free).
    work = session.begin(PROMPT, rctx.arrival)
    work.commit = rctx.commit
    withdrawal = Withdrawal(work)
    rctx.on_cancel(withdrawal)
    early = EarlyPrompt(rctx.request_id, session, work, withdrawal, host, submission, roots)
    session.early_prompt = early


def take(ctx: AgentContext, session_id: str, rctx: RequestContext) -> EarlyPrompt | None:
    """The prompt ``start_early`` started for the request ``rctx`` serves, once (None: none)."""
    session = ctx.sessions.get(session_id)
    if session is None:
        return None
    early = session.early_prompt
    if not isinstance(early, EarlyPrompt) or early.request_id != rctx.request_id:
        return None
    session.early_prompt = None
    return early


def _on_msp(ctx: AgentContext) -> bool:
    """The connection is settled on the MSP backend (``AgentContext.on_exec`` would say no)."""
    return ctx.startup.settled and ctx.exec_known() is False


def _free(session: AcpSession, arrival: int) -> bool:
    """The prompt would run at once, unchanged: nothing occupies or cancelled the session, no
    earlier prompt is being started early, and its settings add nothing to the turn."""
    settings = session.settings
    return (
        not session.closed
        and session.work is None
        and session.early_prompt is None
        and not 0 < arrival < session.cancelled_through
        and settings.mode_id != PLAN_MODE
        and settings.effort is None
    )


def _maybe_command(request: PromptRequest) -> bool:
    """The prompt may invoke a local command (``commands``, above this package, decides): its
    first text begins with a slash. Such a prompt takes the ordinary way, which tells."""
    texts = (block for block in request.prompt if isinstance(block, acp.TextContentBlock))
    first = next(texts, None)
    return first is not None and first.text.lstrip().startswith("/")
