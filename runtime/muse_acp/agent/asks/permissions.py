"""Muse approvals as ACP permission requests, and the client's answer as a Muse choice.

Contract: an ``ApprovalView`` is what the host currently asks about one approval: the
``approval/requested`` params with the newest ``approval/updated`` laid over them. The client
is asked once per ``view.key`` (approval id and current stage index). ``permission_request``
offers exactly the host's choices, in the host's order, with ``optionId`` equal to the host's
``choiceId``, and shows the tool call as its ``PermissionCard`` says (``pending`` unless the
client already shows the card further along, and an editing tool's diff);
``choice_from_response`` and ``automatic_choice`` only ever return a ``choiceId`` the host
offered in the current view, so the adapter never invents a decision. Pure functions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from muse_acp.agent.asks.ask_failures import client_answer_failed
from muse_acp.rpc.errors import INVALID_PARAMS, RpcError
from muse_acp.text import clip
from muse_acp_wire import acp, msp

__all__ = [
    "NEW_CARD",
    "TITLE_LIMIT",
    "ApprovalView",
    "OptionKind",
    "PermissionCard",
    "automatic_choice",
    "choice_from_response",
    "option_kind",
    "permission_request",
]

OptionKind: TypeAlias = Literal["allow_once", "allow_always", "reject_once", "reject_always"]

TITLE_LIMIT: Final = 256
"""Longest permission title sent to the client."""

META_DECISION: Final = "muse/decision"
META_SCOPE: Final = "muse/scope"

APPROVING_DECISIONS: Final = frozenset(
    {"approved", "approvedForSession", "approvedPolicyAmendment"}
)
DENYING_DECISIONS: Final = frozenset({"denied", "abort", "deniedPolicyAmendment"})

# The choices an automatic mode may pick: only one-time decisions, so that no policy rule is
# persisted and no session-wide grant is made without the user seeing it.
_AUTOMATIC_DECISIONS: Final[MappingProxyType[Literal["approve", "reject"], frozenset[str]]] = (
    MappingProxyType({"approve": frozenset({"approved"}), "reject": frozenset({"denied", "abort"})})
)

# Shell words that read the same quoted or not; anything else is shown JSON-quoted so that
# spaces, quotes and control characters inside one argument stay visible.
_PLAIN_WORD: Final = re.compile(r"[A-Za-z0-9_./:@%+=,\-]+")
_TITLE_ARGUMENTS: Final = ("description", "command", "path")
_OPTION_ID_SHOWN: Final = 80


@dataclass(frozen=True, slots=True)
class ApprovalView:
    """One host approval as it stands now: the request with the latest update applied."""

    requested: msp.ApprovalRequestedParams
    requirement: msp.RequirementId
    choices: tuple[msp.ApprovalChoice, ...]
    subject: msp.ApprovalSubject

    @classmethod
    def from_requested(cls, params: msp.ApprovalRequestedParams) -> ApprovalView:
        return cls(
            params,
            params.current_requirement_id,
            tuple(params.available_choices),
            params.subject,
        )

    def updated(self, params: msp.ApprovalUpdatedParams) -> ApprovalView:
        """Return the view after ``params``; members the update leaves out are kept.

        Raises:
            ValueError: the update is for another approval.
        """
        if params.approval_id != self.approval_id:
            raise ValueError(
                f"approval/updated for {params.approval_id!r} applied to approval "
                f"{self.approval_id!r}"
            )
        choices = params.available_choices
        return ApprovalView(
            self.requested,
            params.current_requirement_id or self.requirement,
            self.choices if choices is None else tuple(choices),
            params.subject or self.subject,
        )

    @property
    def approval_id(self) -> str:
        return self.requested.approval_id

    @property
    def key(self) -> tuple[str, int]:
        """The approval id and current stage index; the client is asked once per key."""
        return (self.approval_id, self.requirement.source_index)


@dataclass(frozen=True, slots=True)
class PermissionCard:
    """What a permission request shows of its tool call's card, beyond the approval itself."""

    status: acp.ToolCallStatus | None = "pending"
    """None leaves the status as the client already shows it (a card never goes back)."""
    content: tuple[acp.ToolCallContent, ...] = ()
    locations: tuple[acp.ToolCallLocation, ...] = ()


NEW_CARD: Final = PermissionCard()
"""A tool call the client has not been shown: pending, nothing more."""


def option_kind(choice: msp.ApprovalChoice) -> OptionKind:
    """How ACP should present a host choice; unknown decisions are presented as denials."""
    once = choice.scope == "once"
    if choice.decision in APPROVING_DECISIONS:
        return "allow_once" if once else "allow_always"
    if choice.decision == "deniedPolicyAmendment" or not once:
        return "reject_always"
    return "reject_once"


def _raw_input(raw_args: str) -> dict[str, object]:
    try:
        parsed = json.loads(raw_args)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"arguments": raw_args}


def _shell_word(token: str) -> str:
    return token if _PLAIN_WORD.fullmatch(token) else json.dumps(token, ensure_ascii=False)


