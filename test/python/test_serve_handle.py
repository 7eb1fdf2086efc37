"""Serving from this process against a real wrangler dev (baton.serve's handle): a refused token
and a token without the serve scope end serving with the coordinator's error, a park and its
resume hand the checkpoint over, and a new connection replays the history after its cursor to
on_message. Serve processes (handoff, failover, a stopped holder) are test_serve.py."""

from __future__ import annotations

import asyncio

from conftest import DEV_TOKEN, READ_ONLY_TOKEN, unique


def _serving_error(dev, agent: str, token: str):
    """The error a serve handle ends with when the coordinator refuses its token."""
    import baton
    import pytest

    async def main():
        handle = await baton.serve(agent, lambda m, c: None, url=dev.url, token=token, machine="m")
        with pytest.raises(baton.CoordinatorError) as info:
            async with asyncio.timeout(10):
                await handle.done
        await handle.stop()
        return info.value

    return asyncio.run(main())


def test_a_refused_token_ends_serving_with_coordinator_error(dev):
    err = _serving_error(dev, "refused", "wrong")
    assert err.status == 401


def test_a_token_without_the_serve_scope_ends_serving_with_forbidden(dev):
    err = _serving_error(dev, "scoped", READ_ONLY_TOKEN)
    assert (err.status, err.code) == (403, "forbidden")
    assert "token wall of account dev lacks the serve scope" in str(err)


def test_park_resume_and_checkpoint_handover(dev):
    """In one process: A parks a message with a checkpoint, a resume brings it back with the input
    and the checkpoint; A's agent checkpoint is handed to B when A stops and B takes over."""
    import baton

    agent = unique("py-park")
    seen = []

    async def handler_a(message, ctx):
        seen.append(("a", message.attempt, ctx.message_checkpoint, message.resume_input))
        if message.resume_input is None:
            await ctx.park(checkpoint={"step": 2}, deadline_seconds=60)
            return "ignored: parked"
        await ctx.save_checkpoint({"handled": message.id})
        return f"resumed with {message.resume_input} from step {ctx.message_checkpoint['step']}"

    async def handler_b(message, ctx):
        seen.append(("b", ctx.checkpoint))
        return f"b saw {ctx.checkpoint}"

    async def main():
        a = await baton.serve(agent, handler_a, url=dev.url, token=DEV_TOKEN, machine="a")
        mid = await asyncio.to_thread(dev.post_message, agent, "job")
        parked = await asyncio.to_thread(dev.wait_message, agent, mid, lambda m: m["status"] == "parked")
        assert parked["checkpoint"] == {"step": 2} and parked["reply"] is None
        status, _ = await asyncio.to_thread(dev.request, "POST", f"/agents/{agent}/messages/{mid}/resume", {"input": "go"})
        assert status == 200
        done = await asyncio.to_thread(dev.wait_message, agent, mid, lambda m: m["status"] == "acknowledged")
        assert done["reply"] == "resumed with go from step 2"
        b = await baton.serve(agent, handler_b, url=dev.url, token=DEV_TOKEN, machine="b")
        async with asyncio.timeout(10):
            while b.status["kind"] != "standby":  # b's claim is in: a's release hands it the lease at once
                await asyncio.sleep(0.02)
        await a.stop()
        second = await asyncio.to_thread(dev.post_message, agent, "next")
        m = await asyncio.to_thread(dev.wait_message, agent, second, lambda m: m["status"] == "acknowledged")
        await b.stop()
        return m

    m = asyncio.run(main())
    assert m["reply"] == f"b saw {{'handled': 1}}"
    assert seen[0] == ("a", 1, None, None)
    assert seen[1] == ("a", 2, {"step": 2}, "go")


def test_a_new_connection_replays_the_history_after_its_cursor_to_on_message(dev):
    """Rule: on every connect the client replays missed history one sync page at a time (as the
    TypeScript core does): on_message sees each finished message after ``cursor``, and none before."""
    import baton

    agent = unique("py-history")
    first, second = dev.post_message(agent, "one"), dev.post_message(agent, "two")
    seen: list[baton.Message] = []

    async def main():
        async with baton.serve(agent, lambda m, ctx: asyncio.sleep(0, f"did {m.text}"), url=dev.url, token=DEV_TOKEN,
                               machine="runs"):
            await asyncio.to_thread(dev.wait_message, agent, second, lambda m: m["status"] == "acknowledged")
        async with baton.serve(agent, lambda m, ctx: asyncio.sleep(0, "unused"), url=dev.url, token=DEV_TOKEN,
                               machine="reads", cursor=first, on_message=seen.append):
            async with asyncio.timeout(10):
                while second not in [m.id for m in seen]:
                    await asyncio.sleep(0.02)

    asyncio.run(main())
    assert [m.id for m in seen] == [second] and seen[0].text == "two", seen
