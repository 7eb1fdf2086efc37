"""A Python runner and a TypeScript runner (`baton serve`, the built CLI) serve the same agent:
exactly one of them runs each message."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from conftest import DEV_TOKEN, ROOT, Proc, python_agent, read_sink, status_is, unique, wait_sink

BIN = ROOT / "dist" / "cli" / "main.js"

SERVED_SH = """#!/bin/sh
text=$(cat)
printf '{"tag":"%s","id":%s,"fence":%s,"token":%s,"attempt":%s,"phase":"start"}\\n' "$TAG" "$BATON_MESSAGE_ID" "$BATON_FENCE" "$BATON_MESSAGE_TOKEN" "$BATON_ATTEMPT" >> "$SINK"
printf '{"tag":"%s","id":%s,"fence":%s,"token":%s,"attempt":%s,"phase":"end"}\\n' "$TAG" "$BATON_MESSAGE_ID" "$BATON_FENCE" "$BATON_MESSAGE_TOKEN" "$BATON_ATTEMPT" >> "$SINK"
echo "$TAG did: $text"
"""


def ts_serve(dev, agent: str, tag: str, sink: Path, tmp: Path) -> Proc:
    command = tmp / "served.sh"
    command.write_text(SERVED_SH)
    command.chmod(0o755)
    (tmp / "lock").mkdir(exist_ok=True)
    env = {**os.environ, "BATON_URL": dev.url, "BATON_TOKEN": DEV_TOKEN, "BATON_LOCK_DIR": str(tmp / "lock"),
           "BATON_STATE_DIR": str(tmp / "state"), "TAG": tag, "SINK": str(sink)}
    return Proc(["node", str(BIN), "serve", agent, "--machine", tag, "--grace", "1", "--json", "--", str(command)], env, tag)


def presence(dev, agent: str) -> dict:
    status, body = dev.request("GET", f"/agents/{agent}/presence")
    assert status == 200
    return body


def wait_holder(dev, agent: str, machine: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        p = presence(dev, agent)
        if p["holder"] and p["holder"]["machine"] == machine:
            return p
        if time.monotonic() > deadline:
            raise AssertionError(f"{machine} never held {agent}: {p}")
        time.sleep(0.1)


@pytest.mark.skipif(not BIN.exists(), reason="dist/cli/main.js missing: run `npm run build` first")
def test_python_and_typescript_runners_share_an_agent(dev, procs, tmp_path: Path):
    agent = unique("py-ts")
    sink = tmp_path / "sink.jsonl"
    ts = ts_serve(dev, agent, "ts", sink, tmp_path)
    procs.append(ts)
    wait_holder(dev, agent, "ts")
    py = python_agent(dev, agent, "py", sink)
    procs.append(py)
    py.wait_for(status_is("standby"))

    first = [dev.post_message(agent, f"m{i}") for i in range(5)]
    for mid in first:
        m = dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged")
        assert m["reply"].startswith("ts did: "), m

    ts.signal(signal.SIGTERM)  # baton serve releases the lease on SIGTERM
    py.wait_for(status_is("holder"), timeout=15)
    assert ts.proc.wait(15) == 0, ts.stderr()
    again = tmp_path / "again"
    again.mkdir()
    ts2 = ts_serve(dev, agent, "ts2", sink, again)
    procs.append(ts2)

    second = [dev.post_message(agent, f"n{i}") for i in range(5)]
    for mid in second:
        m = dev.wait_message(agent, mid, lambda m: m["status"] == "acknowledged")
        assert m["reply"].startswith("py did: "), m

    lines = wait_sink(sink, lambda ls: sum(1 for l in ls if l["phase"] == "end") >= 10)
    for mid in first + second:
        runs = [l for l in lines if l["id"] == mid and l["phase"] == "start"]
        assert len(runs) == 1, (mid, runs)
        assert runs[0]["tag"] == ("ts" if mid in first else "py")
    # the standby TypeScript runner that joined later ran nothing
    assert not [l for l in read_sink(sink) if l["tag"] == "ts2"]
