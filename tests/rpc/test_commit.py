"""A request that changes state, and the peer's cancel: the change is made whole and answered as
a success, or not made at all and answered REQUEST_CANCELLED, never both."""

from __future__ import annotations

import anyio
import pytest
from pydantic import BaseModel

from muse_acp.rpc import (
    INTERNAL_ERROR,
    REQUEST_CANCELLED,
    JsonObject,
    RequestContext,
    RequestRoute,
    Result,
    Router,
    encode_message,
)

from .harness import WAIT, RawPeer, error_code, serving

pytestmark = pytest.mark.anyio


class NoParams(BaseModel):
    pass


class Store:
    """A handler whose ``change`` request prepares (waiting on ``prepared``), then commits a
    two-step change (waiting on ``halfway`` between the steps), then finishes (waiting on
    ``finishing``); ``undeclared`` commits from a route that does not say it changes state."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.prepared = anyio.Event()
        self.halfway = anyio.Event()
        self.finishing = anyio.Event()
        self.committing = anyio.Event()
        self.committed = anyio.Event()
        self.taken_over: list[str] = []

    async def change(self, _: NoParams, ctx: RequestContext) -> Result:
        await self.prepared.wait()
        async with ctx.commit():
            self.committing.set()
            self.steps.append("first")
            await self.halfway.wait()
            self.steps.append("second")
        self.committed.set()
        await self.finishing.wait()
        return {"steps": len(self.steps)}

    async def handed_over(self, _: NoParams, ctx: RequestContext) -> Result:
        """Takes its cancellation over, as a prompt does, and commits at once."""
        ctx.on_cancel(lambda: self.taken_over.append("cancel"))
        async with ctx.commit():
            self.committing.set()
            await self.halfway.wait()
            self.steps.append("whole")
        return {}

    async def undeclared(self, _: NoParams, ctx: RequestContext) -> Result:
        async with ctx.commit():
            self.steps.append("undeclared")
        return {}

    def router(self) -> Router:
        return Router(
            [
                RequestRoute("change", NoParams, self.change, changes_state=True),
                RequestRoute("handed_over", NoParams, self.handed_over, changes_state=True),
                RequestRoute("undeclared", NoParams, self.undeclared),
            ]
        )

    def release(self) -> None:
        for event in (self.prepared, self.halfway, self.finishing):
            event.set()


def _request(request_id: int, method: str = "change") -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "method": method}


def _cancel(request_id: int) -> JsonObject:
    return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}


async def _wait(event: anyio.Event) -> None:
    with anyio.fail_after(WAIT):
        await event.wait()


async def test_a_cancel_in_the_same_write_withdraws_the_request_before_anything_changes() -> None:
    store = Store()
    store.release()
    async with serving(store.router()) as (_, peer):
        both = encode_message(_request(1)) + b"\n" + encode_message(_cancel(1))
        await peer.send_line(both)
        answer = await peer.receive()
    assert error_code(answer) == REQUEST_CANCELLED
    assert store.steps == []


async def test_a_cancel_before_the_commit_stops_the_preparation_with_nothing_changed() -> None:
    store = Store()
    async with serving(store.router()) as (_, peer):
        await peer.send_json(_request(2))
        await peer.send_json(_cancel(2))
        answer = await peer.receive()
        store.release()  # too late for the withdrawn request: it never commits
        await peer.send_json(_request(3))
        assert (await peer.receive())["result"] == {"steps": 2}
    assert error_code(answer) == REQUEST_CANCELLED
    assert store.steps == ["first", "second"]  # the later request's, and only those


async def test_a_cancel_during_the_commit_is_ignored_and_the_change_made_whole() -> None:
    store = Store()
    store.prepared.set()
    store.finishing.set()
    async with serving(store.router()) as (_, peer):
        await peer.send_json(_request(4))
        await _wait(store.committing)
        await peer.send_json(_cancel(4))
        await _expect_nothing_yet(peer)
        store.halfway.set()
        answer = await peer.receive()
    assert answer == {"jsonrpc": "2.0", "id": 4, "result": {"steps": 2}}
    assert store.steps == ["first", "second"]


async def test_a_cancel_after_the_commit_is_ignored_until_the_answer() -> None:
    store = Store()
    store.prepared.set()
    store.halfway.set()
    async with serving(store.router()) as (_, peer):
        await peer.send_json(_request(5))
        await _wait(store.committed)
        await peer.send_json(_cancel(5))
        await _expect_nothing_yet(peer)
        store.finishing.set()
        answer = await peer.receive()
    assert answer == {"jsonrpc": "2.0", "id": 5, "result": {"steps": 2}}


async def test_a_committed_request_does_not_hand_a_late_cancel_to_its_own_handler() -> None:
    store = Store()
    async with serving(store.router()) as (_, peer):
        await peer.send_json(_request(6, "handed_over"))
        await _wait(store.committing)
        await peer.send_json(_cancel(6))
        await _expect_nothing_yet(peer)
        store.halfway.set()
        answer = await peer.receive()
    assert answer == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert store.taken_over == []
    assert store.steps == ["whole"]


async def test_the_commit_runs_to_its_end_when_the_connection_closes_during_it() -> None:
    store = Store()
    store.prepared.set()
    async with serving(store.router()) as (conn, peer):
        await peer.send_json(_request(7))
        await _wait(store.committing)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(conn.aclose)
            await _wait(conn.closed)
            store.halfway.set()
    # The handler was stopped after its commit (at the wait that follows it), never inside.
    assert store.steps == ["first", "second"]
    assert store.committed.is_set()
    assert not store.finishing.is_set()


async def test_a_route_that_does_not_say_it_changes_state_cannot_commit() -> None:
    store = Store()
    async with serving(store.router()) as (_, peer):
        await peer.send_json(_request(8, "undeclared"))
        answer = await peer.receive()
    assert error_code(answer) == INTERNAL_ERROR
    assert store.steps == []


async def _expect_nothing_yet(peer: RawPeer) -> None:
    """The connection answers a ping while the committed request is still unanswered."""
    await peer.send_json({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
    answer = await peer.receive()
    assert answer["id"] == "ping", f"answered before it was released: {answer}"
