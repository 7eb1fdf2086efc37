"""baton.testing: a handler runs against a message in memory, through the same journal and run
lifecycle as under serve, with no coordinator (as Temporal's ActivityEnvironment)."""

from __future__ import annotations

import asyncio

import pytest

import baton
from baton.testing import RunEnvironment, answer, recorded, unknown_effect


def run(coro):
    return asyncio.run(coro)


def test_a_step_records_once_and_the_next_attempt_replays_it():
    calls: list[str] = []

    async def handler(message, ctx):
        plan = await ctx.step("plan", lambda: calls.append("plan") or {"steps": 2})
        return f"{message.text}: {plan['steps']} steps"

    env = RunEnvironment()
    first = run(env.run(handler, "go"))
    second = run(env.run(handler, "go"))
    assert first.outcome == second.outcome == "replied" and first.reply == "go: 2 steps", first
    assert calls == ["plan"] and env.journal["plan"]["status"] == "done"
    assert [f["type"] for f in first.frames] == ["step", "reply"] and [f["type"] for f in second.frames] == ["reply"]


def test_a_recorded_step_replays_without_calling_fn():
    async def handler(message, ctx):
        return await ctx.step("plan", lambda: pytest.fail("fn ran although the step is recorded"))

    result = run(RunEnvironment(journal=[recorded("plan", "kept")]).run(handler))
    assert result.outcome == "replied" and result.reply == "kept"


def test_an_effect_records_its_intent_first_and_gets_a_stable_key():
    keys: list[str] = []

    async def handler(message, ctx):
        return await ctx.effect("charge", lambda effect: keys.append(effect.key) or "charged")

    env = RunEnvironment(agent="shop")
    result = run(env.run(handler))
    assert result.reply == "charged" and keys == ["baton:test:shop:1:charge"]
    assert [(f["type"], f.get("phase")) for f in result.frames] == [("step", "intent"), ("step", "done"), ("reply", None)]


def test_an_effect_of_unknown_outcome_fails_the_attempt_with_ask_and_runs_again_with_retry():
    ran: list[str] = []

    async def asks(message, ctx):
        return await ctx.effect("charge", lambda effect: ran.append("ask"))

    async def retries(message, ctx):
        return await ctx.effect("charge", lambda effect: ran.append(effect.key) or "charged", on_unknown="retry")

    asked = run(RunEnvironment(journal=[unknown_effect("charge")]).run(asks))
    assert asked.outcome == "failed" and asked.error.startswith("outcome unknown: step charge"), asked
    retried = run(RunEnvironment(journal=[unknown_effect("charge", "retry")]).run(retries))
    assert retried.outcome == "replied" and ran == ["baton:test:test-agent:1:charge"], (retried, ran)


def test_ask_parks_with_its_question_and_returns_a_scripted_answer():
    async def handler(message, ctx):
        decision = await ctx.ask("refund 40 EUR?", choices=["refund", "refuse"])
        return f"{decision.choice} by {decision.by.token}: {decision.text}"

    parked = run(RunEnvironment().run(handler))
    assert parked.outcome == "parked" and parked.question == {"text": "refund 40 EUR?", "step": "ask:1",
                                                             "choices": ["refund", "refuse"]}, parked
    answered = run(RunEnvironment(journal=[answer("ask:1", "refund", "ok", by="ann")]).run(handler))
    assert answered.outcome == "replied" and answered.reply == "refund by ann: ok", answered


def test_cancel_stops_the_handler_and_nothing_more_is_written():
    seen: list[object] = []
    env = RunEnvironment()

    async def handler(message, ctx):
        await ctx.step("one", lambda: 1)
        env.cancel("no longer needed", by="ops")
        try:
            await ctx.step("two", lambda: 2)
        except asyncio.CancelledError:
            seen.append(ctx.lost)
            raise
        return "never"

    result = run(env.run(handler))
    assert result.outcome == "cancelled" and result.reply is None, result
    assert isinstance(seen[0], baton.MessageCancelledError) and seen[0].reason == "no longer needed" and seen[0].by == "ops"
    assert [f.get("name") for f in result.frames] == ["one"], result.frames


def test_a_handler_that_raises_fails_the_attempt_with_its_message():
    async def handler(message, ctx):
        raise RuntimeError("the model timed out")

    result = run(RunEnvironment().run(handler))
    assert result.outcome == "failed" and result.error == "the model timed out" and result.reply is None


def test_a_run_lost_while_its_handler_runs_on_posts_nothing_even_if_the_handler_returns():
    env = RunEnvironment()

    async def handler(message, ctx):
        await ctx.step("one", lambda: 1)
        env.lose("stale_token")
        return "a reply nobody may post"  # returns before its next await: the cancellation never lands

    result = run(env.run(handler))
    assert result.outcome == "lost" and result.lost.code == "stale_token" and result.reply is None, result
    assert [f["type"] for f in result.frames] == ["step"], result.frames
