"""Python client for baton, a lease coordinator for AI agents.

* :func:`serve` runs an agent from this process: of all processes serving an agent, exactly one
  runs each message, and a handler is cancelled the moment its lease is lost. ``ctx.ask`` parks a
  message for a person and returns the answer once given.
* :func:`send` posts a message to an agent (a ``send`` span whose trace the run continues, with
  ``opentelemetry-api`` installed: docs/guides/tracing.md).
* :func:`answer`, :func:`approve`, :func:`reject` and :func:`retry` are a person's side: they
  answer a parked message's question, or queue a failed message again; :func:`cancel` stops a
  message wherever it is; :func:`read_output` follows a message's live output (``ctx.output``).
* :func:`session_lease` holds a session lease for the duration of an ``async with`` block;
  :func:`run_with_session_lease` does the same for plain scripts.
* :data:`LIMITS` are the wire's limits (worker/wire/protocol.ts), generated into wire-schema.json.
"""

from ._wire import LIMITS
from .answers import answer, approve, reject, retry
from .cancel import cancel
from ._output_reader import read_output
from .schedules import add_schedule, get_schedule, list_schedules, pause_schedule, remove_schedule, resume_schedule
from .errors import (ApprovalDeniedError, BatonError, CoordinatorError, LeaseHeldError, LeaseLostError, MessageCancelledError, OutcomeUnknownError,
                     UnreachableError, WaitingForPersonError)
from .serve import Answerer, Effect, Message, MessageContext, PersonAnswer, ServeHandle, serve
from .send import send
from .session import SessionLease, run_with_session_lease, session_lease

__all__ = [
    "ApprovalDeniedError", "BatonError", "CoordinatorError", "LeaseHeldError", "LeaseLostError", "OutcomeUnknownError", "UnreachableError",
    "WaitingForPersonError", "MessageCancelledError",
    "Answerer", "Effect", "Message", "MessageContext", "PersonAnswer", "ServeHandle", "serve", "send",
    "answer", "approve", "reject", "retry", "cancel", "read_output",
    "add_schedule", "list_schedules", "get_schedule", "pause_schedule", "resume_schedule", "remove_schedule",
    "SessionLease", "run_with_session_lease", "session_lease",
    "LIMITS",
]
__version__ = "0.1.0"
