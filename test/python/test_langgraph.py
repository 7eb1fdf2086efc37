"""baton.langgraph's BatonSaver against a real wrangler dev and the real langgraph-checkpoint (4.2):
sync and async round trips, channel values stored only at new versions, pending writes in order,
values past the inline limit (R2), fenced thread deletion, and a worker paused past its TTL whose
late write is refused while another worker's checkpoints extend the thread as one line.

Skipped where langgraph-checkpoint is not importable (the Debian run: it is no Debian package);
the clean-venv run installs it (see scripts/test-python.mjs)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.base", reason="langgraph-checkpoint is not installed here (the clean-venv run installs it)")

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402

import baton  # noqa: E402
from baton.langgraph import BatonSaver, thread_session  # noqa: E402
from conftest import DEV_TOKEN, HERE, Proc  # noqa: E402

INLINE_LIMIT = 32 * 1024


def acquire(dev, session: str, ttl: int = 60):
    run_id = str(uuid.uuid4())
    status, grant = dev.request("POST", f"/leases/{session}/acquire", {"run_id": run_id, "ttl_seconds": ttl})
    assert status == 201, grant

    class Lease:
        pass

    lease = Lease()
    lease.session, lease.run_id, lease.fence = session, run_id, grant["fence"]
    return lease


def leases(dev):
    """lease_for: one lease per thread, acquired on the saver's first write to it."""
    held: dict = {}

    def lease_for(thread_id: str):
        if thread_id not in held:
            held[thread_id] = acquire(dev, thread_session(thread_id))
        return held[thread_id]

    return lease_for


def checkpoint(values: dict, versions: dict) -> dict:
    c = empty_checkpoint()
    c["channel_values"] = values
    c["channel_versions"] = versions
    return c


def test_round_trip_values_writes_list_and_delete(dev):
    thread = f"t-{uuid.uuid4()}"
    lease = acquire(dev, thread_session(thread))
    saver = BatonSaver(url=dev.url, token=DEV_TOKEN, lease=lease)
    root = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    v1, v2 = saver.get_next_version(None), None
    v2 = saver.get_next_version(v1)
    assert v1 < v2
    big = "x" * (INLINE_LIMIT * 3)
    c1 = saver.put(root, checkpoint({"a": "one", "big": big}, {"a": v1, "big": v1}), {"source": "input", "step": -1, "parents": {}}, {"a": v1, "big": v1})
    saver.put_writes(c1, [("a", "w0"), ("b", "w1")], "task-2", "~b")
    saver.put_writes(c1, [("a", "first")], "task-1", "~a")
    saver.put_writes(c1, [("a", "second")], "task-1", "~a")  # a regular write keeps its first value
    c2 = saver.put(c1, checkpoint({"a": "two", "big": big}, {"a": v2, "big": v1}), {"source": "loop", "step": 0, "parents": {}}, {"a": v2})

    t1 = saver.get_tuple(c1)
    assert t1.checkpoint["channel_values"] == {"a": "one", "big": big}
    assert t1.pending_writes == [("task-1", "a", "first"), ("task-2", "a", "w0"), ("task-2", "b", "w1")]
    assert t1.parent_config is None
    latest = saver.get_tuple(root)
    assert latest.config["configurable"]["checkpoint_id"] == c2["configurable"]["checkpoint_id"]
    assert latest.checkpoint["channel_values"] == {"a": "two", "big": big}  # big read at its unchanged version
    assert latest.parent_config["configurable"]["checkpoint_id"] == c1["configurable"]["checkpoint_id"]
    assert [t.metadata["step"] for t in saver.list(root)] == [0, -1]
    assert [t.metadata["step"] for t in saver.list(root, limit=1)] == [0]
    assert [t.metadata["step"] for t in saver.list(root, before=c2)] == [-1]
    assert [t.metadata["step"] for t in saver.list(root, filter={"source": "input"})] == [-1]
    with pytest.raises(ValueError, match="one thread at a time"):
        list(saver.list(None))

    saver.delete_thread(thread)
    assert saver.get_tuple(root) is None
    assert list(saver.list(root)) == []


def _r2_files(dev) -> set:
    return {p for p in dev.persist.rglob("*") if p.is_file() and "r2" in p.parts and "blobs" in p.parts}


