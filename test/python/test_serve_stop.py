"""The serve core stopping (``baton._serve_core``, as client/core/serve-core.ts): it says it is
stopping, ends its runs, declines what it never started (a hand-out that crossed its hello
``stopping``, or one still waiting for a slot) and releases the lease, on a fake link and clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from baton import LeaseLostError
from baton._serve_core import ServeCore
from core_harness import HOLDER, nothing_sent, sent, served
from transcript_replay import FakeClock, FakeLink


def test_stop_says_it_is_stopping_ends_the_runs_then_releases_the_lease_over_the_link():
    started = asyncio.Event()
    ended: list[str] = []

    async def handler(message: Any, ctx: Any) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            ended.append(repr(ctx.lost))
        return "never"

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "message", "id": 1, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": 7, "steps": []})
        await started.wait()
        stopping = asyncio.ensure_future(core.stop("serving stopped", release=True))
        told = await sent(link)
        assert told == {"type": "hello", "stopping": True}, told  # before the runs stop: nothing new is handed out meanwhile
        release = await sent(link)
        assert ended == [repr(LeaseLostError("serving stopped", "stopped"))], ended
        assert {k: v for k, v in release.items() if k != "req"} == {"type": "serve_lease", "op": "release"}, release
        link.answer({"type": "result", "op": "release", "req": release["req"], "released": True})
        await stopping
        await nothing_sent(link)  # no reply and no fail for the stopped run

    events = asyncio.run(served(body, handler))
    assert [e["type"] for e in events] == ["held", "releasing", "released"], events


def test_a_stopping_core_declines_a_hand_out_that_arrives_after_its_hello_stopping_before_it_releases():
    """As the TypeScript core: the coordinator handed it out before it read the hello; declined, it
    goes back to the queue without costing an attempt, and its handler never starts."""
    started: list[int] = []

    async def handler(message: Any, ctx: Any) -> None:
        started.append(message.id)

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        stopping = asyncio.ensure_future(core.stop("serving stopped", release=True))
        assert await sent(link) == {"type": "hello", "stopping": True}
        core.frame({"type": "message", "id": 9, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": 4, "steps": []})
        first, second = await sent(link), await sent(link)
        decline = first if first["type"] == "decline" else second
        release = second if decline is first else first
        assert {k: v for k, v in decline.items() if k != "req"} == {"type": "decline", "id": 9, "token": 4}, decline
        assert release["type"] == "serve_lease" and release["op"] == "release", release
        link.answer({"type": "result", "op": "decline", "req": decline["req"], "id": 9, "token": 4})
        link.answer({"type": "result", "op": "release", "req": release["req"], "released": True})
        await stopping
        assert started == []

    asyncio.run(served(body, handler))


def test_a_stopping_core_declines_a_hand_out_still_waiting_for_a_slot_and_stops_the_one_running():
    running = asyncio.Event()

    async def handler(message: Any, ctx: Any) -> str:
        running.set()
        await asyncio.Event().wait()
        return "never"

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "message", "id": 8, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": 3, "steps": []})
        core.frame({"type": "message", "id": 9, "text": "y", "attempt": 1, "created_at": 0, "run": True, "token": 4, "steps": []})
        await running.wait()
        stopping = asyncio.ensure_future(core.stop("serving stopped", release=True))
        assert await sent(link) == {"type": "hello", "stopping": True}
        decline = await sent(link)
        assert {k: v for k, v in decline.items() if k != "req"} == {"type": "decline", "id": 9, "token": 4}, decline
        link.answer({"type": "result", "op": "decline", "req": decline["req"], "id": 9, "token": 4})
        release = await sent(link)  # after the decline was answered
        assert release["type"] == "serve_lease", release
        link.answer({"type": "result", "op": "release", "req": release["req"], "released": True})
        await stopping

    asyncio.run(served(body, handler))


@pytest.mark.parametrize("handed_on", [True, False])
def test_a_stopping_holder_handed_on_by_the_coordinator_reports_released_though_its_release_finds_nothing(handed_on: bool):
    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        stopping = asyncio.ensure_future(core.stop("serving stopped", release=True))
        assert await sent(link) == {"type": "hello", "stopping": True}
        if handed_on:
            core.frame({**HOLDER, "held": False, "fence": HOLDER["fence"] + 1, "position": 2})
        release = await sent(link)
        link.answer({"type": "result", "op": "release", "req": release["req"], "released": False, "fence": 2})
        await stopping

    events = asyncio.run(served(body))
    assert ("released" in [e["type"] for e in events]) is handed_on, events


def test_a_stopping_core_claims_nothing_when_its_link_dials_again_during_the_stop():
    """As the TypeScript core: a reconnect while the stop runs must not claim again, or the
    coordinator (which sees a new connection, not stopping) hands it messages nothing will run."""

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        stopping = asyncio.ensure_future(core.stop("serving stopped", release=True))
        assert await sent(link) == {"type": "hello", "stopping": True}
        release = await sent(link)
        await core.opened(clock.now())
        await nothing_sent(link)
        link.answer({"type": "result", "op": "release", "req": release["req"], "released": True})
        await stopping

    asyncio.run(served(body))


def hand_out(mid: int, token: int) -> dict[str, Any]:
    return {"type": "message", "id": mid, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": token, "steps": []}


def test_a_stopping_core_declines_what_never_started_while_a_handler_that_ignores_its_cancel_still_runs():
    """As the TypeScript core: the queued message goes back at once, not after the running handler
    settles (meanwhile it would stay running on the coordinator and could time out, costing an attempt)."""
    running, let_go = asyncio.Event(), asyncio.Event()

    async def handler(message: Any, ctx: Any) -> None:
        running.set()
        while not let_go.is_set():
            try:
                await let_go.wait()
            except asyncio.CancelledError:
                pass  # a handler that ignores its abort

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        try:
            await stop_while_8_runs(core, link)
        finally:
            let_go.set()  # so a failure ends the test instead of hanging it

    async def stop_while_8_runs(core: ServeCore, link: FakeLink) -> None:
        core.frame(hand_out(8, 3))
        core.frame(hand_out(9, 4))
        await running.wait()
        stopping = asyncio.ensure_future(core.stop("serving stopped", release=True))
        assert await sent(link) == {"type": "hello", "stopping": True}
        decline = await sent(link)  # while the handler of 8 still runs
        assert {k: v for k, v in decline.items() if k != "req"} == {"type": "decline", "id": 9, "token": 4}, decline
        assert not let_go.is_set()
        link.answer({"type": "result", "op": "decline", "req": decline["req"], "id": 9, "token": 4})
        let_go.set()
        release = await sent(link)
        assert release["type"] == "serve_lease", release
        link.answer({"type": "result", "op": "release", "req": release["req"], "released": True})
        await stopping

    asyncio.run(served(body, handler))


def test_a_hand_out_arriving_while_the_hello_stopping_is_being_sent_is_declined():
    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        sending, go_on = asyncio.Event(), asyncio.Event()
        plain_send = link.send

        async def slow_send(frame: dict[str, Any]) -> bool:
            if frame["type"] == "hello":
                sending.set()
                await go_on.wait()
            return await plain_send(frame)

        link.send = slow_send  # type: ignore[method-assign]
        stopping = asyncio.ensure_future(core.stop("serving stopped", release=True))
        await sending.wait()
        core.frame(hand_out(9, 4))  # handed out before the coordinator read the hello
        go_on.set()
        frames = [await sent(link) for _ in range(3)]
        decline = next(f for f in frames if f["type"] == "decline")
        assert {k: v for k, v in decline.items() if k != "req"} == {"type": "decline", "id": 9, "token": 4}, frames
        link.answer({"type": "result", "op": "decline", "req": decline["req"], "id": 9, "token": 4})
        release = next(f for f in frames if f["type"] == "serve_lease")
        link.answer({"type": "result", "op": "release", "req": release["req"], "released": True})
        await stopping

    asyncio.run(served(body))


@pytest.mark.parametrize("release", [True, False])
def test_a_message_whose_task_had_not_begun_when_the_stop_began_never_runs_and_is_declined_when_it_said_stopping(release: bool):
    started: list[int] = []

    async def handler(message: Any, ctx: Any) -> None:
        started.append(message.id)

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        declined: list[dict[str, Any]] = []

        async def answer_link() -> None:
            while True:
                f = await link.sent.get()
                if f["type"] == "decline":
                    declined.append({k: v for k, v in f.items() if k != "req"})
                    link.answer({"type": "result", "op": "decline", "req": f["req"], "id": f["id"], "token": f["token"]})
                elif f["type"] == "serve_lease":
                    link.answer({"type": "result", "op": "release", "req": f["req"], "released": True})
                elif "req" in f:  # a run's write (were it run): refused, so nothing waits on it
                    link.answer({"type": "error", "code": "stale_token", "message": "stale", "req": f["req"]})

        answering = asyncio.ensure_future(answer_link())
        core.frame(hand_out(9, 4))  # its task is created, not yet begun
        await core.stop("serving stopped", release=release)
        answering.cancel()
        assert started == []
        assert declined == ([{"type": "decline", "id": 9, "token": 4}] if release else [])

    asyncio.run(served(body, handler))
