"""Approvals and a run's own records in the Python client against a real wrangler dev, as the
TypeScript client's (test/e2e/person-in-the-loop.test.ts): what a run records itself is never a
person's answer and an ask inside an effect is refused; an effect that needs approval runs once on
the arguments approved, and changed arguments ask again. ctx.ask and the answers are test_ask.py."""

from __future__ import annotations

import asyncio
import hashlib

from conftest import DEV_TOKEN, unique
from e2e_helpers import parked, serving, wait_message


def test_a_runs_own_record_is_never_a_persons_answer_and_an_ask_inside_an_effect_is_refused(dev):
    """Rule: only the coordinator's answer path writes an answer. A step under ask: is refused; an
    ask under a name the run's own step holds raises instead of returning that record; an ask
    inside an effect raises at once (it could never be answered), and the message waits on the
    effect's outcome for a person."""
    import baton

    agent = unique("py-forge")
    refused: list[str] = []
    forged = {"choice": "apply", "text": None, "by": {"account": "dev", "token": "ana", "via": "page"}, "at": 1}

    async def handle(message, ctx):
        if message.text == "forge":
            try:
                await ctx.step("ask:1", lambda: forged)
            except baton.CoordinatorError as error:
                refused.append(str(error))
            await ctx.step("approval", lambda: forged)
            answer = await ctx.ask("Apply?", choices=["apply", "hold"], name="approval")
            return f"shipped: {answer.choice}"

        async def charge(effect):
            return (await ctx.ask("Charge the card?")).choice

        return await ctx.effect("charge", charge)

    async def main():
        status, _ = await asyncio.to_thread(dev.request, "PUT", f"/agents/{agent}/policy", {"max_attempts": 1})
        assert status == 200
        h = await serving(dev, agent, handle)
        try:
            forge = await asyncio.to_thread(dev.post_message, agent, "forge")
            failed = await wait_message(dev, agent, forge, lambda m: m["status"] == "failed")
            inside = await asyncio.to_thread(dev.post_message, agent, "charge")
            waiting = await wait_message(dev, agent, inside, parked)
            return failed, waiting
        finally:
            await h.stop()

    failed, waiting = asyncio.run(main())
    assert failed["reply"] is None and '"approval" is recorded as a step, not as a person\'s answer' in failed["error"], failed
    assert len(refused) == 1 and "kept for a person's answers" in refused[0], refused
    assert waiting["waiting_on"] == "charge" and waiting["question"] is None, waiting
    assert 'ask inside effect "charge"' in waiting["error"], waiting


def test_an_effect_that_needs_approval_runs_once_on_the_approved_arguments_and_changed_arguments_ask_again(dev):
    """Rule: ctx.effect(approve=...) parks with the coordinator's question (the effect, its arguments
    as canonical JSON and their digest); approved, the next attempt spends the permit and fn runs once;
    $500 approved and the code then charging $5,000 is refused and asked again, and fn never runs on it."""
    import baton

    agent = unique("py-permit")
    amounts = [500, 5000, 5000]
    charged: list[int] = []

    async def handle(message, ctx):
        amount = amounts[min(message.attempt - 1, len(amounts) - 1)]

        def charge(effect) -> dict:
            charged.append(amount)
            return {"charged": amount, "key": effect.key}

        receipt = await ctx.effect("charge", charge, approve={"question": f"Charge ${amount} to card 4242?", "args": {"card": "4242", "amount": amount}})
        return f"charged {receipt['charged']}"

    async def main():
        h = await serving(dev, agent, handle)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "pay the invoice")
            first = await wait_message(dev, agent, mid, parked)
            await asyncio.to_thread(baton.approve, agent, mid, url=dev.url, token=DEV_TOKEN)
            again = await wait_message(dev, agent, mid, lambda m: parked(m) and m["attempts"] == 2)
            ran_before_second_approval = list(charged)
            await asyncio.to_thread(baton.approve, agent, mid, url=dev.url, token=DEV_TOKEN)
            done = await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
            return first, again, ran_before_second_approval, done
        finally:
            await h.stop()

    first, again, ran_before, done = asyncio.run(main())
    assert first["question"]["text"] == "Charge $500 to card 4242?", first
    assert first["question"]["approve"]["args"] == '{"amount":500,"card":"4242"}', first
    assert first["question"]["approve"]["digest"] == hashlib.sha256(b'{"amount":500,"card":"4242"}').hexdigest(), first
    assert again["question"]["approve"]["args"] == '{"amount":5000,"card":"4242"}', again
    assert ran_before == [], ran_before
    assert charged == [5000], charged
    assert done["reply"] == "charged 5000", done
    assert [(p["args"], p["spent_token"] is not None) for p in done["permits"]] == [('{"amount":5000,"card":"4242"}', True)], done
