"""Python client for baton, a lease coordinator for AI agents.

* :func:`serve` runs an agent from this process: of all processes serving an agent, exactly one
  runs each message, and a handler is cancelled the moment its lease is lost.
* :func:`session_lease` holds a session lease for the duration of an ``async with`` block;
  :func:`run_with_session_lease` does the same for plain scripts.
"""

from .errors import BatonError, CoordinatorError, LeaseHeldError, LeaseLostError, OutcomeUnknownError, UnreachableError
from .serve import Effect, Message, MessageContext, ServeHandle, serve
from .session import SessionLease, run_with_session_lease, session_lease

__all__ = [
    "BatonError", "CoordinatorError", "LeaseHeldError", "LeaseLostError", "OutcomeUnknownError", "UnreachableError",
    "Effect", "Message", "MessageContext", "ServeHandle", "serve",
    "SessionLease", "run_with_session_lease", "session_lease",
]
__version__ = "0.1.0"
