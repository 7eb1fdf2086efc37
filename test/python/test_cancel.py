"""Cancel in the Python client against a real wrangler dev: baton.cancel of a running message
cancels its handler's task, ctx.lost is a MessageCancelledError with who and why, the message ends
``cancelled`` and the runner takes the next message; a queued one never runs; twice answers the
first; a finished one raises CoordinatorError message_finished."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import DEV_TOKEN, unique
from e2e_helpers import until


def test_cancel_stops_the_running_handler_with_who_and_why_and_the_runner_takes_the_next_message(dev):
    import baton

    agent = unique("py-cancel")
    seen: list[str] = []
    lost: list[Any] = []

    async def handle(message, ctx):
        seen.append(message.text)
        if message.text != "forever":
            return f"did {message.text}"
        try:
            await asyncio.sleep(1000)
        except asyncio.CancelledError:
            lost.append(ctx.lost)
            raise
        return "never"

    async def main():
        h = await baton.serve(agent, handle, url=dev.url, token=DEV_TOKEN, machine="a")
        try:
            await until(lambda: h.status["kind"] == "holder", "a holds")
            first = await asyncio.to_thread(dev.post_message, agent, "forever")
            second = await asyncio.to_thread(dev.post_message, agent, "the next")
            await until(lambda: "forever" in seen, "the first one runs")
            view = await asyncio.to_thread(baton.cancel, agent, first, reason="wrong one", via="cli", url=dev.url, token=DEV_TOKEN)
            await until(lambda: len(lost) == 1, "the handler's task cancelled")
            done = await asyncio.to_thread(dev.wait_message, agent, second, lambda m: m["status"] == "acknowledged", 20)
            again = await asyncio.to_thread(baton.cancel, agent, first, reason="second", url=dev.url, token=DEV_TOKEN)
            with pytest.raises(baton.CoordinatorError) as late:
                await asyncio.to_thread(baton.cancel, agent, second, url=dev.url, token=DEV_TOKEN)
            return view, done, again, late.value
        finally:
            await h.stop()

    view, done, again, late = asyncio.run(main())
    assert view["status"] == "cancelled"
    assert view["cancelled"]["reason"] == "wrong one" and view["cancelled"]["via"] == "cli"
    assert isinstance(lost[0], baton.MessageCancelledError), lost
    assert (lost[0].by, lost[0].reason, lost[0].code) == ("default", "wrong one", "cancelled")
    assert done["reply"] == "did the next"
    assert again["cancelled"]["reason"] == "wrong one"
    assert late.code == "message_finished" and late.status == 409


def test_a_queued_message_cancelled_never_runs(dev):
    import baton

    agent = unique("py-cancel-q")
    mid = dev.post_message(agent, "not this")
    view = baton.cancel(agent, mid, url=dev.url, token=DEV_TOKEN)
    assert view["status"] == "cancelled" and view["cancelled"]["reason"] is None
    with pytest.raises(ValueError):
        baton.cancel(agent, 0, url=dev.url, token=DEV_TOKEN)
