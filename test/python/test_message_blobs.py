"""Large message checkpoints and replies in the
Python client against a real wrangler dev, as the TypeScript client's (test/e2e/durable-steps.test.ts):
a message checkpoint over 16 KiB of JSON and a reply over 32 KiB are uploaded to the coordinator's R2
under the run's token and run key and the frame names the blob; a run copy's checkpoint_blob is read
back before the handler runs; a reply over 16 MiB fails the attempt instead of being cut. Effects
that never run twice in one attempt are test_effect_calls.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from conftest import DEV_TOKEN, unique
from e2e_helpers import holder_and_standby, serve_one, wait_message

MiB = 1024 * 1024


def blob_bytes(dev, agent: str, mid: int, blob: str) -> bytes:
    """GET /agents/{agent}/messages/{id}/blobs/{blob}: the stored bytes, as they are."""
    from baton._http import request_bytes

    return request_bytes(dev.url, DEV_TOKEN, "GET", f"/agents/{agent}/messages/{mid}/blobs/{blob}")[1]


def test_a_2_mib_message_checkpoint_saved_by_a_runner_that_stops_reaches_its_successor_intact(dev):
    """Rule: save_message_checkpoint of more than LIMITS.checkpointBytes (16 KiB) of JSON uploads the
    JSON and sends the checkpoint frame with its blob; the next runner's run copy carries
    checkpoint_blob, which is read back and handed to its handler as ctx.message_checkpoint."""
    agent = unique("py-ckpt-blob")
    # 2 MiB of characters, not all ASCII (UTF-8 bytes differ from characters), and JSON-escaped ones
    chapters = ("é\"\\ \n✓" + "x" * 1018) * 2048
    assert len(chapters) == 2 * MiB
    value = {"chapters": chapters, "done": [1, 2, 3]}
    seen: list[tuple[str, Any]] = []
    events: list[dict[str, Any]] = []

    def handler(machine: str):
        async def handle(message, ctx):
            seen.append((machine, ctx.message_checkpoint))
            if ctx.message_checkpoint is None:
                await ctx.save_message_checkpoint(value)
                await ctx.lost_event.wait()  # a hangs after saving, until it is stopped
                return "never posted"
            got = ctx.message_checkpoint
            return f"{len(got['chapters'])} chars, done {got['done']}"

        return handle

    async def main():
        a, b = await holder_and_standby(dev, agent, handler("a"), handler("b"), events)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            saved = await wait_message(dev, agent, mid, lambda m: m["checkpoint_blob"] is not None, 30)
            await a.stop()
            return saved, await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed"), 30)
        finally:
            await a.stop()
            await b.stop()

    saved, done = asyncio.run(main())
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    assert saved["checkpoint"] is None and saved["checkpoint_blob"]["bytes"] == len(raw), saved["checkpoint_blob"]
    assert json.loads(blob_bytes(dev, agent, saved["id"], saved["checkpoint_blob"]["id"])) == value
    assert [u["blob"] for u in events if u["type"] == "blob_uploaded"] == [saved["checkpoint_blob"]["id"]], events
    assert [machine for machine, _ in seen] == ["a", "b"], [m for m, _ in seen]
    assert seen[0][1] is None
    assert seen[1][1] == value, "b got a different checkpoint"
    assert done["status"] == "acknowledged" and done["attempts"] == 2, done
    assert done["reply"] == f"{2 * MiB} chars, done [1, 2, 3]", done


def test_a_park_with_a_100_kib_checkpoint_is_resumed_with_it(dev):
    """Rule: park(checkpoint=...) over 16 KiB of JSON sends the park frame with the uploaded blob;
    the resumed run reads it back before the handler runs."""
    import baton

    agent = unique("py-park-blob")
    value = {"rows": [f"row {i} ✓" for i in range(10_000)]}  # ~120 KiB of JSON
    seen: list[Any] = []

    async def handler(message, ctx):
        seen.append(ctx.message_checkpoint)
        if message.resume_input is None:
            await ctx.park(checkpoint=value, deadline_seconds=60)
            return "ignored: parked"
        return f"resumed with {len(ctx.message_checkpoint['rows'])} rows"

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="parks")
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            parked = await wait_message(dev, agent, mid, lambda m: m["status"] == "parked")
            status, body = await asyncio.to_thread(dev.request, "POST", f"/agents/{agent}/messages/{mid}/resume", {"input": "go"})
            assert status == 200, (status, body)
            return parked, await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed"))
        finally:
            await handle.stop()

    parked, done = asyncio.run(main())
    assert parked["checkpoint"] is None and parked["checkpoint_blob"]["bytes"] > 16 * 1024, parked
    assert seen == [None, value], [type(s) for s in seen]
    assert done["reply"] == "resumed with 10000 rows", done


def test_a_checkpoint_over_16_mib_raises_value_error_before_anything_is_sent(dev):
    """Rule: a message checkpoint is JSON of at most LIMITS.blobBytes (16 MiB): over it,
    save_message_checkpoint and park raise ValueError and nothing is uploaded or stored."""
    agent = unique("py-ckpt-huge")
    # Encoding 16 MiB twice blocks the event loop that heartbeats: not what this test is about.
    dev.freeze_clock(agent)
    outcomes: dict[str, str] = {}
    events: list[dict[str, Any]] = []

    async def handler(message, ctx):
        huge = "x" * (16 * MiB - 1)  # 16 MiB + 1 byte of JSON with its quotes
        for name, call in (("save", lambda: ctx.save_message_checkpoint(huge)), ("park", lambda: ctx.park(checkpoint=huge))):
            try:
                await call()
                outcomes[name] = "accepted"
            except ValueError as err:
                outcomes[name] = f"ValueError: {err}"
        return "checked"

    m = asyncio.run(serve_one(dev, agent, handler, events))
    assert m["status"] == "acknowledged" and m["reply"] == "checked", (m, outcomes)
    assert m["checkpoint"] is None and m["checkpoint_blob"] is None, m
    expected = f"ValueError: a checkpoint is at most {16 * MiB} bytes, got {16 * MiB + 1}"
    assert outcomes == {"save": expected, "park": expected}, outcomes
    assert not [e for e in events if e["type"] in ("blob_uploaded", "parked")], events


def test_a_3_mib_reply_is_stored_as_reply_blob_and_reads_back_whole(dev):
    """Rule: a reply over LIMITS.replyTextBytes (32 KiB of UTF-8) is uploaded first and the reply
    frame names the blob (text ""); the view has reply null and reply_blob {id, bytes}, and
    GET …/blobs/{id} returns the reply's bytes, whole."""
    agent = unique("py-reply-blob")
    reply = ("ü✓ line\n" + "r" * 1016) * 3072  # 3 MiB of characters
    events: list[dict[str, Any]] = []

    async def handler(message, ctx):
        return reply

    m = asyncio.run(serve_one(dev, agent, handler, events))
    raw = reply.encode()
    assert len(reply) == 3 * MiB and len(raw) == 3 * MiB + 3072 * 3  # ü and ✓ are 2 and 3 bytes
    assert m["status"] == "acknowledged" and m["attempts"] == 1, m
    assert m["reply"] is None and m["reply_blob"]["bytes"] == len(raw), m["reply_blob"]
    assert blob_bytes(dev, agent, m["id"], m["reply_blob"]["id"]) == raw
    assert [e["blob"] for e in events if e["type"] == "blob_uploaded"] == [m["reply_blob"]["id"]], events


