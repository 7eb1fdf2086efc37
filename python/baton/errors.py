"""What can go wrong when talking to a baton coordinator, as exception classes.

``code`` is the coordinator's error code (see ``worker/wire/protocol.ts``) when it gave one.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

__all__ = ["BatonError", "CoordinatorError", "UnreachableError", "LeaseHeldError", "LeaseLostError", "OutcomeUnknownError",
           "WaitingForPersonError"]


class BatonError(Exception):
    """Base class of every error this package raises on purpose."""


class CoordinatorError(BatonError):
    """The coordinator answered, and refused: ``CoordinatorError(code, message)``.

    ``code`` is the coordinator's error code (``ErrorCode`` of ``baton._wire_types``; None when the
    answer was not a baton error body), ``message`` one line for a person, ``status`` the HTTP status
    (0 for a refusal on the WebSocket), ``details`` the other fields of the refusal (for example
    ``expires_at`` of a held lease).
    """

    def __init__(self, code: str | None, message: str, status: int = 0, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message.splitlines()[0] if message else str(code))
        self.code = code
        self.status = status
        self.details: Mapping[str, Any] = dict(details or {})


class UnreachableError(BatonError):
    """No answer: connection refused, name lookup failed, timeout, or what answered is not baton."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class LeaseHeldError(BatonError):
    """Another run holds the session lease (and waiting was not asked for, or timed out)."""

    def __init__(self, session: str, expires_at: float | None) -> None:
        text = f"the lease on {session} is held by another run"
        if expires_at is not None:
            text += f" until {expires_at:.0f} (ms since the epoch, coordinator's clock)"
        super().__init__(text)
        self.session = session
        self.expires_at = expires_at


class LeaseLostError(BatonError):
    """The lease ended before the work did.

    The coordinator refused a renewal or a write (``code`` is its error code: ``lease_lost``,
    ``stale_token``, ``stale_fence``, ``not_holder``, ...), took the message back (``revoked``),
    the local clock could no longer prove the lease (``lapsed``), or serving stopped
    (``stopped``). Work done under the lease from then on must be treated as not done.
    """

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class MessageCancelledError(LeaseLostError):
    """A person cancelled the message (``baton cancel``, the dashboard's Stop, POST …/cancel):
    ``by`` is the name of the token that cancelled, ``reason`` what its person said (or None). The
    message is ``cancelled`` for good; nothing the run writes any more is kept."""

    def __init__(self, id: int, by: str, reason: Optional[str]) -> None:
        super().__init__(f"message {id} was cancelled by {by}" + (f": {reason}" if reason else ""), "cancelled")
        self.id = id
        self.by = by
        self.reason = reason


class OutcomeUnknownError(BatonError):
    """An earlier attempt began the effect ``step`` (its intent is recorded) but recorded no outcome,
    and its policy is ``on_unknown="ask"``: nobody knows whether it happened. Raised by
    ``ctx.effect``; let it fail the attempt, and the coordinator parks the message as
    ``outcome unknown: step NAME`` until a person answers ``baton resume AGENT ID --done`` or ``--redo``.
    """

    def __init__(self, message: str, step: str) -> None:
        super().__init__(message)
        self.step = step


class WaitingForPersonError(BatonError):
    """Raised by ``ctx.ask`` once the message is parked with its question: the run ends here (let it
    propagate; serve treats it as parked, not failed, and posts nothing), and the handler runs again
    from the top when a person answers, when ``ask`` returns the answer. ``id`` is the message's id,
    ``question`` the text asked.
    """

    def __init__(self, id: int, question: str) -> None:
        super().__init__(f"message {id} waits for a person: {question}")
        self.id = id
        self.question = question


class ApprovalDeniedError(BatonError):
    """A person answered the approval question of the effect ``step`` with ``choice``, another of the
    question's choices than approve (reject ends the message instead): ``ctx.effect`` never runs ``fn``
    on it. ``answer`` is the person's answer as kept in the journal."""

    def __init__(self, step: str, choice: str, answer: Any) -> None:
        super().__init__(f'effect "{step}" was not approved: a person chose {choice!r}')
        self.step = step
        self.choice = choice
        self.answer = answer
