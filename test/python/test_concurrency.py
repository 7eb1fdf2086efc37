"""serve(concurrency=..., priority=...): several messages at once per runner (pool mode across two
Python runners, and single mode on one), and a runner of higher priority taking the lease after
the coordinator's hysteresis (1 s in the test's wrangler dev)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from conftest import DEV_TOKEN, event_is, python_agent, read_sink, status_is, unique, wait_sink, wait_until


def by_phase(lines, phase):
    return [l for l in lines if l["phase"] == phase]


def test_claim_frame_and_option_checks():
    import baton
    from baton._serve_lease import claim_frame
    from baton._wire import valid_client_frame

    async def main():
        for bad in ({"concurrency": 0}, {"concurrency": 65}, {"concurrency": True}, {"priority": 1001},
                    {"priority": -1001}, {"priority": 1.5}):
            with pytest.raises(ValueError):
                await baton.serve("x", lambda m, c: None, url="http://127.0.0.1:9", token="t", machine="m", **bad)
        handle = await baton.serve("x", lambda m, c: None, url="http://127.0.0.1:9", token="t", machine="m",
                                   runner_id="r1", concurrency=4, priority=-7)
        await handle.stop()

    asyncio.run(main())
    plain, tuned = claim_frame("r1", 1, 0), claim_frame("r1", 4, -7)
    assert plain == {"type": "serve_lease", "op": "claim", "runner_id": "r1"}  # as before: no defaults sent
    assert tuned == {"type": "serve_lease", "op": "claim", "runner_id": "r1", "concurrency": 4, "priority": -7}
    assert valid_client_frame(plain) and valid_client_frame(tuned)


def test_pool_mode_two_runners_of_concurrency_2_run_4_messages_at_once(dev, procs, tmp_path: Path):
    agent = unique("py-pool")
    status, body = dev.request("PUT", f"/agents/{agent}/policy", {"mode": "pool"})
    assert status == 200, (status, body)
    sink = tmp_path / "sink.jsonl"
    a = python_agent(dev, agent, "a", sink, CONCURRENCY="2", RUN_SLEEP="1")
    procs.append(a)
    a.wait_for(status_is("holder"))
    b = python_agent(dev, agent, "b", sink, CONCURRENCY="2", RUN_SLEEP="1")
    procs.append(b)
    b.wait_for(status_is("standby"))
    wait_until(lambda: sum(1 for c in dev.request("GET", f"/agents/{agent}/presence")[1]["connections"] if c.get("slots") == 2) == 2,
               "both runners' claims (with their slots) are registered")

    started = time.monotonic()
    ids = [dev.post_message(agent, f"job {i}") for i in range(4)]
    done = [dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged", timeout=15) for mid in ids]
    took = time.monotonic() - started
    print(f"python pool, 2 runners x 2 slots, 4 messages of 1 s: {took:.2f} s")
    assert took < 2.8, f"4 messages of 1 s on 4 slots took {took:.2f} s"
    lines = wait_sink(sink, lambda ls: len(by_phase(ls, "end")) >= 4)
    lines = read_sink(sink)  # every run ended (4 ends): a fifth start could only come from a second hand-out
    for mid, m in zip(ids, done):
        assert [l["tag"] for l in by_phase(lines, "start") if l["id"] == mid] == [m["reply"].split()[0]], (mid, lines)
        assert len([l for l in by_phase(lines, "end") if l["id"] == mid]) == 1
        assert m["attempts"] == 1 and m["reply"] == f"{m['reply'].split()[0]} did: job {ids.index(mid)}"
    assert {l["tag"] for l in by_phase(lines, "start")} == {"a", "b"}, lines
    assert not [l for p in (a, b) for l in p.lines if l.get("line") == "event" and l["event"].get("type") in ("handler_failed", "refused")]


def test_concurrency_in_single_mode_each_message_fails_or_replies_on_its_own(dev):
    """One holder with 3 slots: three messages overlap; the one whose handler raises is failed
    (a fail, never a reply), the others are replied, each under its own token."""
    import baton

    agent = unique("py-slots")
    dev.request("PUT", f"/agents/{agent}/policy", {"max_attempts": 1})
    active = 0
    peak = 0
    events = []

    async def handler(message, ctx):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        try:
            await asyncio.sleep(1)
            if message.text == "boom":
                raise RuntimeError("boom on purpose")
            return f"did {message.text} with token {ctx.token}"
        finally:
            active -= 1

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="slots", concurrency=3,
                                   on_event=events.append)
        for _ in range(100):
            if handle.status["kind"] == "holder":
                break
            await asyncio.sleep(0.05)
        started = time.monotonic()
        ids = [await asyncio.to_thread(dev.post_message, agent, t) for t in ("one", "boom", "two")]
        final = [await asyncio.to_thread(dev.wait_message, agent, mid, lambda m: m["status"] in ("acknowledged", "failed"), 15)
                 for mid in ids]
        took = time.monotonic() - started
        await handle.stop()
        return final, took

    (one, boom, two), took = asyncio.run(main())
    assert peak == 3, peak
    assert took < 2.5, took
    assert one["status"] == "acknowledged" and one["reply"].startswith("did one with token ")
    assert two["status"] == "acknowledged" and two["reply"].startswith("did two with token ")
    assert boom["status"] == "failed" and boom["reply"] is None and boom["error"] == "boom on purpose"
    assert len([e for e in events if e["type"] == "ran"]) == 2
    assert [e["id"] for e in events if e["type"] == "handler_failed"] == [boom["id"]]


def test_a_higher_priority_runner_takes_the_lease_after_the_hysteresis(dev, procs, tmp_path: Path):
    agent = unique("py-prio")
    sink = tmp_path / "sink.jsonl"
    a = python_agent(dev, agent, "a", sink)
    procs.append(a)
    a_held = a.wait_for(event_is("held"))
    b = python_agent(dev, agent, "b", sink, PRIORITY="10")
    procs.append(b)
    b_standby = b.wait_for(status_is("standby"))
    b_held = b.wait_for(event_is("held"), timeout=15)
    waited = b_held["t"] - b_standby["t"]
    print(f"python priority 10 took the lease from priority 0 after {waited * 1000:.0f} ms as a standby (hysteresis 1 s)")
    assert b_held["event"]["fence"] > a_held["event"]["fence"]
    assert 0.5 <= waited < 8, waited
    a.wait_for(lambda l: status_is("standby")(l) and l["t"] >= a_held["t"], timeout=10)
    assert not [l for l in a.lines if event_is("demoted")(l)]

    mid = dev.post_message(agent, "who")
    m = dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged")
    assert m["reply"] == "b did: who"
    assert [l["tag"] for l in by_phase(read_sink(sink), "start")] == ["b"]
