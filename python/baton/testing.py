"""Run a handler against a message in memory, for your own unit tests (as Temporal's
``ActivityEnvironment`` runs an activity without a server).

The handler gets the same ``MessageContext`` as under ``baton.serve``, and its run goes through the
same journal and lifecycle; only the coordinator is replaced by a small one in memory that keeps
the journal as the real one does (a done record is final; an effect's intent gets an idempotency
key; a reply while an effect's outcome is unknown is refused). Nothing leaves the process::

    from baton.testing import RunEnvironment, answer, recorded, unknown_effect

    env = RunEnvironment(journal=[answer("ask:1", "approve")])
    result = await env.run(handler, "refund order 7")
    assert result.outcome == "replied" and result.reply == "refunded"
    assert env.journal["refund"]["status"] == "done"

``journal`` is what earlier attempts left: ``recorded(name, value)`` (a step or effect that
completed; it replays), ``unknown_effect(name)`` (an effect whose outcome nobody knows) and
``answer(name, choice)`` (a person's answer to ``ctx.ask``; without one, ``ask`` parks and
``result.question`` is what it asked). ``env.cancel(reason)`` cancels the run as ``baton cancel``
does; ``env.lose(code)`` takes it away as a revoke does.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Sequence

from ._run_context import Handler, MessageContext
from ._journal_rules import refusal
from ._handler import Answerer, JournalEntry, PersonAnswer
from ._run import Run
from ._system_clock import SYSTEM_CLOCK
from ._wire import valid_client_frame
from ._wire_types import ClientFrame, MessageServerFrame
from .errors import LeaseLostError, MessageCancelledError

__all__ = ["RunEnvironment", "RunResult", "answer", "recorded", "unknown_effect"]

Outcome = Literal["replied", "failed", "parked", "cancelled", "lost"]


def recorded(name: str, value: Any, kind: Literal["step", "effect"] = "step") -> JournalEntry:
    """A step (or effect) an earlier attempt completed: ``ctx.step(name, fn)`` returns ``value`` without calling ``fn``."""
    return {"name": name, "kind": kind, "status": "done", "value": value, "on_unknown": None if kind == "step" else "ask",
            "attempt": 0}


def unknown_effect(name: str, on_unknown: Literal["ask", "retry"] = "ask") -> JournalEntry:
    """An effect an earlier attempt began and never recorded an outcome for."""
    return {"name": name, "kind": "effect", "status": "intent", "value": None, "on_unknown": on_unknown, "attempt": 0}


def answer(name: str, choice: str = "approve", text: Optional[str] = None, by: str = "tester", at: float = 0.0) -> JournalEntry:
    """A person's answer to the ask named ``name`` (``ask:1`` for a run's first ask without a name)."""
    given = PersonAnswer(choice=choice, text=text, by=Answerer(account="test", token=by, via="test"), at=at)
    return {"name": name, "kind": "answer", "status": "done", "value": given.to_value(), "on_unknown": None, "attempt": 0}


@dataclass(frozen=True)
class RunResult:
    """How a run ended: ``replied`` (``reply`` is its text), ``failed`` (``error`` is the reason a
    ``fail`` carried), ``parked`` (``question`` is what an ask asked, None for ``ctx.park``),
    ``cancelled`` or ``lost``; ``frames`` are the frames it wrote, in order."""
    outcome: Outcome
    reply: Optional[str] = None
    error: Optional[str] = None
    question: Optional[dict[str, Any]] = None
    lost: Optional[LeaseLostError] = None
    frames: tuple[dict[str, Any], ...] = field(default=())


class _MemoryCoordinator:
    """The coordinator's side of one run, in memory: the journal rules a handler can observe."""

    def __init__(self, agent: str, entries: Sequence[JournalEntry]) -> None:
        self.agent = agent
        self.journal: dict[str, dict[str, Any]] = {e["name"]: dict(e) for e in entries}
        self.frames: list[dict[str, Any]] = []
        self.blobs: dict[str, bytes] = {}
        self.refuse_with: Optional[str] = None
        self.attempt = 1
        self.reply: Optional[str] = None
        self.question: Optional[dict[str, Any]] = None
        self.fail_reason: Optional[str] = None
        self.checkpoint: Any = None

    async def write(self, frame: ClientFrame, fenced: bool = False) -> dict[str, Any]:
        if not valid_client_frame(frame):
            raise ValueError(f"{frame.get('type')} frame does not match the wire schema: {frame!r}")
        self.frames.append(dict(frame))
        await asyncio.sleep(0)  # a write is an await under serve too: cancellation can reach the handler here
        if self.refuse_with is not None:
            raise LeaseLostError(f"the coordinator refused the {frame['type']}: {self.refuse_with}", self.refuse_with)
        # Both checkpoint frames are answered as op "checkpoint", as the coordinator answers them.
        op = "checkpoint" if frame["type"] in ("agent_checkpoint", "message_checkpoint") else frame["type"]
        base = {"type": "result", "op": op, "id": frame.get("id"), "token": frame.get("token")}
        try:
            return {**base, **getattr(self, f"_{op}")(frame)}
        except _Refusal as refused:
            raise refusal(frame["type"], {"type": "error", "code": refused.code, "message": str(refused)})[0] from None  # type: ignore[typeddict-item]

    def _step(self, frame: Any) -> dict[str, Any]:
        name, known = frame["name"], self.journal.get(frame["name"])
        if known is not None and known["status"] == "done":
            return self._step_answer(known, duplicate=True)
        if frame["phase"] == "intent" and known is not None and known.get("attempt") == self.attempt:
            raise _Refusal("effect_in_progress", f"effect {name} is already under way in this attempt")
        entry = {"name": name, "kind": frame["kind"], "status": frame["phase"], "value": frame.get("value"),
                 "on_unknown": frame.get("on_unknown"), "attempt": self.attempt}
        if "blob" in frame:
            entry["blob"] = {"id": frame["blob"], "bytes": len(self.blobs[frame["blob"]])}
        if frame["kind"] == "effect":
            entry["idempotency_key"] = f"baton:test:{self.agent}:{frame['id']}:{name}"
        self.journal[name] = entry
        return self._step_answer(entry, duplicate=False)

    @staticmethod
    def _step_answer(entry: dict[str, Any], duplicate: bool) -> dict[str, Any]:
        out = {"name": entry["name"], "status": entry["status"], "duplicate": duplicate, "value": entry.get("value")}
        for key in ("blob", "idempotency_key"):
            if key in entry:
                out[key] = entry[key]
        return out

    def _reply(self, frame: Any) -> dict[str, Any]:
        unknown = [e["name"] for e in self.journal.values() if e["kind"] == "effect" and e["status"] == "intent"
                   and e.get("on_unknown") == "ask" and e.get("attempt") == self.attempt]
        if unknown:
            raise _Refusal("outcome_unknown", f"effect {unknown[0]} began and recorded no outcome")
        self.reply = self.blobs[frame["blob"]].decode() if "blob" in frame else frame["text"]
        return {"fence": -1, "key": frame["key"], "duplicate": False}

    def _fail(self, frame: Any) -> dict[str, Any]:
        self.fail_reason = frame["reason"]
        return {"status": "queued", "retry_at": None}

    def _park(self, frame: Any) -> dict[str, Any]:
        self.question = frame.get("question")
        return {"deadline": None}

    def _checkpoint(self, frame: Any) -> dict[str, Any]:
        self.checkpoint = frame.get("value")
        return {}

    def _heartbeat(self, frame: Any) -> dict[str, Any]:
        return {"expires_at": None}

    def _ack(self, frame: Any) -> dict[str, Any]:
        return {"fence": -1, "key": None, "duplicate": True}

    async def upload(self, run: Run, raw: bytes, what: str) -> str:
        blob = f"b-{secrets.token_hex(16)}"
        self.blobs[blob] = raw
        return blob

    async def download(self, run: Run, blob: str) -> bytes:
        return self.blobs[blob]

    def event(self, **event: Any) -> None:
        pass


