"""A person in the loop in the Python client against a real wrangler dev, as the TypeScript client's
(test/e2e/person-in-the-loop.test.ts): ctx.ask parks the message with its question; approved
(baton.approve), the handler runs again from the top, recorded steps replay and ask returns the
answer; rejected, the message ends and never runs again; an answer is taken once, and only one of
the question's choices; a deadline that approves resumes it by itself; retry queues a failed
message again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conftest import DEV_TOKEN, unique
from e2e_helpers import parked, serving, wait_message


def test_ask_parks_with_the_question_and_approve_runs_the_handler_again_where_ask_returns_the_answer(dev):
    """Rule: ask parks the message with its question (nothing is replied, no attempt fails); approve
    queues it again, the handler runs from the top (code before ask once per attempt, a step before
    it replayed) and ask returns the answer recorded under its step (ask:1), with its text and who gave it."""
    import baton

    agent = unique("py-ask")
    calls: list[str] = []
    waits: list[tuple[int, str]] = []
    seen: list[baton.Message] = []
    answers: list[baton.PersonAnswer] = []

    async def handle(message, ctx):
        seen.append(message)
        calls.append("top")
        plan = await ctx.step("plan", lambda: calls.append("plan") or "the plan")
        try:
            answer = await ctx.ask(f"Run {plan} for {message.text}?", deadline_seconds=600)
        except baton.WaitingForPersonError as waiting:
            waits.append((waiting.id, waiting.question))
            raise
        answers.append(answer)
        calls.append(f"answered {answer.choice}")
        return f"{answer.choice}: {answer.text} (by {answer.by.via})"

    async def main():
        h = await serving(dev, agent, handle)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "the migration")
            asked = await wait_message(dev, agent, mid, parked)
            view = await asyncio.to_thread(baton.approve, agent, mid, text="go ahead", url=dev.url, token=DEV_TOKEN)
            done = await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
            return mid, asked, view, done
        finally:
            await h.stop()

    mid, asked, view, done = asyncio.run(main())
    assert asked["question"]["text"] == "Run the plan for the migration?", asked
    assert asked["question"]["choices"] == [] and asked["question"]["on_deadline"] == "fail", asked
    assert asked["attempts"] == 1 and asked["failures"] == 0 and asked["reply"] is None, asked
    assert waits == [(mid, "Run the plan for the migration?")], waits
    assert view["id"] == mid and view["status"] in ("queued", "running"), view
    assert [(a["choice"], a["text"], a["via"]) for a in view["answers"]] == [("approve", "go ahead", "http")], view
    assert done["reply"] == "approve: go ahead (by http)", done
    assert calls == ["top", "plan", "top", "answered approve"], calls
    assert [(s["name"], s["status"]) for s in done["steps"]] == [("plan", "done"), ("ask:1", "done")], done
    (answer,) = answers
    assert isinstance(answer, baton.PersonAnswer) and isinstance(answer.by, baton.Answerer), answer
    assert answer.by.via == "http" and answer.at > 0, answer
    assert [(m.attempt, m.resume_choice, m.resume_input) for m in seen] == [(1, None, None), (2, "approve", "go ahead")], seen


def test_reject_ends_the_message_as_rejected_and_its_handler_never_runs_again(dev):
    """Rule: reject ends a parked message as rejected; it is never handed out again."""
    import baton

    agent = unique("py-reject")
    runs: list[int] = []

    async def handle(message, ctx):
        runs.append(message.attempt)
        await ctx.ask("Delete the old bucket?")
        return "deleted"

    async def main():
        h = await serving(dev, agent, handle)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "cleanup")
            await wait_message(dev, agent, mid, parked)
            view = await asyncio.to_thread(baton.reject, agent, mid, text="not this week", url=dev.url, token=DEV_TOKEN)
            await asyncio.sleep(1.5)  # time to hand it out again, were it queued
            return view, await asyncio.to_thread(dev.message, agent, mid)
        finally:
            await h.stop()

    view, later = asyncio.run(main())
    assert view["status"] == "rejected", view
    assert later["status"] == "rejected" and later["attempts"] == 1 and later["reply"] is None, later
    assert [(a["choice"], a["text"]) for a in later["answers"]] == [("reject", "not this week")], later
    assert runs == [1], runs


def test_a_question_is_answered_once_a_second_answer_is_refused_as_not_parked(dev):
    """Rule: only a parked message takes an answer: answering twice is 409 not_parked, and the first answer stands."""
    import baton

    agent = unique("py-twice")

    async def handle(message, ctx):
        answer = await ctx.ask("Publish?")
        return answer.choice

    async def main():
        h = await serving(dev, agent, handle)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "post")
            await wait_message(dev, agent, mid, parked)
            await asyncio.to_thread(baton.approve, agent, mid, url=dev.url, token=DEV_TOKEN)
            with pytest.raises(baton.CoordinatorError) as twice:
                await asyncio.to_thread(baton.reject, agent, mid, text="changed my mind", url=dev.url, token=DEV_TOKEN)
            done = await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
            with pytest.raises(baton.CoordinatorError) as after:
                await asyncio.to_thread(baton.approve, agent, mid, url=dev.url, token=DEV_TOKEN)
            return twice.value, after.value, done
        finally:
            await h.stop()

    twice, after, done = asyncio.run(main())
    assert (twice.status, twice.code) == (409, "not_parked"), twice
    assert (after.status, after.code) == (409, "not_parked"), after
    assert done["reply"] == "approve", done
    assert [a["choice"] for a in done["answers"]] == ["approve"], done


def test_a_question_with_choices_takes_only_those_and_ask_returns_the_one_picked(dev):
    """Rule: a question with choices is answered with one of them (or reject); approve or another
    choice is 400 bad_request and leaves it parked. The park's checkpoint reaches the next attempt."""
    import baton

    agent = unique("py-choices")
    seen: list[tuple[Any, str | None]] = []

    async def handle(message, ctx):
        seen.append((ctx.message_checkpoint, message.resume_choice))
        answer = await ctx.ask("Ship v2 to production?", choices=["ship", "hold"], name="release",
                               checkpoint={"draft": 2})
        return f"{answer.choice}: {answer.text}"

    async def main():
        h = await serving(dev, agent, handle)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "release v2")
            asked = await wait_message(dev, agent, mid, parked)
            refused = []
            for choice in ("approve", "deploy"):
                with pytest.raises(baton.CoordinatorError) as bad:
                    await asyncio.to_thread(baton.answer, agent, mid, choice, url=dev.url, token=DEV_TOKEN)
                refused.append(bad.value)
            still = await asyncio.to_thread(dev.message, agent, mid)
            await asyncio.to_thread(baton.answer, agent, mid, "ship", text="after the standup", via="cli",
                                    url=dev.url, token=DEV_TOKEN)
            done = await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
            return asked, refused, still, done
        finally:
            await h.stop()

    asked, refused, still, done = asyncio.run(main())
    assert asked["question"]["choices"] == ["ship", "hold"], asked
    assert asked["checkpoint"] == {"draft": 2}, asked
    assert [(e.status, e.code) for e in refused] == [(400, "bad_request")] * 2, refused
    assert still["status"] == "parked" and still["answers"] == [], still
    assert done["reply"] == "ship: after the standup", done
    assert [(a["choice"], a["via"]) for a in done["answers"]] == [("ship", "cli")], done
    assert "release" in [s["name"] for s in done["steps"]], done
    assert seen == [(None, None), ({"draft": 2}, "ship")], seen


