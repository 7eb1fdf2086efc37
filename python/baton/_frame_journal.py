"""The journal's shell for one run: ``ctx.step``, ``ctx.effect``, ``ctx.ask``, parking, checkpoints
and heartbeats. Each asks the run's :class:`baton._journal_rules.Journal` what to do, sends what it
returns through the run, calls the user's ``fn`` when the journal says so, and hands the answer back.
Large values go to the coordinator's R2 first (the run's port uploads them).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any, Callable, Coroutine, Optional, Sequence

from ._journal_rules import CHECKPOINT_BYTES, STEP_VALUE_BYTES
from ._handler import JournalEntry, PersonAnswer, check_step_name, json_bytes
from ._run import Run
from ._wire_types import OnUnknown, ParkFrameQuestion, StepFrame
from .errors import CoordinatorError, WaitingForPersonError

__all__ = ["Effect", "agent_checkpoint", "ask", "checkpoint", "effect", "heartbeat", "park", "step", "value_of"]


class Effect:
    """What ``ctx.effect``'s ``fn`` gets: ``key``, the same on every attempt of the message on every
    machine and different in every account (``baton:ACCOUNT_TAG:AGENT:ID:NAME``, made by the
    coordinator), to pass to the external API as its idempotency key, and
    ``lost_event``, set the moment the run may no longer act (``cancelled`` says the same)."""

    __slots__ = ("key", "lost_event", "_run")

    def __init__(self, key: str, run: Run) -> None:
        self.key = key
        self.lost_event = run.lost_event
        self._run = run

    @property
    def cancelled(self) -> bool:
        return self._run.lost is not None

    def __repr__(self) -> str:
        return f"Effect(key={self.key!r})"


async def _call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _once(run: Run, name: str, body: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """One call per name at a time in an attempt: a second, concurrent call (asyncio.gather, a retry
    wrapper) gets the first one's result instead of writing again. The first caller awaits the
    call's task itself, so cancelling the handler cancels it; later callers only wait."""
    check_step_name(name)
    running = run.inflight.get(name)
    if running is not None:
        return await asyncio.shield(running)
    task = asyncio.get_running_loop().create_task(body())
    run.inflight[name] = task
    task.add_done_callback(lambda _: run.inflight.pop(name, None))
    return await task


async def value_of(run: Run, entry: JournalEntry) -> Any:
    """A recorded result: inline, or read back from the coordinator's R2."""
    ref = entry.get("blob")
    return entry.get("value") if ref is None else await run.read_json(ref, f"step {entry.get('name')}'s result")


async def _record(run: Run, frame: StepFrame, uploaded: Optional[tuple[str, Any]] = None) -> tuple[str, Any]:
    """Writes one journal record; returns its status and, when done, its value."""
    answer = await run.write(frame)
    entry = run.journal.written(frame, answer)  # type: ignore[arg-type]
    blob = entry.get("blob")
    if uploaded is not None and blob is not None and blob.get("id") == uploaded[0]:
        run.blob_values[uploaded[0]] = uploaded[1]  # the bytes just uploaded: no need to read them back
    return entry["status"], (await value_of(run, entry) if entry["status"] == "done" else None)


async def _done(run: Run, name: str, kind: Any, on_unknown: Optional[OnUnknown], value: Any) -> Any:
    """Records ``value`` as the outcome; over STEP_VALUE_BYTES of JSON it is uploaded as a blob first."""
    raw = json_bytes(value, "a step's result")
    if len(raw) <= STEP_VALUE_BYTES:
        return (await _record(run, run.journal.step_frame(name, kind, "done", on_unknown, {"value": json.loads(raw)})))[1]
    blob = await run.upload(raw, "a step's result")
    frame = run.journal.step_frame(name, kind, "done", on_unknown, {"blob": blob})
    return (await _record(run, frame, (blob, json.loads(raw))))[1]


async def step(run: Run, name: str, fn: Callable[[], Any]) -> Any:
    async def body() -> Any:
        # A run that lost its message replays nothing either: the recorded result may be another attempt's.
        run.throw_if_lost()
        done = run.journal.replay(name, "step")
        if done is not None:
            return await value_of(run, done)
        return await _done(run, name, "step", None, await _call_maybe_async(fn))

    return await _once(run, name, body)


