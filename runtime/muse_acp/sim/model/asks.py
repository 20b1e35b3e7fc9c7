"""Approvals (``sim:approve``, ``sim:stages``, ``sim:stagerace``, ``sim:protected``): what the
host asks and how decisions apply.

Contract: an ``ApprovalAsk`` is one approval of a tool call: a ``bash`` command in one or more
stages (``shell`` subject) or a ``write_file`` (``fileAccess`` subject), with the params of its
``approval/requested``. ``ApprovalAsk.decide`` applies one decision at once, checked in the
order real hosts check: -32051 already resolved, -32053 stale requirement, -32052 choice not
offered; each accepted one is queued as a ``Decided`` for the turn to report. On hosts that race
(``race``), deciding the first stage settles the second silently, so a decision aimed at it is
stale (docs/muse-sim.md). Publishing the ask and waiting for its decisions is
``muse_acp.sim.model.approval_events``.
"""

from __future__ import annotations

import shlex
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import anyio

from muse_acp.rpc import RpcError
from muse_acp.sim.state import errors
from muse_acp.sim.state.ids import new_uuid7
from muse_acp.sim.state.session import Position
from muse_acp_wire.msp import (
    ApprovalChoice,
    ApprovalRequestedParams,
    ApprovalResolutionSummary,
    ApprovalStage,
    ApprovalSubagentOrigin,
    ApprovalSubject,
    ErrorData,
    RequirementId,
    StageEvidence,
    StageResolution,
)

__all__ = ["CHOICES", "ONCE_CHOICES", "ApprovalAsk", "Decided", "split_stages"]

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
class Decided:
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
    decided: deque[Decided] = field(default_factory=deque)
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
        self.decided.append(Decided(index, choice_id, command_id, last, snapshot, answered, raced))
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
