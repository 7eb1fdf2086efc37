"""Durable steps in the Python client against a real wrangler dev, as the TypeScript client's
(test/e2e/durable-steps.test.ts): a successor replays what a stopped runner recorded, an effect
whose outcome is unknown is never run again silently (ask parks the message, retry reruns it
under the same key), names, kinds and sizes are checked before sending, and quick steps are paced.
Heartbeats and a run's loss of its lease are test_run_liveness.py."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any


from conftest import DEV_TOKEN, unique
from e2e_helpers import holder_and_standby, until, wait_message

#: The dev account's part of an effect's key: SHA-256 of its name, 16 hex digits (worker/wire/step-keys.ts).
DEV_TAG = hashlib.sha256(b"dev").hexdigest()[:16]


def test_a_successor_replays_the_step_and_the_effect_a_stopped_runner_recorded(dev):
    """Rule: a step or effect recorded done is returned to every later attempt without running fn;
    the effect's key is baton:AGENT:ID:NAME on every attempt."""
    agent = unique("py-steps")
    plans: list[str] = []
    pays: list[str] = []
    keys: list[str] = []

    def handler(machine: str):
        async def handle(message, ctx):
            def plan() -> str:
                plans.append(machine)
                return f"plan by {machine} (#{len(plans)})"

            async def pay(effect) -> dict:
                keys.append(effect.key)
                pays.append(machine)
                await asyncio.sleep(0)
                return {"receipt": len(pays), "machine": machine}

            planned = await ctx.step("plan", plan)  # a sync fn
            receipt = await ctx.effect("pay", pay)  # an async fn
            if machine == "a":
                await ctx.lost_event.wait()  # a hangs after both are recorded, until it is stopped
            return f"{planned} / {json.dumps(receipt, sort_keys=True)}"

        return handle

    async def main():
        a, b = await holder_and_standby(dev, agent, handler("a"), handler("b"))
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            await until(lambda: len(pays) == 1, "a paid")
            during = await asyncio.to_thread(dev.message, agent, mid)
            await a.stop()
            done = await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
            return mid, during, done
        finally:
            await a.stop()
            await b.stop()

    mid, during, done = asyncio.run(main())
    assert [(s["name"], s["kind"], s["status"], s["attempt"]) for s in during["steps"]] == [
        ("plan", "step", "done", 1), ("pay", "effect", "done", 1)], during
    assert done["reply"] == 'plan by a (#1) / {"machine": "a", "receipt": 1}', done
    assert done["attempts"] == 2, done
    assert plans == ["a"] and pays == ["a"], (plans, pays)
    assert keys == [f"baton:{DEV_TAG}:{agent}:{mid}:pay"], keys


def test_an_effect_begun_by_a_stopped_runner_parks_the_message_for_a_person(dev):
    """Rule: an effect's intent is recorded before fn runs, so with on_unknown="ask" (the default) a
    successor never runs it again: the message parks, waiting on the effect."""
    agent = unique("py-ask")
    pays: list[str] = []

    def handler(machine: str):
        async def handle(message, ctx):
            async def pay(effect):
                pays.append(machine)
                await effect.lost_event.wait()  # the external call hangs until the run is stopped
                raise RuntimeError("stopped while paying")

            return str(await ctx.effect("pay", pay))

        return handle

    async def main():
        a, b = await holder_and_standby(dev, agent, handler("a"), handler("b"))
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            await until(lambda: len(pays) == 1, "a began paying")
            await a.stop()
            parked = await wait_message(dev, agent, mid, lambda m: m["status"] == "parked")
            await asyncio.sleep(0.5)  # b had time to run it, were it handed to b
            return parked, await asyncio.to_thread(dev.message, agent, mid)
        finally:
            await a.stop()
            await b.stop()

    parked, later = asyncio.run(main())
    assert parked["waiting_on"] == "pay", parked
    assert later["status"] == "parked", later
    assert pays == ["a"], pays


def test_an_unknown_outcome_is_rerun_under_the_same_key_with_retry(dev):
    """Rule: on_unknown="retry" runs an effect whose outcome is unknown again, under the same key."""
    agent = unique("py-retry")
    keys: list[tuple[str, str]] = []

    def handler(machine: str):
        async def handle(message, ctx):
            async def pay(effect):
                keys.append((machine, effect.key))
                if machine == "a":
                    await effect.lost_event.wait()
                    raise RuntimeError("stopped while paying")
                return f"paid by {machine}"

            return await ctx.effect("pay", pay, on_unknown="retry")

        return handle

    async def main():
        a, b = await holder_and_standby(dev, agent, handler("a"), handler("b"))
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            await until(lambda: len(keys) == 1, "a began paying")
            await a.stop()
            return mid, await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
        finally:
            await a.stop()
            await b.stop()

    mid, done = asyncio.run(main())
    key = f"baton:{DEV_TAG}:{agent}:{mid}:pay"
    assert keys == [("a", key), ("b", key)], keys
    assert done["reply"] == "paid by b" and done["attempts"] == 2, done