class _Refusal(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class RunEnvironment:
    """One in-memory coordinator for one message; ``run`` runs a handler against it (again and again:
    each run is the next attempt, and sees what the earlier ones recorded)."""

    def __init__(self, *, agent: str = "test-agent", journal: Sequence[JournalEntry] = (), checkpoint: Any = None,
                 message_checkpoint: Any = None, fence: int = 1) -> None:
        self.agent = agent
        self._coordinator = _MemoryCoordinator(agent, journal)
        self._coordinator.checkpoint = message_checkpoint
        self.checkpoint = checkpoint
        self.fence = fence
        self._run: Optional[Run] = None
        self._attempts = 0

    @property
    def journal(self) -> dict[str, dict[str, Any]]:
        """What the coordinator holds for the message now, by step name."""
        return self._coordinator.journal

    async def run(self, handler: Handler, text: str = "", *, id: int = 1, resume_input: Optional[str] = None,
                  resume_choice: Optional[str] = None) -> RunResult:
        """Runs ``handler`` once as attempt N (1, then 2, ...) of message ``id`` and says how it ended."""
        self._attempts += 1
        coordinator = self._coordinator
        coordinator.attempt, coordinator.refuse_with = self._attempts, None
        coordinator.frames, coordinator.reply, coordinator.question, coordinator.fail_reason = [], None, None, None
        frame: MessageServerFrame = {"type": "message", "id": id, "text": text, "attempt": self._attempts, "created_at": 0,
                                     "run": True, "token": self._attempts, "run_key": "test", "steps": list(coordinator.journal.values()),  # type: ignore[arg-type]
                                     "checkpoint": coordinator.checkpoint}  # type: ignore[typeddict-item]
        if resume_input is not None:
            frame["resume_input"] = resume_input
        if resume_choice is not None:
            frame["resume_choice"] = resume_choice
        run = self._run = Run(frame, coordinator, self.fence, SYSTEM_CLOCK)

        def kept(value: Any) -> None:
            self.checkpoint = value

        ctx = MessageContext(run, self.checkpoint, kept)
        task = asyncio.get_running_loop().create_task(run.execute(lambda: handler(run.message, ctx)))
        try:
            await asyncio.wait([task])  # not `await task`: a run lost between two awaits ends its task cancelled
        finally:
            self._run = None
            task.cancel()
        ended = None if task.cancelled() else task.result()
        outcome: Outcome = ("cancelled" if isinstance(run.lost, MessageCancelledError) else "lost" if run.lost is not None
                            else "parked" if run.parked else "replied" if ended == "replied" else "failed")
        return RunResult(outcome=outcome, reply=coordinator.reply, error=coordinator.fail_reason, question=coordinator.question,
                         lost=run.lost, frames=tuple(coordinator.frames))

    def cancel(self, reason: Optional[str] = None, by: str = "tester") -> None:
        """Cancels the run in progress as ``baton cancel`` does: its handler's task is cancelled,
        ``ctx.lost`` is a MessageCancelledError, and every later write is refused."""
        self._stop(MessageCancelledError(self._running().id, by, reason), "cancelled")

    def lose(self, code: str = "stale_token") -> None:
        """Takes the message away from the run in progress (a revoke, another runner's token)."""
        self._stop(LeaseLostError(f"the coordinator took message {self._running().id} back ({code})", code), code)

    def _running(self) -> Run:
        if self._run is None:
            raise RuntimeError("no run is in progress: call cancel() or lose() from the handler or while run() is awaited")
        return self._run

    def _stop(self, reason: LeaseLostError, code: str) -> None:
        self._coordinator.refuse_with = code
        self._running().abort(reason)
