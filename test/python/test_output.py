"""A run's live output from the Python client against a real wrangler dev, as the TypeScript
client's (test/e2e/live-output.test.ts): ``ctx.output`` is read by a second reader while the run
goes on, a takeover shows in place with attempt 1's output, then attempt 2's, nothing lost or
repeated, and a reader that resumes from its last event misses nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from conftest import DEV_TOKEN, unique
from e2e_helpers import until


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("text", "") for e in events if e["type"] == "chunk")


def test_output_is_read_while_the_run_goes_on_and_a_takeover_shows_in_place(dev):
    """Rule: chunks reach a follower while the message runs; after the holder stops mid-output the
    follower sees attempt 1's chunks, the end of attempt 1, attempt 2 on the other machine and its
    chunks, then end; each chunk once, in order."""
    import baton

    agent = unique("py-output")
    release = asyncio.Event()

    def handler(machine: str):
        async def handle(message, ctx):
            for i in range(3):
                await ctx.output(f"{machine} token {i} ")
            await ctx.output(b"\xff\x00raw", stream="stderr")
            if machine == "a":
                await release.wait()  # a hangs mid-output until it is stopped
            return "done"

        return handle

    async def main():
        a = await baton.serve(agent, handler("a"), url=dev.url, token=DEV_TOKEN, machine="a")
        await until(lambda: a.status["kind"] == "holder", "a holds")
        b = await baton.serve(agent, handler("b"), url=dev.url, token=DEV_TOKEN, machine="b")
        await until(lambda: b.status["kind"] == "standby", "b stands by")
        events: list[dict[str, Any]] = []
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")

            async def follow() -> None:
                async for e in baton.read_output(dev.url, DEV_TOKEN, agent, mid):
                    events.append(e)

            following = asyncio.create_task(follow())
            await until(lambda: "a token 2 " in texts(events), "a's output is read while it runs")
            assert (await asyncio.to_thread(dev.message, agent, mid))["status"] == "running"
            await a.stop()
            await asyncio.wait_for(following, 30)
            return mid, events
        finally:
            await a.stop()
            await b.stop()

    mid, events = asyncio.run(main())
    kinds = [e["type"] if e["type"] != "attempt" else f"attempt {e['attempt']} {e['machine']}" for e in events]
    assert kinds[0] == "attempt 1 a"
    assert "attempt 2 b" in kinds
    assert texts(events) == "a token 0 a token 1 a token 2 b token 0 b token 1 b token 2 "
    raw = [e for e in events if e["type"] == "chunk" and e["stream"] == "stderr"]
    assert [e["attempt"] for e in raw] == [1, 2] and all("base64" in e for e in raw)
    assert events[-1] == {"type": "end", "status": "acknowledged"}

    async def resumed() -> list[dict[str, Any]]:
        cut = next(i for i, e in enumerate(events) if e["type"] == "chunk")
        rest = [e async for e in baton.read_output(dev.url, DEV_TOKEN, agent, mid, from_seq=events[cut]["seq"], follow=False)]
        return events[: cut + 1] + rest

    assert asyncio.run(resumed()) == events