def test_a_question_whose_deadline_approves_resumes_by_itself(dev):
    """Rule: with on_deadline="approve", nobody answering within deadline_seconds approves it, recorded as answered by the deadline."""
    import baton

    agent = unique("py-deadline")

    async def handle(message, ctx):
        answer = await ctx.ask("Renew the certificate?", deadline_seconds=1, on_deadline="approve")
        return f"{answer.choice} by {answer.by.via}"

    async def main():
        h = await serving(dev, agent, handle)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "renew")
            return await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
        finally:
            await h.stop()

    done = asyncio.run(main())
    assert done["reply"] == "approve by deadline", done


def test_retry_queues_a_failed_message_again_with_fresh_tries_as_its_next_attempt(dev):
    """Rule: retry takes only a failed message and queues it with a fresh set of tries, its attempt
    numbers going on: the run after it is attempt 2. (Its first attempt fails on an ask the
    coordinator would refuse: a ValueError, never a park.)"""
    import baton

    agent = unique("py-retry-failed")
    runs: list[int] = []

    async def handle(message, ctx):
        runs.append(message.attempt)
        if len(runs) == 1:  # a question the coordinator would refuse: ValueError before the park, a failed attempt
            await ctx.ask("Go?", on_deadline="later")
        return "done on retry"

    status, _ = dev.request("PUT", f"/agents/{agent}/policy", {"max_attempts": 1})
    assert status == 200

    async def main():
        h = await serving(dev, agent, handle)
        try:
            mid = await asyncio.to_thread(dev.post_message, agent, "sync")
            failed = await wait_message(dev, agent, mid, lambda m: m["status"] == "failed")
            view = await asyncio.to_thread(baton.retry, agent, mid, url=dev.url, token=DEV_TOKEN)
            done = await wait_message(dev, agent, mid, lambda m: m["status"] == "acknowledged")
            with pytest.raises(baton.CoordinatorError) as again:
                await asyncio.to_thread(baton.retry, agent, mid, url=dev.url, token=DEV_TOKEN)
            return failed, view, done, again.value
        finally:
            await h.stop()

    failed, view, done, again = asyncio.run(main())
    assert failed["error"].startswith("on_deadline is one of fail, approve, reject, escalate"), failed
    assert view["status"] in ("queued", "running"), view
    assert done["reply"] == "done on retry", done
    assert (again.status, again.code) == (409, "not_parked"), again
    assert runs == [1, 2], runs
    assert (done["attempts"], done["retried_after"]) == (2, 1), done


def test_ask_and_the_answer_functions_refuse_bad_arguments_before_anything_is_sent():
    """Rule: what the coordinator would refuse is a ValueError here, raised before a request or a park."""
    import baton
    from baton._wire import valid_client_frame

    with pytest.raises(ValueError):
        baton.approve("a", 0, url="http://127.0.0.1:9", token="t")
    with pytest.raises(ValueError):
        baton.answer("a", 1, "ship", url="http://127.0.0.1:9", token="t", via="email")
    park = {"type": "park", "id": 3, "token": 7, "deadline_seconds": 60, "req": "r1",
            "question": {"text": "Ship?", "step": "ask:1", "choices": ["ship", "hold"], "on_deadline": "approve"}}
    assert valid_client_frame(park)
    assert not valid_client_frame({**park, "question": {"text": "Ship?", "on_deadline": "later"}})
    assert not valid_client_frame({**park, "question": {"text": "", "step": "ask:1"}})
    answer = baton.PersonAnswer.from_value({"choice": "ship", "text": None, "by": {"account": "acc", "token": "dev", "via": "cli"},
                                            "at": 5}, "ask:1")
    assert answer == baton.PersonAnswer("ship", None, baton.Answerer("acc", "dev", "cli"), 5.0)
    with pytest.raises(TypeError):
        baton.PersonAnswer.from_value("the plan", "plan")
