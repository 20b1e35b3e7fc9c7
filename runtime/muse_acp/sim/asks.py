"""Approvals (``sim:approve``, ``sim:stages``): what the host asks and how decisions apply.

Contract: an ``ApprovalAsk`` is one approval of a ``bash`` tool call, in one or more stages.
``request_approval`` (turn side) publishes it (``approval/requested``, then the
``approval/request`` server request with the same params; a ``{}`` reply, an error or no reply
are all fine) and waits for decisions; ``ApprovalAsk.decide`` (``approval/decide`` side) checks
and applies a decision at once, in the order real hosts check: -32051 already resolved, -32053
stale requirement, -32052 choice not offered. The turn emits what each decision causes once its
answer is written: ``approval/updated`` (``change.kind`` ``stageResolved`` and the next
``currentRequirementId``) between stages, ``approval/resolved`` at the end.

Choices: ``allow_once`` approves the current stage; ``allow_session`` approves every remaining
stage for the session; ``abort`` rejects the whole command. The session's approval mode applies
first: ``allowAll`` runs the command unasked, ``denyUnmatched`` has the policy deny it.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Final

import anyio

from muse_acp.rpc import RpcError
from muse_acp.sim import errors
from muse_acp.sim.context import ANSWER_WAIT
from muse_acp.sim.faults import exit_now
from muse_acp.sim.ids import new_uuid7, rfc3339_now
from muse_acp.sim.session import LiveSession, Position
from muse_acp.sim.turn import Turn
from muse_acp_wire.msp import (
    ApprovalChange,
    ApprovalChoice,
    ApprovalRequestedParams,
    ApprovalResolutionSummary,
    ApprovalResolvedParams,
    ApprovalStage,
    ApprovalSubject,
    ApprovalUpdatedParams,
    ErrorData,
    PolicyAmendment,
    RequirementId,
    StageEvidence,
    StageResolution,
)

__all__ = ["CHOICES", "ApprovalAsk", "request_approval", "split_stages"]

CHOICES: Final = (
    ApprovalChoice(choice_id="allow_once", label="Allow once", decision="approved", scope="once"),
    ApprovalChoice(
        choice_id="allow_session",
        label="Allow for the rest of the session",
        decision="approvedForSession",
        scope="session",
    ),
    ApprovalChoice(
        choice_id="abort",
        label="Reject the command",
        decision="abort",
        scope="once",
        accepts_feedback=True,
    ),
)
_DECISIONS: Final[Mapping[str, str]] = MappingProxyType(
    {choice.choice_id: str(choice.decision) for choice in CHOICES}
)
"""Offered choice -> the decision it makes."""
_STAGE_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {"allow_once": "allowOnce", "allow_session": "policyAmendment", "abort": "abort"}
)
"""Offered choice -> how the stages it settles are resolved."""


def _argv(part: str) -> list[str]:
    try:
        return shlex.split(part)
    except ValueError:  # unbalanced quotes: still a command, just not a well-formed one
        return part.split()


def split_stages(command: str, count: int) -> list[list[str]]:
    """The argv of each of ``count`` stages: the ``&&``/``;``-separated parts of ``command``,
    the last part repeated when there are fewer parts than stages."""
    parts = [part.strip() for chunk in command.split("&&") for part in chunk.split(";")]
    words = [argv for argv in (_argv(part) for part in parts if part) if argv] or [[command]]
    return [words[min(index, len(words) - 1)] for index in range(count)]


@dataclass(frozen=True, slots=True)
class _Decided:
    """One accepted decision, as the turn will report it."""

    index: int
    choice_id: str
    command_id: str
    terminal: bool
    resolutions: tuple[str, ...]
    answered: anyio.Event


@dataclass(slots=True)
class ApprovalAsk:
    """See the module contract."""

    session_id: str
    turn_id: str
    item_id: str
    tool_call_id: str
    raw_args: str
    command: str
    workspace_root: str | None
    stages: list[list[str]]
    approval_id: str = field(default_factory=new_uuid7)
    resolutions: list[str] = field(default_factory=list)
    current: int = 0
    outcome: str | None = None
    """The decision once the approval is settled (``approved``, ``approvedForSession``...)."""
    resolved_by: str = "user"
    resolved_cursor: str | None = None
    decided: deque[_Decided] = field(default_factory=deque)
    wake: anyio.Event = field(default_factory=anyio.Event)

    def __post_init__(self) -> None:
        self.resolutions = ["unresolved"] * len(self.stages)

    def requirement(self, index: int) -> RequirementId:
        return RequirementId(approval_id=self.approval_id, source_index=index)

    def subject(self, resolutions: tuple[str, ...] | list[str]) -> ApprovalSubject:
        total = len(self.stages)
        stages = [
            ApprovalStage(
                requirement_id=self.requirement(index),
                position=index + 1,
                total_stages=total,
                argv=argv,
                argv_complete=True,
                resolution=StageResolution(kind=resolutions[index]),
            )
            for index, argv in enumerate(self.stages)
        ]
        return ApprovalSubject(
            kind="shell", command=self.command, workspace_root=self.workspace_root, stages=stages
        )

    def requested(self, pos: Position) -> ApprovalRequestedParams:
        return ApprovalRequestedParams(
            session_id=self.session_id,
            approval_id=self.approval_id,
            turn_id=self.turn_id,
            task_id=self.item_id,
            item_id=self.item_id,
            tool_call_id=self.tool_call_id,
            tool_name="bash",
            raw_args=self.raw_args,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            subject=self.subject(self.resolutions),
            current_requirement_id=self.requirement(0),
            available_choices=list(CHOICES),
            protected_write=False,
            judge_escalated=False,
        )

    def decide(
        self, requirement: RequirementId, choice_id: str, command_id: str, answered: anyio.Event
    ) -> bool:
        """Apply a client decision; returns whether it settles the approval.

        Raises:
            RpcError: -32051, -32053 or -32052 (checked in that order).
        """
        if self.outcome is not None:
            raise self.already_resolved()
        if requirement.approval_id != self.approval_id or requirement.source_index != self.current:
            raise errors.host_error(
                f"approval {self.approval_id} has moved past that stage",
                ErrorData(
                    kind="approvalRequirementStale",
                    retryable=False,
                    approval_id=self.approval_id,
                    current_requirement_id=self.requirement(self.current),
                ),
            )
        if choice_id not in _DECISIONS:
            raise errors.host_error(
                f"approval {self.approval_id} does not offer the choice {choice_id!r}",
                ErrorData(
                    kind="approvalChoiceInvalid",
                    retryable=False,
                    approval_id=self.approval_id,
                    choice_id=choice_id,
                ),
            )
        index = self.current
        last = choice_id != "allow_once" or index == len(self.stages) - 1
        for stage in range(index, len(self.stages) if choice_id == "allow_session" else index + 1):
            self.resolutions[stage] = _STAGE_KINDS[choice_id]
        if last:
            self.outcome = _DECISIONS[choice_id]
        else:
            self.current += 1
        snapshot = tuple(self.resolutions)
        self.decided.append(_Decided(index, choice_id, command_id, last, snapshot, answered))
        self.wake.set()
        return last

    def already_resolved(self) -> RpcError:
        summary = ApprovalResolutionSummary(
            decision=self.outcome or "abort", resolved_by=self.resolved_by
        )
        if self.resolved_cursor is not None:
            summary.view_cursor = self.resolved_cursor
        return errors.host_error(
            f"approval {self.approval_id} is already settled",
            ErrorData(
                kind="approvalAlreadyResolved",
                retryable=False,
                approval_id=self.approval_id,
                resolution=summary,
            ),
        )

    def evidence(self, resolutions: tuple[str, ...] | list[str]) -> list[StageEvidence]:
        return [
            StageEvidence(
                requirement_id=self.requirement(index),
                position=index + 1,
                total_stages=len(self.stages),
                argv=argv,
                resolution=StageResolution(kind=resolutions[index]),
            )
            for index, argv in enumerate(self.stages)
        ]


async def _resolve(
    session: LiveSession, ask: ApprovalAsk, *, by: str, command_id: str | None
) -> None:
    decision = ask.outcome or "abort"
    allowed = decision in ("approved", "approvedForSession")

    def build(pos: Position) -> ApprovalResolvedParams:
        resolved = ApprovalResolvedParams(
            session_id=ask.session_id,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            approval_id=ask.approval_id,
            item_id=ask.item_id,
            turn_id=ask.turn_id,
            decision=decision,
            policy_result="allow" if allowed else "deny",
            resolved_by=by,
            stage_evidence=ask.evidence(ask.resolutions),
        )
        if decision == "approvedForSession":
            resolved.amendment = PolicyAmendment(
                durability="session", rule_preview=f"run `{ask.command}` in this session"
            )
        if command_id is not None:
            resolved.decided_by_command_id = command_id
            resolved.decided_at = rfc3339_now()
        return resolved

    ask.resolved_by = by
    params = await session.emit("approval/resolved", build)
    ask.resolved_cursor = params.view_cursor


async def request_approval(turn: Turn, ask: ApprovalAsk) -> str:
    """Put ``ask`` to the client and wait until it is settled; returns the decision."""
    session = turn.session
    mode = session.meta.approval_mode
    if mode == "allowAll":
        return "approved"
    session.asks[ask.approval_id] = ask
    turn.phase = "waiting for an approval"
    params = await session.emit("approval/requested", ask.requested)
    if mode == "denyUnmatched":
        ask.outcome = "denied"
        await _resolve(session, ask, by="policy", command_id=None)
        return "denied"
    done = anyio.Event()

    async def abandon() -> None:
        ask.outcome = ask.outcome or "abort"
        done.set()
        await _resolve(session, ask, by="user", command_id=None)

    turn.open_items[ask.approval_id] = abandon
    turn.ctx.spawn(turn.ctx.ask_client, "approval/request", params, done)
    if turn.ctx.options.faults.exits_at("approval"):
        exit_now("exit:approval")
    try:
        while True:
            await ask.wake.wait()
            ask.wake = anyio.Event()
            while ask.decided:
                decided = ask.decided.popleft()
                with anyio.move_on_after(ANSWER_WAIT):
                    await decided.answered.wait()
                if decided.terminal:
                    del turn.open_items[ask.approval_id]
                    await _resolve(session, ask, by="user", command_id=decided.command_id)
                    return ask.outcome or "abort"
                await session.emit("approval/updated", partial(_updated, ask, decided))
    finally:
        done.set()
        turn.phase = "the model was working"


def _updated(ask: ApprovalAsk, decided: _Decided, pos: Position) -> ApprovalUpdatedParams:
    """The ``approval/updated`` params reporting one non-final decision."""
    return ApprovalUpdatedParams(
        session_id=ask.session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        approval_id=ask.approval_id,
        current_requirement_id=ask.requirement(decided.index + 1),
        subject=ask.subject(decided.resolutions),
        available_choices=list(CHOICES),
        change=ApprovalChange(
            kind="stageResolved",
            requirement_id=ask.requirement(decided.index),
            choice_id=decided.choice_id,
            decision=_DECISIONS[decided.choice_id],
        ),
    )
