"""The step journal of one attempt and its rules, without I/O: which frame a step, an effect, an ask,
a park, a reply or a fail sends, what an answer means, and when a recorded value replays instead.
The shell (_frame_journal.py, writing through a run whose port is the socket, memory in
baton.testing, or the transcript replay's fake link) sends what this returns and hands back what
came in; nothing here awaits, sleeps or reads a clock.

The effect algorithm (intent, call, outcome, unknown) as client/core/journal-rules.ts:
an effect's intent is recorded before its ``fn`` runs; an intent without an outcome from an
earlier attempt is unknown: ``retry`` runs it again under the same key, ``ask`` fails the attempt
so the coordinator parks the message for a person.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Sequence

from ._handler import JournalEntry, check_step_name, error_text, kind_name
from ._wire import LIMITS, client_field, valid
from ._wire_types import (AckFrame, MessageCheckpointFrame, ErrorServerFrame, FailFrame, HeartbeatFrame, MessageServerFrame, OnDeadline,
                          OnUnknown, ParkFrame, ParkFrameQuestion, ReplyFrame, StepFrame, StepResult)
from .errors import ApprovalDeniedError, CoordinatorError, LeaseLostError, OutcomeUnknownError
from ._wire_types import ON_DEADLINE

__all__ = ["Journal", "LEASE_GONE", "MESSAGE_GONE", "ReplyOutcome", "approval_step", "refusal"]


def approval_step(effect: str) -> str:
    """Where a person's answer other than approve is kept for an effect that needs approval (as
    worker/wire/approvals.ts approvalAnswerStep): an approval itself is a permit, never a record."""
    return f"ask:approve:{effect}"[:128]

ON_UNKNOWN: tuple[OnUnknown, ...] = ("ask", "retry")
STEP_VALUE_BYTES: int = LIMITS["stepValueBytes"]
CHECKPOINT_BYTES: int = LIMITS["checkpointBytes"]
REPLY_BYTES: int = LIMITS["replyTextBytes"]

#: Refusals after which nothing more may be posted for the message (its run stops).
MESSAGE_GONE = frozenset({"stale_token", "message_not_running", "not_your_message", "cancelled"})
#: Refusals after which nothing more may be posted under the serve lease.
LEASE_GONE = frozenset({"stale_fence", "not_holder", "lease_expired", "lease_lost"})

#: What a refused reply means: ``park`` (the run asked a person and finished anyway), ``fail`` (an
#: effect of this attempt began and recorded no outcome), ``refused`` (nothing more to do).
ReplyOutcome = Literal["ran", "park", "fail", "refused"]


def refusal(frame_type: str, error: ErrorServerFrame) -> tuple[BaseException, bool]:
    """The exception a refusal of ``frame_type`` raises, and whether the run lost its message with it."""
    code = str(error.get("code"))
    if code in MESSAGE_GONE or code in LEASE_GONE:
        return LeaseLostError(f"the coordinator refused the {frame_type}: {code}", code), True
    return CoordinatorError(code, f"{frame_type} refused: {error.get('message')}", 0, dict(error)), False


class Journal:
    """One attempt's journal: the records handed out with the message and every one it made since."""

    def __init__(self, frame: MessageServerFrame) -> None:
        self.id: int = frame["id"]
        self.token: int = frame.get("token") or 0
        self.attempt: int = int(frame.get("attempt", 1))
        self.records: dict[str, JournalEntry] = {e["name"]: e for e in frame.get("steps") or [] if isinstance(e.get("name"), str)}
        #: How many times this run called ``ask`` without a name (its default journal names: ask:1, ask:2, ...).
        self.asks = 0
        #: Effects of this attempt whose ``fn`` is running: an ``ask`` now is refused (it could never be answered).
        self.effects_running: set[str] = set()

    # -- steps and effects -------------------------------------------------------------------

    def replay(self, name: str, kind: Literal["step", "effect"]) -> Optional[JournalEntry]:
        """The done record to return instead of running ``fn``; None when ``fn`` must run. TypeError for a
        bad name or one recorded as another kind."""
        check_step_name(name)
        known = self.records.get(name)
        if known is not None and known.get("kind") != kind:
            raise TypeError(f'"{name}" is recorded as {kind_name(known.get("kind"))}; {kind_name(kind)} needs a name of its own')
        return known if known is not None and known.get("status") == "done" else None

    def step_frame(self, name: str, kind: Literal["step", "effect"], phase: Literal["intent", "done"],
                   on_unknown: Optional[OnUnknown], body: Optional[dict[str, Any]] = None,
                   approve: Optional[dict[str, Any]] = None) -> StepFrame:
        """A journal write; ``body`` is ``{"value": v}`` or ``{"blob": id}`` for a done record; ``approve``
        (an effect's intent only) the question and arguments a person must approve."""
        frame: StepFrame = {"type": "step", "id": self.id, "token": self.token, "name": name, "kind": kind, "phase": phase}
        frame.update(body or {})  # type: ignore[typeddict-item]
        if on_unknown is not None:
            frame["on_unknown"] = on_unknown
        if approve is not None:
            frame["approve"] = approve  # type: ignore[typeddict-item]
        return frame

    @staticmethod
    def approval(approve: Any) -> dict[str, Any]:
        """``ctx.effect``'s ``approve`` as the wire carries it (question, args, choices); ValueError for
        one the coordinator would refuse."""
        if not isinstance(approve, dict) or "question" not in approve or "args" not in approve:
            raise ValueError("approve is a dict with question and args (and optionally choices, checkpoint, deadline_seconds, "
                             f"on_deadline), not {approve!r}")
        wire = {k: approve[k] for k in ("question", "args", "choices", "on_deadline", "needs", "approvers", "reject_needs") if k in approve}
        if not valid(wire, client_field("step", "approve")):
            raise ValueError("approve.question is a text of 1-2000 characters, approve.args JSON, approve.choices "
                             f"distinct labels that include approve, not {wire!r}")
        return wire

    def check_not_denied(self, name: str) -> None:
        """A person's answer other than approve to the effect's approval question is final: it never
        runs on it (ApprovalDeniedError)."""
        answered = self.answered(approval_step(name))
        if answered is not None:
            value = answered.get("value")
            choice = value.get("choice") if isinstance(value, dict) else None
            raise ApprovalDeniedError(name, choice if isinstance(choice, str) else "", value)

    def written(self, frame: StepFrame, answer: StepResult) -> JournalEntry:
        """Records what the coordinator holds for ``frame``'s name after the write (``answer``)."""
        if answer.get("op") != "step":
            raise CoordinatorError(None, "step answered with another result", 0, dict(answer))
        entry: dict[str, Any] = {"name": frame["name"], "kind": frame["kind"], "status": answer.get("status"),
                                 "value": answer.get("value"), "on_unknown": frame.get("on_unknown"), "attempt": self.attempt}
        if isinstance(answer.get("idempotency_key"), str):
            entry["idempotency_key"] = answer["idempotency_key"]
        if isinstance(answer.get("blob"), dict):
            entry["blob"] = answer["blob"]
        self.records[frame["name"]] = entry  # type: ignore[assignment]
        return entry  # type: ignore[return-value]

    @staticmethod
    def check_on_unknown(on_unknown: str) -> OnUnknown:
        if on_unknown not in ON_UNKNOWN:
            raise ValueError(f'on_unknown is "ask" or "retry", not {on_unknown!r}')
        return on_unknown  # type: ignore[return-value]

    def effect_key(self, name: str, earlier: Optional[JournalEntry], on_unknown: OnUnknown, agent: str) -> str:
        """After the intent is written (and no outcome came back): the idempotency key to call ``fn``
        with; OutcomeUnknownError when an earlier attempt began it and a person must decide."""
        if earlier is not None and earlier.get("status") == "intent" and on_unknown == "ask":
            raise OutcomeUnknownError(
                f"outcome unknown: step {name}; a person decides: baton resume {agent} {self.id} --done | --redo", name)
        key = self.records[name].get("idempotency_key")
        if not isinstance(key, str):  # the coordinator makes the key; one that hands out none is too old
            raise CoordinatorError(None, f'effect "{name}": this coordinator hands out no idempotency key; it is too old for this client')
        return key

    # -- asking a person and parking ------------------------------------------------------------

    def question(self, text: str, choices: Optional[Sequence[str]], on_deadline: Optional[str],
                 name: Optional[str], quorum: Optional[dict[str, Any]] = None) -> ParkFrameQuestion:
        """The question an ask parks with, under its journal name (``ask:N`` when none); ValueError or
        TypeError for one the coordinator would refuse or that could never be answered."""
        if name is None:
            self.asks += 1
            name = f"ask:{self.asks}"
        check_step_name(name)
        question: ParkFrameQuestion = {"text": text, "step": name}
        if choices is not None:
            if isinstance(choices, str) or not all(isinstance(c, str) for c in choices):
                raise ValueError(f"choices must be a list of strings, not {choices!r}")
            question["choices"] = list(choices)
        if on_deadline is not None:
            if on_deadline not in ON_DEADLINE:
                raise ValueError(f"on_deadline is one of {', '.join(ON_DEADLINE)}, not {on_deadline!r}")
            question["on_deadline"] = on_deadline  # type: ignore[typeddict-item]
        for field, value in (quorum or {}).items():  # needs, reject_needs, approvers: several people decide it
            if value is not None:
                question[field] = list(value) if field == "approvers" else value  # type: ignore[literal-required]
        if not valid(question, client_field("park", "question")):
            raise ValueError("a question is a text of 1-2000 characters with at most 10 choices of 1-64 characters each "
                             "(needs and reject_needs of 1-20 only without choices, at most as many as its approvers), "
                             f"not {question!r}")
        if self.effects_running:  # parking here would leave the message waiting on the effect, where no answer reaches it
            raise TypeError(f'ask inside effect "{next(iter(self.effects_running))}": a question asked inside an effect '
                            "could never be answered; ask before the effect or after it")
        return question

    def answered(self, name: str) -> Optional[JournalEntry]:
        """The person's answer recorded under ``name``, or None. Only the coordinator's answer path
        writes a record of kind answer: a run's own step under this name is no answer."""
        known = self.records.get(name)
        if known is not None and known.get("kind") != "answer":
            raise TypeError(f'"{name}" is recorded as {kind_name(known.get("kind"))}, '
                            "not as a person's answer; an ask needs a name of its own")
        return known if known is not None and known.get("status") == "done" else None

    @staticmethod
    def check_deadline(deadline_seconds: Any) -> Optional[int]:
        if deadline_seconds is None:
            return None
        if isinstance(deadline_seconds, bool) or not isinstance(deadline_seconds, int) or not valid(
                deadline_seconds, client_field("park", "deadline_seconds")):
            raise ValueError(f"deadline_seconds is a whole number of seconds from 1 to 2592000, not {deadline_seconds!r}")
        return deadline_seconds

    def park_frame(self, body: Optional[dict[str, Any]], deadline_seconds: Optional[int],
                   question: Optional[ParkFrameQuestion]) -> ParkFrame:
        frame: ParkFrame = {"type": "park", "id": self.id, "token": self.token}
        frame.update(body or {})  # type: ignore[typeddict-item]
        if deadline_seconds is not None:
            frame["deadline_seconds"] = int(deadline_seconds)
        if question is not None:
            frame["question"] = question
        return frame

    # -- the other writes of a run --------------------------------------------------------------

    def checkpoint_frame(self, body: dict[str, Any]) -> MessageCheckpointFrame:
        return {"type": "message_checkpoint", "id": self.id, "token": self.token, **body}  # type: ignore[typeddict-item]

    def heartbeat_frame(self, details: Any) -> HeartbeatFrame:
        frame: HeartbeatFrame = {"type": "heartbeat", "id": self.id, "token": self.token}
        if details is not None:
            frame["details"] = details
        return frame

    def reply_frame(self, body: dict[str, Any]) -> ReplyFrame:
        return {"type": "reply", "id": self.id, "token": self.token, "key": f"{self.id}:reply", "text": "", **body}  # type: ignore[typeddict-item]

    def fail_frame(self, error: BaseException) -> FailFrame:
        return {"type": "fail", "id": self.id, "token": self.token, "reason": error_text(error)}

    def ack_frame(self) -> AckFrame:
        return {"type": "ack", "id": self.id, "token": self.token}

    @staticmethod
    def after_reply(refused: Optional[BaseException]) -> ReplyOutcome:
        """What follows a reply write: ``ran`` when stored; a refusal ``question_open`` parks the run
        (it asked and finished anyway), ``outcome_unknown`` fails it (the message waits for a person)."""
        code = getattr(refused, "code", None)
        if refused is None:
            return "ran"
        if code == "question_open":
            return "park"
        if code == "outcome_unknown":
            return "fail"
        return "refused"
