"""The kinds of host event each part of a turn handles: exact, bounded, and in step with the
code that handles them."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from muse_acp.agent.announcements import session_state
from muse_acp.agent.translation.event_kinds import (
    ASKS,
    ITEM_EVENTS,
    MAX_KINDS,
    STATE_REPORTS,
    TURN_LIFECYCLE,
    EventKinds,
)
from muse_acp.agent.turns import interactions, turn_events
from muse_acp_wire import msp


class Base:
    pass


class Derived(Base):
    pass


class Other:
    pass


def test_holds_answers_what_isinstance_answers_every_time() -> None:
    kinds = EventKinds(Base)
    for _ in range(2):  # worked out, then remembered
        assert kinds.holds(Base())
        assert kinds.holds(Derived())
        assert not kinds.holds(Other())
        assert not kinds.holds("text")


def test_answers_beyond_the_bound_are_right_and_not_kept() -> None:
    kinds = EventKinds(Base)
    many = [type(f"Kind{n}", (Base if n % 2 else object,), {}) for n in range(MAX_KINDS + 50)]
    for _ in range(2):
        assert [kinds.holds(kind()) for kind in many] == [bool(n % 2) for n in range(len(many))]
    assert len(kinds._answers) == MAX_KINDS


def _classes_checked(function: Callable[..., Any], module: Any) -> set[type]:
    """The classes ``function`` tests ``params`` against with ``isinstance``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    found: set[type] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "params"
        ):
            found.add(_resolve(node.args[1], module))
    return found


def _resolve(node: ast.expr, module: Any) -> Any:
    """The object a name or dotted name in ``module``'s source stands for."""
    if isinstance(node, ast.Attribute):
        return getattr(_resolve(node.value, module), node.attr)
    assert isinstance(node, ast.Name), ast.unparse(node)
    return vars(module)[node.id]


@pytest.mark.parametrize(
    ("function", "module", "kinds"),
    [
        (interactions.Interactions.on_event, interactions, ASKS),
        (session_state.SessionState.observe, session_state, STATE_REPORTS),
        (turn_events.TurnEvents._handle, turn_events, TURN_LIFECYCLE),
    ],
    ids=["asks", "state reports", "turn lifecycle"],
)
def test_every_event_a_handler_tells_apart_is_of_a_kind_it_is_given(
    function: Callable[..., Any], module: Any, kinds: EventKinds
) -> None:
    # A handler only sees the events its kinds hold: a class it checks for that is not among
    # them would never reach it.
    checked = _classes_checked(function, module)
    assert checked
    assert checked <= set(kinds._classes)


def test_a_delta_is_of_no_kind_so_the_short_way_may_only_translate_it() -> None:
    # ``EventRelay.relay_now`` and ``TurnEvents.take_delta`` skip the lifecycle, the asks, the
    # state reports and the item check for a delta; that is right only while a delta is none.
    delta = msp.ItemDeltaParams(
        session_id="s", view_cursor="v:s:1", item_id="i", field="text", delta="hi"
    )
    for kinds in (TURN_LIFECYCLE, ASKS, STATE_REPORTS, ITEM_EVENTS):
        assert not kinds.holds(delta)
