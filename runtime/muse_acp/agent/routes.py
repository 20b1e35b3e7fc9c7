"""The agent's routes: every ACP method it serves, and the handler that serves it.

Contract: ``REQUESTS`` and ``NOTIFICATIONS`` are the frozen, typed handler tables: each binding
names its method, the params model the router validates into (the generated table's model, or
a hand-written refinement of it) and the handler, whose params type mypy checks against that
model. A method the generated tables list but this agent does not serve is a test failure, not
a silent gap. A binding that ``changes_state`` is a method whose handler makes its change
inside ``RequestContext.commit``, so a ``$/cancel_request`` either withdraws it with nothing
changed or comes too late and is ignored, never both (see ``rpc.dispatcher``).
``build_router`` binds them to one connection's ``AgentContext``.

Importing this module loads the whole agent (every handler, the sessions' machinery and the
MSP models), so ``server`` imports it only once ``initialize`` has been answered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Generic, TypeVar

from muse_acp.agent.context import AgentContext
from muse_acp.agent.handshake.capabilities import InitializeParams
from muse_acp.agent.handshake.startup import answer_initialize
from muse_acp.agent.methods import (
    auth,
    child_sessions,
    deletion,
    lifecycle,
    listing,
    prompting,
    settings,
    steering,
    stored_output,
    task_control,
)
from muse_acp.agent.translation import prompt_params
from muse_acp.rpc import NotificationRoute, RawJson, RequestContext, RequestRoute, Router
from muse_acp_wire import acp
from muse_acp_wire._base import WireModel

__all__ = [
    "CHANGES",
    "NOTIFICATIONS",
    "REQUESTS",
    "NotificationBinding",
    "RequestBinding",
    "build_router",
    "handle_initialize",
]

P = TypeVar("P", bound=WireModel)


@dataclass(frozen=True, slots=True)
class RequestBinding(Generic[P]):
    """A request method, the params model it is validated into, and its handler, which
    answers with a model (or with ``RawJson`` spliced from what Muse wrote: a stored page)."""

    method: str
    params: type[P]
    handler: Callable[[AgentContext, P, RequestContext], Awaitable[WireModel | RawJson]]
    changes_state: bool = False

    def route(self, ctx: AgentContext) -> RequestRoute[P]:
        handler = partial(self.handler, ctx)
        return RequestRoute(self.method, self.params, handler, self.changes_state)


@dataclass(frozen=True, slots=True)
class NotificationBinding(Generic[P]):
    """A notification method, its params model, and its handler."""

    method: str
    params: type[P]
    handler: Callable[[AgentContext, P], Awaitable[None]]

    def route(self, ctx: AgentContext) -> NotificationRoute[P]:
        return NotificationRoute(self.method, self.params, partial(self.handler, ctx))


async def handle_initialize(
    ctx: AgentContext, params: InitializeParams, _: RequestContext
) -> acp.InitializeResponse:
    return await answer_initialize(ctx.startup, params)


CHANGES: Final = True
"""``RequestBinding.changes_state``, spelled so the table reads."""


async def _handle_load(
    ctx: AgentContext, params: acp.LoadSessionRequest, rctx: RequestContext
) -> acp.LoadSessionResponse:
    """A child session's id names its parent (``child_sessions``); any other is the session's."""
    return await child_sessions.handle_load(ctx, params, rctx, others=lifecycle.handle_load)


async def _handle_cancel(ctx: AgentContext, params: acp.CancelNotification) -> None:
    """As ``_handle_load``: a child's cancel stops that child alone."""
    await child_sessions.handle_cancel(ctx, params, others=prompting.handle_cancel)


REQUESTS: Final[tuple[RequestBinding[Any], ...]] = (
    RequestBinding("initialize", InitializeParams, handle_initialize),
    RequestBinding("authenticate", acp.AuthenticateRequest, auth.handle_authenticate),
    RequestBinding("logout", acp.LogoutRequest, auth.handle_logout, CHANGES),
    RequestBinding("session/new", acp.NewSessionRequest, lifecycle.handle_new, CHANGES),
    RequestBinding("session/load", acp.LoadSessionRequest, _handle_load),
    RequestBinding("session/list", acp.ListSessionsRequest, listing.handle_list),
    RequestBinding("session/resume", acp.ResumeSessionRequest, lifecycle.handle_resume),
    RequestBinding("session/close", acp.CloseSessionRequest, lifecycle.handle_close, CHANGES),
    RequestBinding("session/delete", acp.DeleteSessionRequest, deletion.handle_delete, CHANGES),
    RequestBinding("session/fork", acp.ForkSessionRequest, lifecycle.handle_fork, CHANGES),
    RequestBinding(
        "session/set_mode", acp.SetSessionModeRequest, settings.handle_set_mode, CHANGES
    ),
    RequestBinding(
        "session/set_config_option",
        acp.SetSessionConfigOptionRequest,
        settings.handle_set_config_option,
        CHANGES,
    ),
    # A prompt's local commands commit (``/rename``...); its turn is cancelled as a turn is.
    RequestBinding("session/prompt", prompt_params.PromptRequest, prompting.handle_prompt, CHANGES),
    RequestBinding("_muse/readOutput", acp.MuseReadOutputRequest, stored_output.handle_read_output),
    RequestBinding(
        "_muse/steer", prompt_params.MuseSteerRequest, steering.handle_muse_steer, CHANGES
    ),
    RequestBinding("_muse/task", acp.MuseTaskRequest, task_control.handle_task, CHANGES),
    RequestBinding(
        "_session/steering",
        prompt_params.SessionSteeringRequest,
        steering.handle_compatible_steering,
        CHANGES,
    ),
)
"""Every request the agent serves (see the module contract)."""

NOTIFICATIONS: Final[tuple[NotificationBinding[Any], ...]] = (
    NotificationBinding("session/cancel", acp.CancelNotification, _handle_cancel),
)
"""Every notification the agent handles."""


def build_router(ctx: AgentContext) -> Router:
    """Routes for every handled method, typed by the bindings."""
    return Router(
        [binding.route(ctx) for binding in REQUESTS],
        [binding.route(ctx) for binding in NOTIFICATIONS],
    )
