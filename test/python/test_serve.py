"""Python serve processes against a real wrangler dev: handoff, kill -9 failover, and a
SIGSTOPped holder that demotes itself and whose late write is refused. Serving from this
process (baton.serve's handle) is test_serve_handle.py."""

from __future__ import annotations

import asyncio
import json
import signal
import time
from pathlib import Path

from baton._websocket import open_socket

from conftest import DEV_TOKEN, event_is, python_agent, read_sink, status_is, unique, wait_sink


def starts(lines, mid):
    return [l for l in lines if l["id"] == mid and l["phase"] == "start"]


def test_handoff_between_two_python_processes(dev, procs, tmp_path: Path):
    agent = unique("py-handoff")
    sink = tmp_path / "sink.jsonl"
    a = python_agent(dev, agent, "a", sink)
    procs.append(a)
    a.wait_for(status_is("holder"))
    b = python_agent(dev, agent, "b", sink)
    procs.append(b)
    b.wait_for(status_is("standby"))

    first = dev.post_message(agent, "one")
    m = dev.wait_message(agent, first, lambda m: m["status"] == "acknowledged")
    assert m["reply"] == "a did: one"

    a.signal(signal.SIGTERM)
    releasing = a.wait_for(event_is("releasing"))
    held = b.wait_for(event_is("held"))
    a.wait_for(lambda l: l.get("line") == "stopped")
    handoff_ms = (held["t"] - releasing["t"]) * 1000
    print(f"python handoff: {handoff_ms:.0f} ms")
    assert held["event"]["fence"] > releasing["event"]["fence"]
    assert handoff_ms < 2000, "a release must hand over at once, not after the TTL"

    second = dev.post_message(agent, "two")
    m = dev.wait_message(agent, second, lambda m: m["status"] == "acknowledged")
    assert m["reply"] == "b did: two"
    lines = read_sink(sink)
    assert [l["tag"] for l in starts(lines, first)] == ["a"]
    assert [l["tag"] for l in starts(lines, second)] == ["b"]


def test_kill_9_failover(dev, procs, tmp_path: Path):
    agent = unique("py-kill9")
    sink = tmp_path / "sink.jsonl"
    a = python_agent(dev, agent, "a", sink, RUN_SLEEP="30")
    procs.append(a)
    a.wait_for(status_is("holder"))
    b = python_agent(dev, agent, "b", sink)
    procs.append(b)
    b.wait_for(status_is("standby"))

    mid = dev.post_message(agent, "work")
    wait_sink(sink, lambda ls: len(starts(ls, mid)) == 1)
    killed_at = time.time()
    a.signal(signal.SIGKILL)
    held = b.wait_for(event_is("held"), timeout=15)
    m = dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged", timeout=20)
    assert m["reply"] == "b did: work"
    assert m["attempts"] >= 2
    runs = starts(read_sink(sink), mid)
    assert [r["tag"] for r in runs] == ["a", "b"]
    assert runs[1]["token"] > runs[0]["token"]
    assert runs[1]["fence"] > runs[0]["fence"]
    print(f"python kill -9 failover: {(held['t'] - killed_at) * 1000:.0f} ms (heartbeat TTL 2 s)")


async def late_write(url: str, agent: str, mid: int, token: int) -> dict:
    """A raw connection that writes a reply for the message under the old holder's token."""
    ws_url = url.replace("http://", "ws://") + f"/agents/{agent}/serve?machine=late"
    ws = await open_socket(ws_url, DEV_TOKEN, open_timeout=10, max_size=1 << 22)  # whichever websockets is installed
    try:
        await ws.send(json.dumps({"type": "reply", "id": mid, "token": token, "key": f"{mid}:reply", "text": "late a", "req": "late"}))
        async with asyncio.timeout(10):
            async for raw in ws:
                frame = json.loads(raw)
                if frame.get("req") == "late":
                    return frame
        raise AssertionError("the connection closed before the late write was answered")
    finally:
        await ws.close(1)


