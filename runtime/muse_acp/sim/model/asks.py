"""Approvals (``sim:approve``, ``sim:stages``, ``sim:stagerace``, ``sim:protected``): what the
host asks and how decisions apply.

Contract: an ``ApprovalAsk`` is one approval of a tool call: a ``bash`` command in one or more
stages (``shell`` subject) or a ``write_file`` (``fileAccess`` subject). ``request_approval``
publishes it (``approval/requested``, then ``approval/request``; any reply is fine) and waits for
decisions; ``ApprovalAsk.decide`` applies one at once, checked in the order real hosts check:
-32051 already resolved, -32053 stale requirement, -32052 choice not offered. The turn emits
``approval/updated`` between stages and ``approval/resolved`` at the end. The session's approval
mode applies first (``allowAll`` runs the call unasked, never a protected write;
``denyUnmatched`` denies it). On hosts that race (``race``), deciding the first stage settles
the second silently, so a decision aimed at it is stale (docs/muse-sim.md).
"""

from __future__ import annotations

import json
import shlex
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any, Final

import anyio

from muse_acp.rpc import RawJson, RpcError, encode_message
from muse_acp.sim.model.turn import Turn
from muse_acp.sim.options.faults import exit_now
from muse_acp.sim.state import errors
from muse_acp.sim.state.context import ANSWER_WAIT
from muse_acp.sim.state.ids import new_uuid7, rfc3339_now
from muse_acp.sim.state.session import LiveSession, Position
from muse_acp_wire.msp import (
    ApprovalChange,
    ApprovalChoice,
    ApprovalRequestedParams,
    ApprovalResolutionSummary,
    ApprovalResolvedParams,
    ApprovalStage,
    ApprovalSubagentOrigin,
    ApprovalSubject,
    ApprovalUpdatedParams,
    ErrorData,
    PolicyAmendment,
    RequirementId,
    StageEvidence,
    StageResolution,
)

__all__ = [
    "CHOICES",
    "CLIENT_DECISION",
    "ONCE_CHOICES",
    "POLICY_DECISION",
    "ApprovalAsk",
    "await_decision",
    "request_approval",
    "split_stages",
]

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
ONCE_CHOICES: Final = (CHOICES[0], CHOICES[2])
"""What a protected write offers: nothing persistent."""
_STAGE_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {"allow_once": "allowOnce", "allow_session": "policyAmendment", "abort": "abort"}
)
"""Offered choice -> how the stages it settles are resolved."""
RACED_STAGE: Final = "known_safe"
"""How the host settles the stage it takes over in the stage race."""
CLIENT_DECISION: Final = "clientDecision"
"""``change.reason`` of an update caused by the client's decision."""
POLICY_DECISION: Final = "policyDecision"
"""``change.reason`` of an update caused by the host's own policy (the stage race)."""


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
    raced: tuple[str, ...] | None = None
    """The resolutions once the host settled the next stage itself (the stage race)."""


