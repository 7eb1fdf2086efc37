"""What a handler is given and gets back (as client/work-loop.ts's AgentMessage and PersonAnswer):
the message, a person's answer and who gave it, and the small codecs the journal and the replies
share (compact JSON as JSON.stringify writes it, a fail reason cut to its limit, step names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from ._wire import LIMITS, step_name_pattern
from ._wire_types import MessageServerFrame, MessageServerFrameStepsItem

__all__ = ["Answerer", "JournalEntry", "Message", "PersonAnswer", "check_step_name", "error_text", "json_bytes", "kind_name"]

#: One record of a message's step journal, as the coordinator hands it out.
JournalEntry = MessageServerFrameStepsItem

FAIL_REASON_CHARS: int = LIMITS["failReasonChars"]
STEP_NAME_CHARS: int = LIMITS["stepNameChars"]


@dataclass(frozen=True)
class Message:
    id: int
    text: str
    #: 1 on first hand-out; more after a runner lost it or after a resume.
    attempt: int
    #: When the message was posted (ms since the epoch, coordinator's clock).
    created_at: float
    #: The message's own lease token; every write for it carries it.
    token: Optional[int]
    #: The input given with ``baton resume`` (None unless resumed).
    resume_input: Optional[str]
    group: Optional[str]
    #: Proves this hand-out over HTTP (a command's ``baton step``, any language); None from older coordinators.
    run_key: Optional[str] = None
    #: With the agent's heartbeat timeout: a run that sends no heartbeat within it is taken back; None: none.
    heartbeat_timeout_ms: Optional[float] = None
    #: The choice of the answer that queued it again (approve, or one its question offered); None when it was not answered.
    resume_choice: Optional[str] = None
    #: The W3C trace context its sender attached (None: none); with tracing on, the run span's (see baton/_tracing.py).
    traceparent: Optional[str] = None

    @classmethod
    def from_frame(cls, frame: MessageServerFrame) -> "Message":
        return cls(id=frame["id"], text=frame["text"], attempt=int(frame.get("attempt", 1)),
                   created_at=float(frame.get("created_at", 0)), token=frame.get("token"),
                   resume_input=frame.get("resume_input"), group=frame.get("group"), run_key=frame.get("run_key"),
                   heartbeat_timeout_ms=frame.get("heartbeat_timeout_ms"), resume_choice=frame.get("resume_choice"),
                   traceparent=frame.get("traceparent"))


@dataclass(frozen=True)
class Answerer:
    """Who answered a question: the account, the name of its token, and where the answer came from
    (``cli``, ``page``, ``http``; ``deadline`` when the deadline answered it)."""
    account: str
    token: str
    via: str


@dataclass(frozen=True)
class PersonAnswer:
    """A person's answer to ``ctx.ask``: the choice (``approve``, or one of the question's choices),
    the text they gave (None when none), who answered and when (ms since the epoch, coordinator's clock)."""
    choice: str
    text: Optional[str]
    by: Answerer
    at: float

    @classmethod
    def from_value(cls, value: Any, step: str) -> "PersonAnswer":
        """The answer as the coordinator records it in the journal ({choice, text, by: {account, token, via}, at})."""
        by = value.get("by") if isinstance(value, dict) else None
        if not (isinstance(value, dict) and isinstance(value.get("choice"), str) and isinstance(by, dict)
                and isinstance(value.get("at"), (int, float))):
            raise TypeError(f'"{step}" is recorded in the journal, but not as a person\'s answer; an ask needs a name of its own')
        text = value.get("text")
        return cls(choice=value["choice"], text=text if isinstance(text, str) else None,
                   by=Answerer(account=str(by.get("account", "")), token=str(by.get("token", "")), via=str(by.get("via", ""))),
                   at=float(value["at"]))

    def to_value(self) -> dict[str, Any]:
        """The journal's form of this answer (what ``from_value`` reads)."""
        return {"choice": self.choice, "text": self.text, "at": self.at,
                "by": {"account": self.by.account, "token": self.by.token, "via": self.by.via}}


def kind_name(kind: Any) -> str:
    return {"step": "a step", "effect": "an effect", "answer": "a person's answer"}.get(kind, repr(kind))


def check_step_name(name: Any) -> None:
    if not isinstance(name, str) or step_name_pattern().fullmatch(name) is None:
        raise TypeError(f"step names are 1-{STEP_NAME_CHARS} letters, digits, '.', '_', ':' or '-', got {name!r}")


def json_bytes(value: Any, what: str) -> bytes:
    """``value`` as compact UTF-8 JSON, as JSON.stringify writes it; TypeError when it is not JSON."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be JSON: {err}") from None


def truncate_utf8(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", errors="ignore")


def error_text(exc: BaseException) -> str:
    """A fail frame's reason: the error's text, cut to LIMITS.failReasonChars (UTF-8 bytes bound UTF-16 units)."""
    return truncate_utf8(str(exc) or type(exc).__name__, FAIL_REASON_CHARS)
