"""Effects that never run twice in one attempt, in the Python client against a real wrangler dev,
as the TypeScript client's (test/e2e/durable-steps.test.ts): a reply refused as outcome_unknown
(the handler caught an effect's exception) fails the attempt so the message parks for a person;
concurrent calls of one effect share one run of fn, and a second intent of one effect in one
attempt is refused. Large checkpoints and replies are test_message_blobs.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from conftest import unique
from e2e_helpers import serve_one


def test_a_handler_that_catches_an_effects_exception_and_replies_leaves_the_message_parked_waiting_on_it(dev):
    """Rule: a reply refused with outcome_unknown (an effect of this attempt began and never
    recorded its outcome) fails the attempt with the refusal as its reason, so the message parks
    for a person with waiting_on set to the effect's name; the effect's fn ran once."""
    agent = unique("py-caught")
    pays: list[str] = []
    events: list[dict[str, Any]] = []

    async def handler(message, ctx):
        def pay(effect):
            pays.append(effect.key)
            raise ConnectionResetError("connection reset while charging")

        try:
            await ctx.effect("pay", pay)
        except ConnectionResetError:
            return "could not pay, never mind"
        return "paid"

    async def main():
        parked = await serve_one(dev, agent, handler, events)
        await asyncio.sleep(0.5)  # nothing runs it again meanwhile
        return parked, await asyncio.to_thread(dev.message, agent, parked["id"])

    parked, later = asyncio.run(main())
    assert parked["status"] == "parked" and parked["waiting_on"] == "pay", parked
    assert parked["reply"] is None and parked["reply_blob"] is None, parked
    assert "outcome unknown: step pay" in parked["error"], parked["error"]
    assert later["status"] == "parked", later
    assert len(pays) == 1, pays
    assert [e["code"] for e in events if e["type"] == "refused"] == ["outcome_unknown"], events
    assert not [e for e in events if e["type"] == "ran"], events


def test_two_concurrent_calls_of_one_effect_run_it_once_and_both_get_its_outcome(dev):
    """Rule: within one attempt, a second call of a step or effect name while the first runs
    (asyncio.gather) shares the first call's result instead of writing again."""
    agent = unique("py-gather")
    pays: list[str] = []
    plans: list[str] = []

    async def handler(message, ctx):
        async def pay(effect):
            pays.append(effect.key)
            await asyncio.sleep(0.1)
            return {"receipt": len(pays)}

        async def plan():
            plans.append("plan")
            await asyncio.sleep(0.1)
            return "the plan"

        results = await asyncio.gather(ctx.effect("pay", pay), ctx.effect("pay", pay), ctx.step("plan", plan), ctx.step("plan", plan))
        return json.dumps(results)

    m = asyncio.run(serve_one(dev, agent, handler, []))
    assert m["status"] == "acknowledged", m
    assert json.loads(m["reply"]) == [{"receipt": 1}, {"receipt": 1}, "the plan", "the plan"], m["reply"]
    assert len(pays) == 1 and plans == ["plan"], (pays, plans)
    assert sorted((s["name"], s["status"]) for s in m["steps"]) == [("pay", "done"), ("plan", "done")], m["steps"]


def test_an_effect_called_again_after_its_fn_raised_is_refused_as_effect_in_progress_without_running(dev):
    """Rule: the coordinator refuses a second intent of one effect under the same token
    (effect_in_progress): it surfaces as CoordinatorError and fn does not run again."""
    import baton

    agent = unique("py-again")
    pays: list[int] = []
    refused: list[Any] = []

    async def handler(message, ctx):
        def pay(effect):
            pays.append(1)
            raise ConnectionResetError("connection reset while charging")

        for _ in range(2):
            try:
                await ctx.effect("pay", pay, on_unknown="retry")
            except ConnectionResetError:
                pass
            except baton.CoordinatorError as err:
                refused.append(err.code)
        return "gave up"

    m = asyncio.run(serve_one(dev, agent, handler, []))
    assert refused == ["effect_in_progress"], refused
    assert len(pays) == 1, pays
    # with "retry" nobody needs to be asked: the reply finishes the message
    assert m["status"] == "acknowledged" and m["reply"] == "gave up", m