@dataclass(slots=True)
class ApprovalAsk:
    """See the module contract."""

    session_id: str
    turn_id: str
    item_id: str
    tool_call_id: str
    raw_args: str
    workspace_root: str | None
    stages: list[list[str]]
    """The argv of each stage of a shell command; empty for a file write."""
    command: str = ""
    tool_name: str = "bash"
    path: str | None = None
    """The written path of a ``fileAccess`` approval (None for a shell command)."""
    protected: bool = False
    bare: bool = False
    race: bool = False
    reasons: bool = False
    """Updates say why they happened (``change.reason``)."""
    origin: ApprovalSubagentOrigin | None = None
    """The subagent whose call this is, asked on its parent session (``subagent_sessions``)."""
    choices: tuple[ApprovalChoice, ...] = CHOICES
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
        self.resolutions = ["unresolved"] * max(1, len(self.stages))

    @classmethod
    def from_pending(cls, params: Mapping[str, Any], *, reasons: bool) -> ApprovalAsk:
        """The approval a stored ``approval/requested`` describes (with later updates applied,
        as the fold keeps it), at the stage it had reached."""
        subject = params["subject"]
        stages = subject.get("stages") or []
        ask = cls(
            session_id=params["sessionId"],
            turn_id=params["turnId"],
            item_id=params["itemId"],
            tool_call_id=params["toolCallId"],
            raw_args=params["rawArgs"],
            workspace_root=subject.get("workspaceRoot"),
            stages=[list(stage["argv"]) for stage in stages],
            command=subject.get("command") or "",
            tool_name=params["toolName"],
            path=subject.get("path"),
            protected=bool(params.get("protectedWrite")),
            reasons=reasons,
            choices=tuple(ApprovalChoice.model_validate(c) for c in params["availableChoices"]),
            approval_id=params["approvalId"],
        )
        if stages:
            ask.resolutions = [stage["resolution"]["kind"] for stage in stages]
        ask.current = params["currentRequirementId"]["sourceIndex"]
        return ask

    @property
    def requirements(self) -> int:
        return len(self.resolutions)

    def decision_of(self, choice_id: str) -> str | None:
        choice = next((c for c in self.choices if c.choice_id == choice_id), None)
        return None if choice is None else str(choice.decision)

    def requirement(self, index: int) -> RequirementId:
        return RequirementId(approval_id=self.approval_id, source_index=index)

    def subject(self, resolutions: tuple[str, ...] | list[str]) -> ApprovalSubject:
        if self.path is not None:
            return ApprovalSubject(
                kind="fileAccess", tool_name=self.tool_name, path=self.path, access="write"
            )
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
        requested = ApprovalRequestedParams(
            session_id=self.session_id,
            approval_id=self.approval_id,
            turn_id=self.turn_id,
            task_id=self.item_id,
            item_id=self.item_id,
            tool_call_id=self.tool_call_id,
            tool_name=self.tool_name,
            raw_args=self.raw_args,
            view_cursor=pos.cursor,
            source_range=pos.source_range,
            subject=self.subject(self.resolutions),
            current_requirement_id=self.requirement(0),
            available_choices=list(self.choices),
            protected_write=self.protected,
            judge_escalated=False,
        )
        if self.origin is not None:  # a member older hosts do not have: never sent unset
            requested.subagent_origin = self.origin
        return requested

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
                    approval_id=self.approval_id,
                    current_requirement_id=self.requirement(self.current),
                ),
            )
        decision = self.decision_of(choice_id)
        if decision is None:
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
        total = self.requirements
        last = choice_id != "allow_once" or index == total - 1
        for stage in range(index, total if choice_id == "allow_session" else index + 1):
            self.resolutions[stage] = _STAGE_KINDS[choice_id]
        if last:
            self.outcome = decision
        else:
            self.current += 1
        snapshot = tuple(self.resolutions)
        raced: tuple[str, ...] | None = None
        if not last and self.race and index == 0 and self.current < total - 1:
            self.resolutions[self.current] = RACED_STAGE
            self.current += 1
            raced = tuple(self.resolutions)
        self.decided.append(_Decided(index, choice_id, command_id, last, snapshot, answered, raced))
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

    def rule_preview(self) -> str:
        if self.path is not None:
            return f"write `{self.path}` in this session"
        return f"run `{self.command}` in this session"


async def _resolve(
    session: LiveSession,
    ask: ApprovalAsk,
    *,
    by: str,
    command_id: str | None,
    stamped: bool = False,
) -> None:
    """Publish ``approval/resolved``; ``stamped``: the version says when the client decided."""
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
        if ask.origin is not None:
            resolved.subagent_origin = ask.origin
        if decision == "approvedForSession":
            resolved.amendment = PolicyAmendment(
                durability="session", rule_preview=ask.rule_preview()
            )
        if command_id is not None:
            resolved.decided_by_command_id = command_id
            if stamped:
                resolved.decided_at = rfc3339_now()
        return resolved

    ask.resolved_by = by
    params = await session.emit("approval/resolved", build)
    ask.resolved_cursor = params.view_cursor


def _without_cursor(body: bytes) -> bytes:
    """The encoded params with ``viewCursor`` taken out, every other member in place."""
    params = json.loads(body)
    params.pop("viewCursor", None)
    return encode_message(params)


