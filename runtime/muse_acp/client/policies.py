"""Answering the agent's questions: permission and elicitation handlers, and ready policies.

Contract: a ``PermissionHandler`` receives the agent's ``session/request_permission`` params and
returns the response, directly or as an awaitable; an ``ElicitationHandler`` does the same for
``elicitation/create``. ``allow_once``, ``allow_always``, ``reject_once`` and ``reject_always``
select the first offered option of that kind and answer ``cancelled`` when none is offered, so a
policy never picks an option the user did not intend; ``cancel_all`` always answers
``cancelled``. Without a handler the client answers permissions ``cancelled`` and elicitations
``cancel``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeAlias, TypeVar

from muse_acp_wire import acp

__all__ = [
    "ElicitationHandler",
    "PermissionHandler",
    "PermissionKind",
    "allow_always",
    "allow_once",
    "cancel_all",
    "cancelled_permission",
    "choose_kind",
    "declined_elicitation",
    "reject_always",
    "reject_once",
    "resolve",
]

PermissionKind: TypeAlias = Literal["allow_once", "allow_always", "reject_once", "reject_always"]

PermissionHandler: TypeAlias = Callable[
    [acp.RequestPermissionRequest],
    acp.RequestPermissionResponse | Awaitable[acp.RequestPermissionResponse],
]
ElicitationHandler: TypeAlias = Callable[
    [acp.CreateElicitationRequest],
    acp.CreateElicitationResponse | Awaitable[acp.CreateElicitationResponse],
]

_T = TypeVar("_T")


async def resolve(value: _T | Awaitable[_T]) -> _T:
    """The value a sync or async handler produced."""
    if isinstance(value, Awaitable):
        result: _T = await value
        return result
    return value


def cancelled_permission() -> acp.RequestPermissionResponse:
    """The answer to a permission request nobody decided."""
    return acp.RequestPermissionResponse(
        outcome=acp.CancelledRequestPermissionOutcome(outcome="cancelled")
    )


def declined_elicitation() -> acp.CreateElicitationResponse:
    """The answer to an elicitation nobody can show."""
    return acp.CreateElicitationResponse(action="cancel")


def choose_kind(
    kind: PermissionKind,
) -> Callable[[acp.RequestPermissionRequest], acp.RequestPermissionResponse]:
    """A policy selecting the first option of ``kind`` (``cancelled`` when none is offered)."""

    def choose(request: acp.RequestPermissionRequest) -> acp.RequestPermissionResponse:
        for option in request.options:
            if option.kind == kind:
                return acp.RequestPermissionResponse(
                    outcome=acp.SelectedRequestPermissionOutcome(
                        outcome="selected", option_id=option.option_id
                    )
                )
        return cancelled_permission()

    choose.__name__ = choose.__qualname__ = kind
    return choose


allow_once: Final = choose_kind("allow_once")
allow_always: Final = choose_kind("allow_always")
reject_once: Final = choose_kind("reject_once")
reject_always: Final = choose_kind("reject_always")


def cancel_all(request: acp.RequestPermissionRequest) -> acp.RequestPermissionResponse:
    """A policy that never decides: every permission request is answered ``cancelled``."""
    return cancelled_permission()
