"""A run that lost its message replays nothing: the recorded result it would return may be another
attempt's (issue 46: a stale ``baton step`` printed the new holder's output). ``ctx.step`` and
``ctx.effect`` raise LeaseLostError instead, as the TypeScript core does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from baton import LeaseLostError
from baton._frame_journal import effect, step
from baton._run import Run
from baton._system_clock import SYSTEM_CLOCK


class NeverWrites:
    agent = "a"

    async def write(self, frame: Any, fenced: bool = False) -> dict[str, Any]:
        raise AssertionError(f"no write expected, got {frame}")

    async def upload(self, run: Run, raw: bytes, what: str) -> str:
        raise AssertionError("no upload expected")

    async def download(self, run: Run, blob: str) -> bytes:
        raise AssertionError("no download expected")

    def event(self, **event: Any) -> None:
        pass


def handed_out() -> Run:
    frame: Any = {
        "type": "message", "id": 7, "token": 3, "text": "work", "run": True, "attempt": 1, "at": 0,
        "steps": [
            {"name": "draft", "kind": "step", "status": "done", "value": "wrote-by-other", "on_unknown": None, "attempt": 1},
            {"name": "mail", "kind": "effect", "status": "done", "value": "sent-by-other", "on_unknown": "ask", "attempt": 1},
        ],
    }
    return Run(frame, NeverWrites(), -1, SYSTEM_CLOCK)


def test_a_run_holding_its_message_replays_the_recorded_result():
    async def main():
        run = handed_out()
        return await step(run, "draft", lambda: "ran"), await effect(run, "mail", lambda _: "ran", "ask")

    assert asyncio.run(main()) == ("wrote-by-other", "sent-by-other")


def test_a_run_that_lost_its_message_raises_lease_lost_instead_of_replaying_a_step_or_an_effect():
    ran: list[str] = []

    async def main():
        run = handed_out()
        run.abort(LeaseLostError("the coordinator refused the step: stale_token", "stale_token"))
        with pytest.raises(LeaseLostError):
            await step(run, "draft", lambda: ran.append("step"))
        with pytest.raises(LeaseLostError):
            await effect(run, "mail", lambda _: ran.append("effect"), "ask")

    asyncio.run(main())
    assert ran == []
