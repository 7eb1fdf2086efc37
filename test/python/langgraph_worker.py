"""A LangGraph worker for test_langgraph.py: holds a thread's lease (run_with_session_lease, TTL 2 s),
writes the thread's first checkpoints with BatonSaver, prints a JSON line, waits until GATE exists,
then writes one more checkpoint on top of what it wrote. Paused past its TTL meanwhile, that last
write is refused; it prints how it stopped and exits 3."""

from __future__ import annotations

import json
import os
import sys
import time

import baton
from baton.langgraph import BatonSaver, thread_session
from langgraph.checkpoint.base import empty_checkpoint

URL, TOKEN, THREAD, GATE = os.environ["BATON_URL"], os.environ["BATON_TOKEN"], sys.argv[1], sys.argv[2]


def say(**line: object) -> None:
    print(json.dumps(line), flush=True)


def checkpoint(n: int, log: list[str]) -> tuple[dict, dict]:
    c = empty_checkpoint()
    c["channel_values"] = {"log": log}
    c["channel_versions"] = {"log": f"{n:032}.0"}
    return c, {"log": f"{n:032}.0"}


def work(lease: baton.SessionLease) -> None:
    say(event="acquired", fence=lease.fence)
    saver = BatonSaver(url=URL, token=TOKEN, lease=lease)
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": ""}}
    for n, node in enumerate(["plan", "draft"], start=1):
        c, versions = checkpoint(n, [f"{node} by A"])
        config = saver.put(config, c, {"source": "loop", "step": n, "parents": {}}, versions)
    say(event="wrote", checkpoint=config["configurable"]["checkpoint_id"])
    while not os.path.exists(GATE):
        time.sleep(0.02)
    c, versions = checkpoint(3, ["plan by A", "draft by A", "review by A"])
    saver.put(config, c, {"source": "loop", "step": 3, "parents": {}}, versions)
    say(event="wrote-late")


try:
    baton.run_with_session_lease(thread_session(THREAD), work, url=URL, token=TOKEN, ttl=2)
    say(event="done")
except baton.LeaseLostError as err:
    say(event="stopped", code=err.code, message=str(err))
    sys.exit(3)
