"""The serve core alone (``baton._serve_core``, client/core/serve-core.ts): events in (opened,
frames, pongs, closed, stop), commands out (frames and requests on a fake link, a dial-again, timers
on a fake clock, blob transfers on a memory store), with no socket, no HTTP and no real time. The
first tests show the old shape is gone: no module of the core imports the socket, HTTP or the
system clock, and nothing in the client but ``_system_clock`` reads the time."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from baton import LeaseLostError
from baton._serve_core import ServeCore
from transcript_replay import FakeClock, FakeLink

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "baton"
#: The core, as client/core is in TypeScript; everything else in the package is a shell or an adapter.
CORE = ["_serve_core", "_work_loop", "_run", "_run_context", "_frame_journal", "_journal_rules", "_run_blobs", "_output",
        "_handler", "_serve_lease", "_clock", "_link"]
#: What the core may not reach, directly or through any module it imports (at the top or inside a function).
IO_MODULES = {"websockets", "urllib", "http", "socket", "ssl", "time", "subprocess", "threading", "uuid", "random"}
ADAPTERS = {"_socket", "_websocket", "_http", "_http_blobs", "_system_clock", "_output_reader", "serve", "session"}
HOLDER = {"type": "serve_lease", "held": True, "fence": 4, "claim_seq": 1, "position": 0, "ttl_ms": 60000,
          "holder": {"claim_seq": 1, "machine": "m", "since": 1000}}
STANDBY = {**HOLDER, "held": False, "claim_seq": 2, "position": 1}


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """(baton modules, other top-level modules) that ``baton.<module>`` imports anywhere in its source."""
    inner: set[str] = set()
    outer: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text("utf-8"))):
        if isinstance(node, ast.Import):
            outer.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                outer.add(str(node.module).split(".")[0])
            elif node.module:
                inner.add(node.module.split(".")[0])
            else:  # from . import x
                inner.update(alias.name for alias in node.names)
    return inner, outer - {"__future__"}


def test_no_module_of_the_core_reaches_the_socket_http_or_the_system_clock():
    seen: set[str] = set()
    todo = list(CORE)
    reached: dict[str, set[str]] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        inner, outer = imports_of(module)
        reached[module] = outer
        todo.extend(m for m in inner if (PACKAGE / f"{m}.py").exists())
    assert not seen & ADAPTERS, f"the core imports adapters: {sorted(seen & ADAPTERS)}"
    bad = {m: sorted(o & IO_MODULES) for m, o in reached.items() if o & IO_MODULES}
    assert not bad, f"core modules import I/O or time: {bad}"


def test_only_the_system_clock_reads_the_time_in_the_client():
    reading = re.compile(r"\bimport time\b|\btime\.(monotonic|time|perf_counter)\(|loop\.time\(|\.call_later\(")
    found = [f"{p.name}:{n}" for p in sorted(PACKAGE.glob("*.py")) if p.name != "_system_clock.py"
             for n, line in enumerate(p.read_text("utf-8").splitlines(), 1) if reading.search(line)]
    assert not found, f"time read outside _system_clock.py: {found}"


def test_the_core_waits_only_on_the_clock_it_is_given():
    sleeping = re.compile(r"asyncio\.sleep\((?!0\))")
    found = [f"{m}:{n}" for m in CORE for n, line in enumerate((PACKAGE / f"{m}.py").read_text("utf-8").splitlines(), 1)
             if sleeping.search(line)]
    assert not found, f"the core sleeps on the loop's clock: {found}"


# -- driving the core ------------------------------------------------------------------------------


class MemoryBlobs:
    """The Blobs adapter in memory: what was staged, and a refusal to give when told."""

    def __init__(self) -> None:
        self.staged: dict[str, bytes] = {}
        self.refuse: Any = None

    async def upload(self, agent: str, message_id: int, token: int, run_key: str, raw: bytes) -> tuple[int, Any]:
        if self.refuse is not None:
            raise self.refuse
        blob = f"b-{len(self.staged) + 1:032x}"
        self.staged[blob] = raw
        return 201, {"blob": blob, "bytes": len(raw)}

    async def download(self, agent: str, message_id: int, blob: str) -> bytes:
        return self.staged[blob]


async def sent(link: FakeLink) -> dict[str, Any]:
    async with asyncio.timeout(2):
        return await link.sent.get()


async def nothing_sent(link: FakeLink) -> None:
    for _ in range(50):
        await asyncio.sleep(0)
    assert link.sent.empty(), link.sent.get_nowait()


async def served(body: Callable[[ServeCore, FakeLink, FakeClock, list[dict[str, Any]]], Awaitable[None]],
                 handler: Any = None, blobs: Any = None, lease: dict[str, Any] = HOLDER) -> list[dict[str, Any]]:
    """Opens a core on a fake link (claim and first sync answered), tells it ``lease`` (it holds, by
    default), runs ``body``; returns the events."""
    events: list[dict[str, Any]] = []
    link, clock = FakeLink(), FakeClock()
    core = ServeCore("a", handler or (lambda message, ctx: asyncio.sleep(0)), link, clock, "runner-1", blobs=blobs,
                     on_event=events.append)
    async with asyncio.TaskGroup() as group:
        core.attach(group)
        link.is_open = True
        await core.opened(clock.now())
        assert (await sent(link))["op"] == "claim"
        sync = await sent(link)
        link.answer({"type": "result", "op": "sync", "req": sync["req"], "cursor": 0, "more": False})
        core.frame(lease)
        assert core.status["kind"] == ("holder" if lease["held"] else "standby"), core.status
        await body(core, link, clock, events)
        core.work.stopping = True
        link.close_now()
    return events


def test_a_sync_refused_rate_limited_waits_one_second_on_the_cores_clock():
    async def main() -> None:
        link, clock = FakeLink(), FakeClock()
        core = ServeCore("a", lambda m, c: asyncio.sleep(0), link, clock, "runner-1")
        async with asyncio.TaskGroup() as group:
            core.attach(group)
            link.is_open = True
            await core.opened(clock.now())
            await sent(link)  # the claim
            first = await sent(link)
            armed = clock.timers()
            link.answer({"type": "error", "code": "rate_limited", "message": "later", "req": first["req"]})
            await nothing_sent(link)
            assert clock.timers() == sorted(armed + [clock.now() + 1.0]), (armed, clock.timers())
            clock.advance(1.0)
            again = await sent(link)
            assert again["type"] == "sync" and again["after"] == 0 and again["req"] != first["req"], again
            link.close_now()

    asyncio.run(main())


@pytest.mark.parametrize("lease, reason", [(HOLDER, "the lease lapsed on the local clock"),
                                           (STANDBY, "the connection could not be proven alive in time")], ids=["holder", "standby"])
def test_a_pong_proves_for_one_ttl_from_its_ping_then_the_cores_clock_demotes_and_asks_the_link_to_dial_again(lease, reason):
    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "welcome", "agent": "a", "heartbeat_ttl_ms": 3000, "limits": {}})
        ping_sent = clock.now()
        clock.advance(0.5)
        core.pong(ping_sent)
        clock.advance(2.4)
        assert core.status["kind"] == lease_kind and link.reconnects == [], (core.status, link.reconnects)
        clock.advance(0.2)
        assert core.status == {"kind": "lapsed", "fence": 4}, core.status
        assert link.reconnects == [reason]

    lease_kind = "holder" if lease["held"] else "standby"
    events = asyncio.run(served(body, lease=lease))
    assert [e["type"] for e in events] == (["held"] if lease["held"] else []) + ["demoted"], events


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


def test_a_large_reply_is_staged_through_the_blobs_adapter_and_committed_by_the_reply_frame():
    blobs = MemoryBlobs()
    text = "y" * (40 * 1024)

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "message", "id": 2, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": 9,
                    "run_key": "k" * 16, "steps": []})
        reply = await sent(link)
        assert reply["type"] == "reply" and reply["text"] == "" and blobs.staged[reply["blob"]] == text.encode(), reply
        link.answer({"type": "result", "op": "reply", "req": reply["req"], "id": 2, "token": 9, "fence": 4, "key": reply["key"],
                     "duplicate": False})
        async with asyncio.timeout(2):
            while core.work.tasks:
                await asyncio.sleep(0)

    async def handler(message: Any, ctx: Any) -> str:
        return text

    events = asyncio.run(served(body, handler, blobs))
    assert [e["type"] for e in events] == ["held", "blob_uploaded", "ran"], events


def test_an_upload_refused_as_stale_stops_the_run_and_posts_nothing_for_it():
    from baton import CoordinatorError

    blobs = MemoryBlobs()
    blobs.refuse = CoordinatorError("stale_token", "refused", 409, {"error": "stale_token", "message": "an older token"})

    async def handler(message: Any, ctx: Any) -> str:
        return "z" * (40 * 1024)

    async def body(core: ServeCore, link: FakeLink, clock: FakeClock, events: list[dict[str, Any]]) -> None:
        core.frame({"type": "message", "id": 3, "text": "x", "attempt": 1, "created_at": 0, "run": True, "token": 9,
                    "run_key": "k" * 16, "steps": []})
        async with asyncio.timeout(2):
            while not core.work.tasks:
                await asyncio.sleep(0)
            while core.work.tasks:
                await asyncio.sleep(0)
        await nothing_sent(link)

    events = asyncio.run(served(body, handler, blobs))
    assert [(e["type"], e.get("code")) for e in events] == [("held", None), ("refused", "stale_token")], events


@pytest.mark.parametrize("missing", ["url", "token", "machine"])
def test_the_core_is_built_from_adapters_not_from_a_url_and_token(missing: str):
    import inspect

    assert missing not in inspect.signature(ServeCore).parameters
    assert not hasattr(ServeCore, "start")


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