def test_a_version_never_written_has_no_value_and_a_lost_value_is_an_error(dev):
    """LangGraph's savers store only new_versions, so a version with no value record has none; a value
    that was stored and is lost (its R2 object gone) makes get_tuple raise, never read as absent."""
    thread = f"t-{uuid.uuid4()}"
    saver = BatonSaver(url=dev.url, token=DEV_TOKEN, lease=acquire(dev, thread_session(thread)))
    root = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    v1 = saver.get_next_version(None)
    meta = {"source": "input", "step": -1, "parents": {}}
    c1 = saver.put(root, checkpoint({"kept": "yes", "unsent": "no"}, {"kept": v1, "unsent": v1}), meta, {"kept": v1})
    assert saver.get_tuple(c1).checkpoint["channel_values"] == {"kept": "yes"}

    before = _r2_files(dev)
    big = "x" * (INLINE_LIMIT * 2)
    c2 = saver.put(c1, checkpoint({"big": big}, {"big": v1}), meta, {"big": v1})
    assert saver.get_tuple(c2).checkpoint["channel_values"] == {"big": big}
    stored = _r2_files(dev) - before
    assert stored, "the large value went to R2"
    for path in stored:
        path.unlink()
    with pytest.raises(baton.CoordinatorError) as lost:
        saver.get_tuple(c2)
    assert lost.value.status == 500


def test_async_methods_and_a_write_without_the_thread_lease(dev):
    thread = f"t-{uuid.uuid4()}"
    saver = BatonSaver(url=dev.url, token=DEV_TOKEN, lease_for=leases(dev))
    root = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}

    async def main():
        v = saver.get_next_version(None)
        c = await saver.aput(root, checkpoint({"a": 1}, {"a": v}), {"source": "input", "step": -1, "parents": {}}, {"a": v})
        await saver.aput_writes(c, [("a", 2)], "t1")
        t = await saver.aget_tuple(root)
        listed = [x async for x in saver.alist(root)]
        await saver.adelete_thread(thread)
        return t, listed, await saver.aget_tuple(root)

    t, listed, gone = asyncio.run(main())
    assert t.checkpoint["channel_values"] == {"a": 1} and t.pending_writes == [("t1", "a", 2)]
    assert len(listed) == 1 and gone is None

    reader = BatonSaver(url=dev.url, token=DEV_TOKEN)
    with pytest.raises(ValueError, match="only under its lease"):
        reader.put(root, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {})
    other = BatonSaver(url=dev.url, token=DEV_TOKEN, lease=acquire(dev, thread_session(f"{thread}-other")))
    with pytest.raises(ValueError, match="holds the lease of"):
        other.put(root, empty_checkpoint(), {"source": "input", "step": -1, "parents": {}}, {})


def test_a_worker_paused_past_its_ttl_is_refused_and_the_thread_stays_one_line(dev):
    thread = f"t-{uuid.uuid4()}"
    gate = Path(tempfile.mkdtemp(prefix="baton-lg-")) / "go"
    env = {**os.environ, "BATON_URL": dev.url, "BATON_TOKEN": DEV_TOKEN}
    a = Proc([sys.executable, str(HERE / "langgraph_worker.py"), thread, str(gate)], env, "lg-a")
    try:
        a_fence = a.wait_for(lambda l: l.get("event") == "acquired")["fence"]
        last_of_a = a.wait_for(lambda l: l.get("event") == "wrote")["checkpoint"]
        a.signal(signal.SIGSTOP)

        async def take_over():
            async with baton.session_lease(thread_session(thread), url=dev.url, token=DEV_TOKEN, ttl=10, wait=True, wait_timeout=60) as lease:
                saver = BatonSaver(url=dev.url, token=DEV_TOKEN, lease=lease)
                latest = await saver.aget_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
                c = checkpoint({"log": ["plan by A", "draft by A", "review by B"]}, {"log": f"{3:032}.1"})
                await saver.aput(latest.config, c, {"source": "loop", "step": 3, "parents": {}}, {"log": f"{3:032}.1"})
                return lease.fence

        b_fence = asyncio.run(take_over())
        assert b_fence == a_fence + 1
        gate.touch()
        a.signal(signal.SIGCONT)
        stopped = a.wait_for(lambda l: l.get("event") in ("stopped", "done", "wrote-late"))
        assert stopped["event"] == "stopped" and stopped["code"] == "stale_fence", stopped
        assert a.proc.wait(20) == 3
    finally:
        a.kill()

    line = list(reversed(list(BatonSaver(url=dev.url, token=DEV_TOKEN).list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}))))
    assert [t.checkpoint["channel_values"]["log"][-1] for t in line] == ["plan by A", "draft by A", "review by B"]
    assert line[1].config["configurable"]["checkpoint_id"] == last_of_a
    for i, t in enumerate(line):
        parent = t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        assert parent == (line[i - 1].config["configurable"]["checkpoint_id"] if i else None)