async def effect(run: Run, name: str, fn: Callable[[Effect], Any], on_unknown: str, approve: Optional[dict[str, Any]] = None) -> Any:
    policy = run.journal.check_on_unknown(on_unknown)
    wire = None if approve is None else run.journal.approval(approve)

    async def body() -> Any:
        run.throw_if_lost()
        done = run.journal.replay(name, "effect")
        if done is not None:
            return await value_of(run, done)
        if wire is not None:
            run.journal.check_not_denied(name)
        earlier = run.journal.records.get(name)
        # The intent is durable before the effect runs, so a successor knows it may have happened.
        try:
            status, value = await _record(run, run.journal.step_frame(name, "effect", "intent", policy, approve=wire))
        except CoordinatorError as err:
            if wire is None or err.code != "approval_required":
                raise
            # The coordinator stored the approval question for this attempt: parking carries it to a person.
            await park(run, (approve or {}).get("checkpoint"), (approve or {}).get("deadline_seconds"))
            raise WaitingForPersonError(run.id, wire["question"]) from None
        if status == "done":  # recorded already (a person answered --done meanwhile): its outcome stands
            return value
        key = run.journal.effect_key(name, earlier, policy, run.port.agent)
        run.journal.effects_running.add(name)
        try:
            value = await _call_maybe_async(fn, Effect(key, run))
        finally:
            run.journal.effects_running.discard(name)
        return await _done(run, name, "effect", policy, value)

    return await _once(run, name, body)


async def _checkpoint_body(run: Run, value: Any) -> dict[str, Any]:
    """A message checkpoint rides inline up to CHECKPOINT_BYTES of JSON; a larger one is uploaded first (R2)."""
    raw = json_bytes(value, "a checkpoint")
    return {"value": json.loads(raw)} if len(raw) <= CHECKPOINT_BYTES else {"blob": await run.upload(raw, "a checkpoint")}


async def park(run: Run, checkpoint_value: Any, deadline_seconds: Optional[int],
               question: Optional[ParkFrameQuestion] = None) -> None:
    run.throw_if_lost()
    deadline = run.journal.check_deadline(deadline_seconds)
    await run.flush_output()  # what the run wrote is stored before its lease goes
    body = None if checkpoint_value is None else await _checkpoint_body(run, checkpoint_value)
    await run.write(run.journal.park_frame(body, deadline, question))
    run.parked = True
    run.stop_timers()  # a parked message has no run timeout any more
    run.port.event(type="parked", id=run.id, token=run.token)


async def ask(run: Run, text: str, choices: Optional[Sequence[str]], deadline_seconds: Optional[int],
              on_deadline: Optional[str], name: Optional[str], checkpoint_value: Any,
              quorum: Optional[dict[str, Any]] = None) -> PersonAnswer:
    """The answer kept in the journal when this ask was answered; else the message parks with the question and this run ends."""
    question = run.journal.question(text, choices, on_deadline, name, quorum)
    run.journal.check_deadline(deadline_seconds)
    answered = run.journal.answered(question["step"])
    if answered is not None:
        return PersonAnswer.from_value(await value_of(run, answered), question["step"])
    await park(run, checkpoint_value, deadline_seconds, question)
    raise WaitingForPersonError(run.id, text)


async def checkpoint(run: Run, value: Any) -> None:
    """This message's checkpoint, under its token."""
    run.throw_if_lost()
    await run.write(run.journal.checkpoint_frame(await _checkpoint_body(run, value)))


async def agent_checkpoint(run: Run, fence: int, value: Any) -> None:
    """The agent's checkpoint, under the serve fence: inline only, at most CHECKPOINT_BYTES of JSON."""
    run.throw_if_lost()
    if len(json_bytes(value, "a checkpoint")) > CHECKPOINT_BYTES:
        raise ValueError(f"a checkpoint is JSON of at most {CHECKPOINT_BYTES} bytes")
    await run.write({"type": "agent_checkpoint", "fence": fence, "value": value}, fenced=True)


async def heartbeat(run: Run, details: Any) -> Optional[float]:
    sent_at = run.clock.now()
    answer = await run.write(run.journal.heartbeat_frame(details))
    if answer.get("op") != "heartbeat":
        raise CoordinatorError(None, "heartbeat answered with another result", 0, answer)
    run.heartbeat_confirmed(sent_at)
    return answer.get("expires_at")
