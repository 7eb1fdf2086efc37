"""Helpers the Python e2e tests share: poll a condition on the event loop, or a message's view
through the shared dev server, until it holds or a timeout names what never happened; serve an
agent from this process until it holds the lease, from two (a holder and a standby), or from one
until the message it posts is finished."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from conftest import DEV_TOKEN


async def until(check: Callable[[], bool], what: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.02)


async def wait_message(dev, agent: str, mid: int, done: Callable[[dict[str, Any]], bool], timeout: float = 20) -> dict[str, Any]:
    return await asyncio.to_thread(dev.wait_message, agent, mid, done, timeout)


def parked(m: dict[str, Any]) -> bool:
    return m["status"] == "parked"


async def serving(dev, agent: str, handler):
    import baton

    h = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="a")
    await until(lambda: h.status["kind"] == "holder", "a holds")
    return h


async def holder_and_standby(dev, agent: str, handler_a, handler_b, events_a=None):
    """Serves `agent` from two runners in this process: a (the holder) and b (a standby)."""
    import baton

    a = await baton.serve(agent, handler_a, url=dev.url, token=DEV_TOKEN, machine="a",
                          on_event=None if events_a is None else events_a.append)
    await until(lambda: a.status["kind"] == "holder", "a holds")
    b = await baton.serve(agent, handler_b, url=dev.url, token=DEV_TOKEN, machine="b")
    await until(lambda: b.status["kind"] == "standby", "b stands by")
    return a, b


async def serve_one(dev, agent: str, handler, events: list[dict[str, Any]], done=None, timeout: float = 30) -> dict[str, Any]:
    """Serves `agent` from one runner until the message it posts is finished (by `done`)."""
    import baton

    handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="one", on_event=events.append)
    try:
        mid = await asyncio.to_thread(dev.post_message, agent, "go")
        return await wait_message(dev, agent, mid, done or (lambda m: m["status"] in ("acknowledged", "failed", "parked")), timeout)
    finally:
        await handle.stop()


def serve_refused_run(dev, agent: str, handler, events: list, seen: list, answered: str) -> dict[str, Any]:
    """Serves `agent` from this process, posts one message, waits until `handler` has seen its write
    answered (`answered`) and the run has ended posting nothing, and returns the message's view."""
    import baton

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="refused", on_event=events.append)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            await until(lambda: bool(seen), answered)
            await until(lambda: any(e["type"] == "suppressed" for e in events), "the run ended and posted nothing")
            return await asyncio.to_thread(dev.message, agent, mid)
        finally:
            await handle.stop()

    return asyncio.run(main())
