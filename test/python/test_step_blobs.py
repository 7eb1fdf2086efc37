"""Large step results in the Python client against a real wrangler dev, as the TypeScript client's
(test/e2e/durable-steps.test.ts, worker/blobs.ts): a result whose JSON is over 48 KiB is uploaded
to the coordinator's R2 under the run's token and run key, the journal records a blob reference,
and a successor on another runner reads it back over HTTP and gets the identical value without
running fn; a result over 16 MiB is refused before anything is uploaded or recorded; an upload
refused as someone else's raises LeaseLostError and stops the run."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from conftest import DEV_TOKEN, unique
from e2e_helpers import holder_and_standby, serve_refused_run, until, wait_message

MiB = 1024 * 1024


def test_a_successor_reads_back_a_2_mib_step_result_a_stopped_runner_recorded(dev):
    """Rule: a step (or effect) result over 48 KiB is stored as a blob and returned, identical, to
    every later attempt without running fn; the journal holds {id, bytes}, not the value."""
    agent = unique("py-blob")
    # 2 MiB of characters, not all ASCII (UTF-8 bytes differ from characters), and JSON-escaped ones
    big = ("é\"\\ \n✓" + "x" * 1018) * 2048
    assert len(big) == 2 * MiB
    rows = {"rows": [{"n": i, "text": f"row {i} ✓"} for i in range(6000)]}  # ~130 KiB of JSON
    calls: list[str] = []
    got: dict[str, Any] = {}
    events: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}

    def handler(machine: str):
        async def handle(message, ctx):
            def make_big() -> str:
                calls.append(f"big by {machine}")
                return big

            async def fetch(effect) -> dict:
                calls.append(f"fetch by {machine}")
                return rows

            value = await ctx.step("big", make_big)
            fetched = await ctx.effect("fetch", fetch)
            got[machine] = (value, fetched)
            if machine == "a":
                await ctx.lost_event.wait()  # a hangs after both are recorded, until it is stopped
            return f"{len(value)} chars, sha256 {hashlib.sha256(value.encode()).hexdigest()[:16]}, {len(fetched['rows'])} rows"

        return handle

    async def main():
        a, b = await holder_and_standby(dev, agent, handler("a"), handler("b"), events["a"])
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            await until(lambda: "a" in got, "a recorded both", 30)
            during = {name: (await asyncio.to_thread(dev.request, "GET", f"/agents/{agent}/messages/{mid}/steps/{name}"))[1]
                      for name in ("big", "fetch")}
            await a.stop()
            done = await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed"), 30)
            return during, done
        finally:
            await a.stop()
            await b.stop()

    during, done = asyncio.run(main())
    assert done["status"] == "acknowledged" and done["attempts"] == 2, done
    assert calls == ["big by a", "fetch by a"], calls  # fn ran once, on a
    assert got["a"][0] == big and got["a"][1] == rows
    assert got["b"][0] == big, "b read back a different value"
    assert got["b"][1] == rows
    digest = hashlib.sha256(big.encode()).hexdigest()[:16]
    assert done["reply"] == f"{2 * MiB} chars, sha256 {digest}, 6000 rows", done
    steps = during
    assert steps["big"]["value"] is None and steps["big"]["status"] == "done" and steps["big"]["attempt"] == 1, steps["big"]
    assert steps["big"]["blob"]["bytes"] == len(json.dumps(big, ensure_ascii=False, separators=(",", ":")).encode())
    assert steps["fetch"]["kind"] == "effect" and steps["fetch"]["value"] is None and steps["fetch"]["blob"] is not None, steps["fetch"]
    uploads = [e for e in events["a"] if e["type"] == "blob_uploaded"]
    assert [u["blob"] for u in uploads] == [steps["big"]["blob"]["id"], steps["fetch"]["blob"]["id"]], uploads


def test_a_result_over_16_mib_raises_value_error_and_records_nothing(dev):
    """Rule: a step's result is JSON of at most LIMITS.blobBytes (16 MiB): over it, ValueError,
    before anything is uploaded or recorded; the handler may go on. The effect's intent stays
    without an outcome, so (on_unknown "ask") its reply is refused and the message parks for a person."""
    import baton

    agent = unique("py-blob-huge")
    # Encoding 16 MiB blocks the event loop that heartbeats: not what this test is about.
    dev.freeze_clock(agent)
    outcomes: dict[str, Any] = {}
    events: list[dict[str, Any]] = []

    async def handler(message, ctx):
        try:
            await ctx.step("huge", lambda: "x" * (16 * MiB - 1))  # 16 MiB + 1 byte of JSON with its quotes
            outcomes["huge"] = "accepted"
        except ValueError as err:
            outcomes["huge"] = f"ValueError: {err}"
        try:
            await ctx.effect("huge-effect", lambda e: ["y" * (16 * MiB)])
            outcomes["huge-effect"] = "accepted"
        except ValueError as err:
            outcomes["huge-effect"] = f"ValueError: {err}"
        return "checked"

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="huge", on_event=events.append)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            return await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed", "parked"), 30)
        finally:
            await handle.stop()

    m = asyncio.run(main())
    assert m["status"] == "parked" and m["waiting_on"] == "huge-effect" and m["reply"] is None, (m, outcomes)
    assert outcomes["huge"] == f"ValueError: a step's result is at most {16 * MiB} bytes, got {16 * MiB + 1}", outcomes
    assert outcomes["huge-effect"].startswith("ValueError"), outcomes
    # the effect's intent is recorded before fn runs; its too-large outcome is not
    assert [(s["name"], s["status"]) for s in m["steps"]] == [("huge-effect", "intent")], m["steps"]
    assert not [e for e in events if e["type"] == "blob_uploaded"], events


def test_an_upload_refused_as_someone_elses_raises_lease_lost_and_stops_the_run(dev):
    """Rule: an upload refused with stale_token / not_your_message means what a refused step frame
    means: LeaseLostError, the run is stopped, and nothing (no reply, no fail) is posted for it."""
    import baton

    agent = unique("py-blob-refused")
    seen: list[Any] = []
    events: list[dict[str, Any]] = []

    async def handler(message, ctx):
        ctx._run.token = message.token + 1000  # the upload carries a token this run was never given
        try:
            await ctx.step("big", lambda: "x" * (100 * 1024))
        except baton.LeaseLostError as err:
            seen.append((err.code, ctx.cancelled))
            return "a reply that must not be posted"
        seen.append(("no error", ctx.cancelled))
        return "uploaded under a wrong token"

    m = serve_refused_run(dev, agent, handler, events, seen, "the upload was answered")
    assert len(seen) == 1 and seen[0][0] in ("stale_token", "not_your_message") and seen[0][1] is True, seen
    assert m["reply"] is None and m["steps"] == [], m
    assert [e["frame"] for e in events if e["type"] == "refused"] == ["blob"], events
    assert not [e for e in events if e["type"] in ("ran", "handler_failed", "blob_uploaded")], events