def test_sigstopped_holder_demotes_itself_and_its_late_write_is_refused(dev, procs, tmp_path: Path):
    agent = unique("py-sigstop")
    sink = tmp_path / "sink.jsonl"
    # A ignores its cancellation and returns a reply anyway: the client must not post it.
    a = python_agent(dev, agent, "a", sink, RUN_SLEEP="4", SWALLOW="1")
    procs.append(a)
    a.wait_for(status_is("holder"))
    b = python_agent(dev, agent, "b", sink)
    procs.append(b)
    b.wait_for(status_is("standby"))

    mid = dev.post_message(agent, "work")
    (a_run,) = wait_sink(sink, lambda ls: len(starts(ls, mid)) == 1)
    a.signal(signal.SIGSTOP)
    try:
        b.wait_for(event_is("held"), timeout=15)
        m = dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged", timeout=20)
        assert m["reply"] == "b did: work"
        time.sleep(4.5)  # A's handler sleep is long over by A's clock when it wakes
    finally:
        a.signal(signal.SIGCONT)
    demoted = a.wait_for(event_is("demoted"), timeout=10)
    a.wait_for(lambda l: l.get("line") == "handler_cancelled" and l["id"] == mid, timeout=10)
    a.wait_for(lambda l: l.get("line") == "event" and l["event"].get("type") == "suppressed" and l["event"]["id"] == mid, timeout=10)
    assert "lapsed" in demoted["event"]["reason"] or "proven" in demoted["event"]["reason"]
    # A posted nothing for the message after waking: no reply, no fail was sent (suppressed is the run's last word).
    posted = [l for l in a.lines if l.get("line") == "event" and l["event"].get("type") in ("ran", "refused", "handler_failed")]
    assert posted == [], posted
    # And the coordinator itself refuses a late write under A's token.
    answer = asyncio.run(late_write(dev.url, agent, mid, a_run["token"]))
    assert answer["type"] == "error" and answer["code"] in ("stale_token", "not_your_message", "message_not_running"), answer
    m = dev.message(agent, mid)
    assert m["reply"] == "b did: work" and m["acked_token"] != a_run["token"]
    # A rejoined as a standby after demoting itself.
    a.wait_for(lambda l: l is not demoted and l.get("line") == "status" and l["status"].get("kind") == "standby" and l["t"] > demoted["t"], timeout=10)


def test_example_agent_serves_and_checkpoints(dev, procs):
    agent = unique("py-example")
    import os
    import sys
    from conftest import ROOT, Proc

    env = {**os.environ, "BATON_URL": dev.url, "BATON_TOKEN": DEV_TOKEN, "BATON_MACHINE": "example"}
    p = Proc([sys.executable, str(ROOT / "examples" / "python-agent.py"), agent], env, "example")
    procs.append(p)
    replies = []
    for text in ("hello", "again"):
        mid = dev.post_message(agent, text)
        replies.append(dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged")["reply"])
    assert replies[0].endswith("message 1: HELLO\n") and replies[1].endswith("message 2: AGAIN\n"), replies
    p.signal(signal.SIGTERM)
    assert p.proc.wait(10) == 0, p.stderr()
    assert "holder" in p.stderr()


def test_example_agent_says_a_bad_url_in_one_line():
    import os
    import subprocess
    import sys
    from conftest import ROOT

    env = {**os.environ, "BATON_URL": "127.0.0.1:8787", "BATON_TOKEN": DEV_TOKEN}
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "python-agent.py"), "reviewer"], env=env,
                         capture_output=True, text=True, timeout=30)
    assert (run.returncode, run.stderr) == (1, "reviewer: not a URL: 127.0.0.1:8787\n")


def test_a_raising_handler_sends_fail_not_a_reply(dev, tmp_path: Path):
    agent = unique("py-fail")
    dev.request("PUT", f"/agents/{agent}/policy", {"max_attempts": 2})

    async def main():
        import baton

        async def handler(message, ctx):
            raise RuntimeError(f"broken on attempt {message.attempt}")

        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="failing")
        mid = await asyncio.to_thread(dev.post_message, agent, "x")
        m = await asyncio.to_thread(dev.wait_message, agent, mid, lambda m: m["status"] == "failed", 20)
        await handle.stop()
        return m

    m = asyncio.run(main())
    assert m["reply"] is None and m["error"] == "broken on attempt 2" and m["attempts"] == 2, m


def test_a_long_run_keeps_the_lease_on_heartbeats(dev, procs, tmp_path: Path):
    """A run of 3.5 heartbeat TTLs: the holder's fenced pings keep it valid by its own clock."""
    agent = unique("py-long")
    sink = tmp_path / "sink.jsonl"
    a = python_agent(dev, agent, "a", sink, RUN_SLEEP="7")
    procs.append(a)
    a.wait_for(status_is("holder"))
    mid = dev.post_message(agent, "slow")
    m = dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged", timeout=20)
    if m["attempts"] != 1:
        Path("/tmp/long-debug.json").write_text(json.dumps({"m": m, "lines": a.lines, "sink": read_sink(sink)}, indent=1))
    assert m["reply"] == "a did: slow" and m["attempts"] == 1
    assert not [l for l in a.lines if event_is("demoted")(l)]


def test_reconnects_with_growing_jittered_backoff():
    """Nothing listens at the URL: the client keeps dialing, with growing delays, and stops cleanly."""
    import baton

    async def main():
        statuses = []
        handle = await baton.serve("nobody", lambda m, c: None, url="http://127.0.0.1:9", token="t", machine="m",
                                   on_status=statuses.append)
        async with asyncio.timeout(10):
            while len([s for s in statuses if s["kind"] == "reconnecting"]) < 3:
                await asyncio.sleep(0.05)
        await handle.stop()
        async with asyncio.timeout(1):
            await handle.done  # resolves (not raises) after stop()
        return statuses

    statuses = asyncio.run(main())
    delays = [s["delay_ms"] for s in statuses if s["kind"] == "reconnecting"]
    assert len(delays) >= 3, statuses
    assert delays[1] > delays[0] * 1.0 and delays[2] > delays[1], delays
    assert all(250 <= d <= 15000 for d in delays)