def _stage_title(view: ApprovalView) -> str | None:
    stages = view.subject.stages or []
    undecided = [stage for stage in stages if stage.resolution.kind != "known_safe"]
    if len(undecided) < 2:
        return None
    current = next((s for s in stages if s.requirement_id == view.requirement), None)
    if current is None or not current.argv:
        return None
    argv = " ".join(_shell_word(token) for token in current.argv)
    return f"Stage {current.position} of {current.total_stages}: {argv}"


def _title(view: ApprovalView, raw_input: dict[str, object]) -> str:
    title = _stage_title(view)
    if title is None:
        title = next(
            (
                value
                for name in _TITLE_ARGUMENTS
                if isinstance(value := raw_input.get(name), str) and value.strip()
            ),
            view.requested.tool_name,
        )
    if view.requested.protected_write:
        # Muse offers only one-time choices for these; the user must see why before deciding.
        title = f"Protected write: {title}"
    # Titles are shown on one line; a multi-line command would otherwise break the layout.
    return clip(" ".join(title.splitlines()), TITLE_LIMIT)


def permission_request(
    session_id: str,
    view: ApprovalView,
    *,
    tool_call_id: str,
    kind: acp.ToolKind | None,
    card: PermissionCard = NEW_CARD,
) -> acp.RequestPermissionRequest:
    """Build the ``session/request_permission`` params that ask the client about ``view``.

    ``kind`` None leaves the tool call's kind as the client already knows it; ``card`` adds
    the card's status, content (an editing tool's diff) and locations where it has them.
    """
    raw_input = _raw_input(view.requested.raw_args)
    tool_call = acp.ToolCallUpdate(
        tool_call_id=tool_call_id, title=_title(view, raw_input), raw_input=raw_input
    )
    # Assigning marks a member as set; members left alone stay out of the dump.
    if view.requested.tool_name:
        tool_call.name = view.requested.tool_name
    if kind is not None:
        tool_call.kind = kind
    if card.status is not None:
        tool_call.status = card.status
    if card.content:
        tool_call.content = list(card.content)
    if card.locations:
        tool_call.locations = list(card.locations)
    options = [
        acp.PermissionOption(
            option_id=choice.choice_id,
            name=choice.label,
            kind=option_kind(choice),
            field_meta={META_DECISION: choice.decision, META_SCOPE: choice.scope},
        )
        for choice in view.choices
    ]
    requested = view.requested
    meta = acp.MusePermissionMeta(
        muse_approval=acp.MuseApprovalReference(
            approval_id=requested.approval_id,
            turn_id=requested.turn_id,
            item_id=requested.item_id,
            requirement=acp.MuseApprovalStage(
                approval_id=view.requirement.approval_id,
                source_index=view.requirement.source_index,
            ),
            protected_write=bool(requested.protected_write),
        )
    )
    return acp.RequestPermissionRequest(
        session_id=session_id,
        tool_call=tool_call,
        options=options,
        field_meta=meta.model_dump(mode="json", by_alias=True, exclude_none=True),
    )


def _offered(view: ApprovalView) -> str:
    return ", ".join(repr(choice.choice_id) for choice in view.choices) or "none"


def choice_from_response(view: ApprovalView, response: acp.RequestPermissionResponse) -> str:
    """Return the host ``choiceId`` the client's answer stands for.

    A cancelled request declines the action with the host's first denying choice, preferring
    a one-time one.

    Raises:
        RpcError: ``INVALID_PARAMS`` when the client selected an option Muse did not offer;
            ``INTERNAL_ERROR`` (a ``permissionFailed`` failure) when the request was cancelled
            but Muse offered no way to deny.
    """
    outcome = response.outcome
    if isinstance(outcome, acp.SelectedRequestPermissionOutcome):
        if any(choice.choice_id == outcome.option_id for choice in view.choices):
            return outcome.option_id
        shown = clip(outcome.option_id, _OPTION_ID_SHOWN)
        raise RpcError(
            INVALID_PARAMS,
            f"the client selected permission option {shown!r}, which Muse did not offer for "
            f"approval {view.approval_id!r}; the offered options are {_offered(view)}",
        )
    denials = [choice for choice in view.choices if choice.decision in DENYING_DECISIONS]
    if not denials:
        raise client_answer_failed(
            "permission",
            "the client cancelled the permission request, and Muse offered no choice that "
            "denies the action, so it cannot be declined on the user's behalf",
        )
    return next((c for c in denials if c.scope == "once"), denials[0]).choice_id


def automatic_choice(view: ApprovalView, policy: Literal["approve", "reject"]) -> str | None:
    """Return the one-time choice an automatic mode picks, or None when Muse offers none.

    ``approve`` picks the first ``approved`` choice, ``reject`` the first ``denied`` or
    ``abort`` choice, each with scope ``once``.
    """
    decisions = _AUTOMATIC_DECISIONS[policy]
    return next(
        (
            choice.choice_id
            for choice in view.choices
            if choice.decision in decisions and choice.scope == "once"
        ),
        None,
    )