async def request_approval(turn: Turn, ask: ApprovalAsk) -> str:
    """Put ``ask`` to the client and wait until it is settled; returns the decision."""
    session = turn.session
    mode = session.meta.approval_mode
    if mode == "allowAll" and not ask.protected:
        return "approved"
    session.asks[ask.approval_id] = ask
    turn.phase = "waiting for an approval"
    await session.outbox.pace()
    _, body = session.record("approval/requested", ask.requested)
    sent = _without_cursor(body) if ask.bare else body
    await session.outbox.send_event("approval/requested", sent)
    if mode == "denyUnmatched":
        ask.outcome = "denied"
        await _resolve(session, ask, by="policy", command_id=None)
        return "denied"
    done = anyio.Event()
    turn.ctx.spawn(turn.ctx.ask_client, "approval/request", RawJson(sent), done)
    if turn.ctx.options.faults.exits_at("approval"):
        exit_now("exit:approval")
    return await await_decision(turn, ask, done)


async def await_decision(turn: Turn, ask: ApprovalAsk, done: anyio.Event) -> str:
    """Wait until the client's decisions settle ``ask`` (which is published and registered in
    the session's asks), reporting each non-final one; ``done`` is set once it is settled.
    A stopped turn resolves it ``abort``. Returns the decision."""
    session = turn.session

    async def abandon() -> None:
        ask.outcome = ask.outcome or "abort"
        done.set()
        await _resolve(session, ask, by="user", command_id=None)

    turn.open_items[ask.approval_id] = abandon
    turn.phase = "waiting for an approval"
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
                    await _resolve(
                        session,
                        ask,
                        by="user",
                        command_id=decided.command_id,
                        stamped=turn.ctx.profile.declares("ApprovalResolvedParams", "decided_at"),
                    )
                    return ask.outcome or "abort"
                await _report(session, ask, decided)
    finally:
        done.set()
        turn.phase = "the model was working"


async def _report(session: LiveSession, ask: ApprovalAsk, decided: _Decided) -> None:
    """The ``approval/updated`` of a non-final decision; in the stage race, also the update of
    the stage the host settled itself, recorded in the same instant but never sent."""
    await session.outbox.pace()
    _, body = session.record("approval/updated", partial(_updated, ask, decided))
    if decided.raced is not None:
        session.record("approval/updated", partial(_raced, ask, decided))
    await session.outbox.send_event("approval/updated", body)


def _change(ask: ApprovalAsk, index: int, choice_id: str | None, reason: str) -> ApprovalChange:
    decision = ask.decision_of(choice_id) if choice_id is not None else "approved"
    change = ApprovalChange(
        kind="stageResolved", requirement_id=ask.requirement(index), decision=decision
    )
    if choice_id is not None:
        change.choice_id = choice_id
    if ask.reasons:
        change.reason = reason
    return change


def _updated(ask: ApprovalAsk, decided: _Decided, pos: Position) -> ApprovalUpdatedParams:
    """The ``approval/updated`` params reporting one non-final decision."""
    return ApprovalUpdatedParams(
        session_id=ask.session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        approval_id=ask.approval_id,
        current_requirement_id=ask.requirement(decided.index + 1),
        subject=ask.subject(decided.resolutions),
        available_choices=list(ask.choices),
        change=_change(ask, decided.index, decided.choice_id, CLIENT_DECISION),
    )


def _raced(ask: ApprovalAsk, decided: _Decided, pos: Position) -> ApprovalUpdatedParams:
    """The unsent ``approval/updated`` of the stage the host settled itself."""
    assert decided.raced is not None
    return ApprovalUpdatedParams(
        session_id=ask.session_id,
        view_cursor=pos.cursor,
        source_range=pos.source_range,
        approval_id=ask.approval_id,
        current_requirement_id=ask.requirement(decided.index + 2),
        subject=ask.subject(decided.raced),
        available_choices=list(ask.choices),
        change=_change(ask, decided.index + 1, None, POLICY_DECISION),
    )
