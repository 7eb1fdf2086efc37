"""What the serve core's tests share (test_serve_core.py, test_serve_stop.py): lease frames, and a
core opened on a fake link and a fake clock, with its claim and first sync answered."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from baton._serve_core import ServeCore
from transcript_replay import FakeClock, FakeLink

HOLDER = {"type": "serve_lease", "held": True, "fence": 4, "claim_seq": 1, "position": 0, "ttl_ms": 60000,
          "holder": {"claim_seq": 1, "machine": "m", "since": 1000}}
STANDBY = {**HOLDER, "held": False, "claim_seq": 2, "position": 1}


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
