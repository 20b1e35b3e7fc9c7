"""``/review``, ``/review-branch`` and ``/review-commit``: a read-only review turn over a Git
snapshot.

Contract: these are turns by design. Each gathers a bounded snapshot of the workspace's Git
changes (``git_snapshot``: uncommitted changes, HEAD since its merge base with ``BASE``, or one
commit), announces what is reviewed in one agent message, then runs one turn whose text is a
review preamble, the focus and the snapshot. The turn is read-only by two means: the host runs
with the Read-only mode's flags (restarted when its flags differ), and the preamble asks for
findings only. docs/features.md gives the arguments.

Errors: outside a Git work tree, or for a reference that names no commit, the prompt fails
(-32602) and no turn starts; a cancel while git runs resolves ``cancelled``.
"""

from __future__ import annotations

from typing import Final

from muse_acp.agent.commands.git_snapshot import SNAPSHOT_LIMIT, ReviewTarget, snapshot
from muse_acp.agent.context import AgentContext
from muse_acp.agent.options.config_options import MODES
from muse_acp.agent.prompts.model_turn import run_turn
from muse_acp.agent.sessions.session import AcpSession
from muse_acp.agent.turns.work import SessionWork
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = [
    "BRANCH_HINT",
    "COMMIT_HINT",
    "REVIEW_HINT",
    "review_prompt",
    "run_review",
    "run_review_branch",
    "run_review_commit",
]

REVIEW_HINT: Final = "what to focus on (optional)"
BRANCH_HINT: Final = "base branch (default: upstream), then what to focus on"
COMMIT_HINT: Final = "commit (default: HEAD), then what to focus on"
READ_ONLY_FLAGS: Final = MODES["readOnly"].host_flags
_FOCUS_LIMIT: Final = 2000
_BEGIN: Final = "----- BEGIN GIT SNAPSHOT (gathered by muse-acp) -----"
_END: Final = "----- END GIT SNAPSHOT -----"
_PREAMBLE: Final = (
    "Review the code changes in the Git snapshot below, as a careful reviewer would. This is a "
    "read-only review: do not edit, create or delete files and do not run commands that change "
    "anything; you may read files in the workspace for context. Report concrete problems (bugs, "
    "regressions, security issues, missing tests, unclear code) ordered by severity, each with "
    "its file and line and a suggested fix. If you find nothing worth changing, say so. If the "
    "snapshot says it was cut, say which parts you could not review."
)


def review_prompt(what: str, focus: str | None, text: str) -> str:
    """The text of the review turn's single input part."""
    lines = [_PREAMBLE, f"What to review: {what}."]
    if focus:
        lines.append(f"Focus especially on: {clip(focus, _FOCUS_LIMIT)}")
    head = "\n\n".join(lines)
    return f"{head}\n\n{_BEGIN}\n{text.rstrip(chr(10))}\n{_END}"


async def _review(
    ctx: AgentContext,
    session: AcpSession,
    work: SessionWork,
    target: ReviewTarget,
    what: str,
    focus: str | None,
) -> acp.StopReason:
    text = ""
    with work.interruptibly():
        text = await snapshot(session.cwd, target)
    if work.cancel_requested:  # a cancel while git ran: no turn
        return "cancelled"
    size = len(text.encode())
    cut = (
        f" The snapshot reached the {SNAPSHOT_LIMIT // 1024} KiB limit and was cut; the review "
        "covers only the part that fits."
        if "[snapshot cut:" in text
        else ""
    )
    await session.say(
        f"Reviewing {what} from a {max(1, size // 1024):,} KiB Git snapshot, read-only (Muse "
        f"runs with writes and shell disabled for this turn).{cut}\n\n"
    )
    parts: list[msp.TurnInputPart] = [
        msp.TextTurnInputPart(type="text", text=review_prompt(what, focus, text))
    ]
    return await run_turn(ctx, session, work, parts, extra_flags=READ_ONLY_FLAGS)


def _split(argument: str | None, default: str) -> tuple[str, str | None]:
    ref, _, focus = (argument or "").strip().partition(" ")
    return (ref or default), (focus.strip() or None)


async def run_review(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    """``/review [focus]``: the uncommitted changes."""
    focus = (argument or "").strip() or None
    target = ReviewTarget("uncommitted")
    return await _review(ctx, session, work, target, "the uncommitted changes", focus)


async def run_review_branch(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    """``/review-branch [BASE] [focus]``: HEAD's changes since its merge base with BASE."""
    base, focus = _split(argument, "@{upstream}")
    what = f"the changes on HEAD since it left {clip(base, 200)}"
    return await _review(ctx, session, work, ReviewTarget("branch", base), what, focus)


async def run_review_commit(
    ctx: AgentContext, session: AcpSession, work: SessionWork, argument: str | None
) -> acp.StopReason:
    """``/review-commit [REV] [focus]``: one commit."""
    rev, focus = _split(argument, "HEAD")
    what = f"commit {clip(rev, 200)}"
    return await _review(ctx, session, work, ReviewTarget("commit", rev), what, focus)
