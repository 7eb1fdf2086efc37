"""A run's liveness in the Python client against a real wrangler dev, as the TypeScript client's
(test/e2e/durable-steps.test.ts): heartbeats keep a run past its heartbeat timeout, the local
heartbeat clock stops one that sends none, and a journal write refused as someone else's raises
LeaseLostError and stops the run. Steps and effects are test_steps.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from conftest import DEV_TOKEN, unique
from e2e_helpers import serve_refused_run, until, wait_message


def test_heartbeats_keep_a_run_past_its_heartbeat_timeout(dev):
    """Rule: a confirmed heartbeat moves the run's deadline (the coordinator's and the local
    clock's) a heartbeat timeout on: a 3 s run under a 1 s timeout, heartbeating every 0.3 s."""
    import baton

    agent = unique("py-beats")
    status, body = dev.request("PUT", f"/agents/{agent}/policy", {"heartbeat_timeout_seconds": 1})
    assert status == 200, (status, body)
    seen: list[Any] = []

    async def handler(message, ctx):
        seen.append((message.heartbeat_timeout_ms, message.run_key))
        started = time.monotonic()
        i = 0
        while time.monotonic() - started < 3:
            await asyncio.sleep(0.3)
            i += 1
            seen.append(await ctx.heartbeat({"beat": i}))
        return f"beat {i} times"

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="beats")
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            return await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed"))
        finally:
            await handle.stop()

    done = asyncio.run(main())
    assert done["status"] == "acknowledged" and done["attempts"] == 1, done
    assert done["reply"].startswith("beat "), done
    timeout_ms, run_key = seen[0]
    assert timeout_ms == 1000 and isinstance(run_key, str) and len(run_key) >= 16, seen[0]
    assert all(isinstance(e, (int, float)) for e in seen[1:]) and len(seen) >= 9, seen


def test_the_local_heartbeat_clock_stops_a_silent_run(dev, monkeypatch):
    """Rule: with no heartbeat confirmed within heartbeat_timeout_ms, this process's own clock
    cancels the run (revocations from the coordinator are ignored here, so only that clock can)."""
    import importlib

    import baton

    work_loop = importlib.import_module("baton._work_loop")
    monkeypatch.setattr(work_loop.WorkLoop, "revoke", lambda self, mid, token, reason: None)
    agent = unique("py-silent")
    status, body = dev.request("PUT", f"/agents/{agent}/policy", {"heartbeat_timeout_seconds": 1, "max_attempts": 1})
    assert status == 200, (status, body)
    runs: list[dict[str, Any]] = []

    async def handler(message, ctx):
        run = {"started": time.monotonic()}
        runs.append(run)
        try:
            await asyncio.sleep(4)
        finally:
            run["ended"] = time.monotonic()
            run["lost"] = ctx.lost
        return "slept"

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="silent")
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            await until(lambda: bool(runs) and "ended" in runs[0], "the first run ended", 10)
        finally:
            await handle.stop()

    asyncio.run(main())
    run = runs[0]
    assert isinstance(run["lost"], baton.LeaseLostError) and "no heartbeat within 1000 ms" in str(run["lost"]), run
    assert run["ended"] - run["started"] < 2, run


def test_a_journal_write_refused_as_someone_elses_raises_lease_lost_and_stops_the_run(dev):
    """Rule: a step refused with stale_token / not_your_message means the run lost the message:
    LeaseLostError, the run is stopped, and nothing (no reply, no fail) is posted for it."""
    import baton

    agent = unique("py-refused")
    seen: list[Any] = []
    events: list[dict[str, Any]] = []

    async def handler(message, ctx):
        ctx._run.journal.token = message.token + 1000  # writes now carry a token this run was never given
        try:
            await ctx.step("plan", lambda: "never recorded")
        except baton.LeaseLostError as err:
            seen.append((err.code, ctx.cancelled))
            return "a reply that must not be posted"
        seen.append(("no error", ctx.cancelled))
        return "recorded under a wrong token"

    m = serve_refused_run(dev, agent, handler, events, seen, "the step was answered")
    assert len(seen) == 1 and seen[0][0] in ("stale_token", "not_your_message") and seen[0][1] is True, seen
    assert m["reply"] is None and m["steps"] == [], m
    assert not [e for e in events if e["type"] in ("ran", "handler_failed")], events