def test_an_intent_of_an_earlier_attempt_under_ask_raises_outcome_unknown_and_parks(dev):
    """Rule: if the journal already has the effect's intent and this attempt's policy is "ask",
    ctx.effect raises "outcome unknown: step NAME" without running fn; the failed attempt parks."""
    import baton

    agent = unique("py-unknown")
    pays: list[str] = []
    raised: list[BaseException] = []

    def handler(machine: str):
        async def handle(message, ctx):
            async def pay(effect):
                pays.append(machine)
                await effect.lost_event.wait()
                raise RuntimeError("stopped while paying")

            try:
                # a began it as retry; b asks a person instead
                return await ctx.effect("pay", pay, on_unknown="retry" if machine == "a" else "ask")
            except baton.OutcomeUnknownError as err:
                raised.append(err)
                raise

        return handle

    async def main():
        a, b = await holder_and_standby(dev, agent, handler("a"), handler("b"))
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            await until(lambda: len(pays) == 1, "a began paying")
            await a.stop()
            return mid, await wait_message(dev, agent, mid, lambda m: m["status"] == "parked")
        finally:
            await a.stop()
            await b.stop()

    mid, parked = asyncio.run(main())
    assert pays == ["a"], pays
    assert len(raised) == 1 and str(raised[0]).startswith("outcome unknown: step pay"), raised
    assert raised[0].step == "pay"
    assert parked["waiting_on"] == "pay" and parked["attempts"] == 2, parked


def test_step_names_kinds_and_sizes_are_checked_before_anything_is_sent(dev):
    """Rule: names match STEP_NAME, a step and an effect never share a name, a result of at most
    48 KiB of JSON is kept inline and a larger one as a blob; a recorded step is returned from the
    journal with the same value in this run."""
    import baton

    agent = unique("py-checks")
    outcomes: dict[str, Any] = {}

    async def handler(message, ctx):
        for bad in ("", "has space", "-lead", "x" * 129, "plan\n", "ünï"):
            try:
                await ctx.step(bad, lambda: 1)
                outcomes[repr(bad)] = "accepted"
            except TypeError:
                outcomes[repr(bad)] = "TypeError"
        outcomes["first"] = await ctx.step("plan", lambda: {"a": (1, 2)})
        outcomes["again"] = await ctx.step("plan", lambda: "not run")
        for name, call in (("effect named like a step", lambda: ctx.effect("plan", lambda e: 1)),
                           ("step named like an effect", None)):
            if call is None:
                await ctx.effect("pay", lambda e: e.key)
                call = lambda: ctx.step("pay", lambda: 1)  # noqa: E731
            try:
                await call()
                outcomes[name] = "accepted"
            except TypeError:
                outcomes[name] = "TypeError"
        # 48 KiB of JSON (with its quotes) rides inline; a byte more goes to R2 as a blob
        outcomes["edge"] = await ctx.step("edge", lambda: "x" * (48 * 1024 - 2))
        outcomes["over"] = await ctx.step("over", lambda: "x" * (48 * 1024 - 1))
        outcomes["over again"] = await ctx.step("over", lambda: "not run")
        try:
            await ctx.effect("odd", lambda e: 1, on_unknown="sometimes")
            outcomes["odd"] = "accepted"
        except ValueError:
            outcomes["odd"] = "ValueError"
        return "checked"

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="checks")
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            return await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed"))
        finally:
            await handle.stop()

    m = asyncio.run(main())
    assert m["status"] == "acknowledged", (m, outcomes)
    assert all(outcomes[repr(b)] == "TypeError" for b in ("", "has space", "-lead", "x" * 129, "plan\n", "ünï")), outcomes
    assert outcomes["first"] == {"a": [1, 2]} and outcomes["again"] == {"a": [1, 2]}, outcomes
    assert outcomes["effect named like a step"] == "TypeError" and outcomes["step named like an effect"] == "TypeError", outcomes
    assert outcomes["odd"] == "ValueError", outcomes
    assert outcomes["edge"] == "x" * (48 * 1024 - 2), len(outcomes["edge"])
    assert outcomes["over"] == outcomes["over again"] == "x" * (48 * 1024 - 1), len(outcomes["over again"])
    assert sorted((s["name"], s["kind"]) for s in m["steps"]) == [("edge", "step"), ("over", "step"), ("pay", "effect"), ("plan", "step")], m
    edge = dev.request("GET", f"/agents/{agent}/messages/{m['id']}/steps/edge")[1]
    over = dev.request("GET", f"/agents/{agent}/messages/{m['id']}/steps/over")[1]
    assert edge["blob"] is None and edge["value"] == "x" * (48 * 1024 - 2), edge["blob"]
    assert over["value"] is None and over["blob"]["bytes"] == 48 * 1024 + 1, over["blob"]


def test_quick_steps_in_a_row_are_paced_within_the_coordinators_frame_rate(dev):
    """Rule: 120 steps with nothing between them go out at most LIMITS.framesPerSecond - 10 a second,
    so the coordinator refuses none (rate_limited) and the attempt neither stalls nor fails."""
    import baton

    agent = unique("py-paced")
    events: list[dict[str, Any]] = []
    took: list[float] = []

    async def handler(message, ctx):
        started = time.monotonic()
        for i in range(120):
            await ctx.step(f"s{i}", lambda i=i: i)
        took.append(time.monotonic() - started)
        return "ok"

    async def main():
        handle = await baton.serve(agent, handler, url=dev.url, token=DEV_TOKEN, machine="paced", on_event=events.append,
                                   tracing=False)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "go")
            return await wait_message(dev, agent, mid, lambda m: m["status"] in ("acknowledged", "failed"))
        finally:
            await handle.stop()

    m = asyncio.run(main())
    refused = [e for e in events if e["type"] in ("coordinator_error", "unconfirmed", "handler_failed", "demoted")]
    assert m["status"] == "acknowledged" and m["attempts"] == 1 and len(m["steps"]) == 120, m
    assert refused == [] and len(took) == 1, refused
    budget = baton.LIMITS["framesPerSecond"] - 10
    assert took[0] >= (120 - budget) / budget * 0.9, f"120 steps in {took[0]:.2f} s: faster than {budget} a second"
    print(f"\npython 120 quick steps, paced: {took[0]:.2f} s")