def test_a_reply_of_32_kib_rides_inline_and_one_byte_more_goes_to_r2(dev):
    """Rule: the inline limit of a reply is LIMITS.replyTextBytes of UTF-8, not characters: 32 KiB of
    two-byte characters rides inline (its frame is under 64 KiB as UTF-8), one byte more is a blob."""
    agent = unique("py-reply-edge")
    replies = iter(["é" * (16 * 1024), "é" * (16 * 1024) + "x"])

    async def handler(message, ctx):
        return next(replies)

    async def main():
        import baton

        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="edge")
        try:
            got = []
            for _ in range(2):
                mid = await asyncio.to_thread(dev.post_message, agent, "go")
                got.append(await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed")))
            return got
        finally:
            await handle.stop()

    edge, over = asyncio.run(main())
    assert edge["reply"] == "é" * (16 * 1024) and edge["reply_blob"] is None, edge["reply_blob"]
    assert over["reply"] is None and over["reply_blob"]["bytes"] == 32 * 1024 + 1, over


def test_a_reply_over_16_mib_fails_the_attempt_rather_than_replying(dev):
    """Rule: a reply over LIMITS.blobBytes (16 MiB) is never cut: the attempt fails with a reason
    (a fail frame), nothing is uploaded, and no reply is stored."""
    agent = unique("py-reply-huge")
    # Encoding 16 MiB blocks the event loop that heartbeats: not what this test is about.
    dev.freeze_clock(agent)
    status, body = dev.request("PUT", f"/agents/{agent}/policy", {"max_attempts": 1})
    assert status == 200, (status, body)
    events: list[dict[str, Any]] = []

    async def handler(message, ctx):
        return "x" * (16 * MiB + 1)

    m = asyncio.run(serve_one(dev, agent, handler, events))
    assert m["status"] == "failed" and m["attempts"] == 1, m
    assert m["reply"] is None and m["reply_blob"] is None, m
    assert m["error"] == f"a reply is at most {16 * MiB} bytes, got {16 * MiB + 1}", m["error"]
    assert [e["type"] for e in events if e["type"] in ("handler_failed", "ran", "blob_uploaded")] == ["handler_failed"], events


def test_a_checkpoint_blob_that_cannot_be_read_fails_the_attempt_before_the_handler_runs(dev, monkeypatch):
    """Rule: a run copy's checkpoint_blob is read before the handler runs; when that fails, the
    attempt fails with a reason and the handler never runs."""
    import importlib

    work_loop = importlib.import_module("baton._work_loop")
    agent = unique("py-ckpt-gone")
    status, body = dev.request("PUT", f"/agents/{agent}/policy", {"max_attempts": 1})
    assert status == 200, (status, body)
    ran: list[int] = []

    async def handler(message, ctx):
        ran.append(message.id)
        return "ran"

    enqueue = work_loop.WorkLoop.enqueue

    def with_missing_blob(self, frame):  # the run copy names a checkpoint blob that is not there
        enqueue(self, {**frame, "checkpoint_blob": {"id": "b-" + "0" * 32, "bytes": 10}})

    monkeypatch.setattr(work_loop.WorkLoop, "enqueue", with_missing_blob)
    m = asyncio.run(serve_one(dev, agent, handler, []))
    assert m["status"] == "failed" and ran == [], (m, ran)
    assert m["error"].startswith("the message's checkpoint could not be read: "), m["error"]
