"""Posting a message to an agent from a program (as client/send.ts): exactly one serving machine
runs it. With ``opentelemetry-api`` installed, the post is a ``send`` span (kind PRODUCER) and the
message carries its W3C traceparent, so the run on whichever machine, in either language, and every
retry of it continue the sender's trace.

The call blocks (urllib); from async code, ``await asyncio.to_thread(baton.send, ...)`` (the
current span goes along: ``to_thread`` copies the context).
"""

from __future__ import annotations

from typing import Any, Optional

from ._http import request_json
from ._tracing import TRACEPARENT, traced_post
from ._wire import LIMITS
from ._routes import route_path

__all__ = ["send"]


def send(agent: str, text: str, *, url: str, token: str, group: Optional[str] = None,
         run_timeout_seconds: Optional[int] = None, idempotency_key: Optional[str] = None,
         traceparent: Optional[str] = None, timeout: float = 30.0) -> dict[str, Any]:
    """Posts ``text`` to ``agent`` and returns the message's view (``id``, ``status``, ...).

    ``group``: messages of one group (a conversation) run one at a time, in order.
    ``run_timeout_seconds`` overrides the agent's run timeout for this message.
    ``idempotency_key``: a retry with the same key within its retention returns the first post's message.
    ``traceparent``: a W3C trace context to continue instead of the current span (e.g.
    ``os.environ.get("TRACEPARENT")`` in a command that ``baton serve`` runs).
    Raises ValueError for empty text, a malformed traceparent or a run timeout out of range before
    anything is sent; CoordinatorError when the coordinator refuses.
    """
    if not isinstance(text, str) or text == "":
        raise ValueError("a message's text is a non-empty string")
    if traceparent is not None and (not isinstance(traceparent, str) or TRACEPARENT.match(traceparent) is None):
        raise ValueError(f"traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), not {traceparent!r}")
    bounds = LIMITS["runTimeoutSeconds"]
    if run_timeout_seconds is not None and (isinstance(run_timeout_seconds, bool) or not isinstance(run_timeout_seconds, (int, float))
                                            or not bounds["min"] <= run_timeout_seconds <= bounds["max"]):
        raise ValueError(f"run_timeout_seconds must be from {bounds['min']} to {bounds['max']}, not {run_timeout_seconds!r}")
    path = route_path("/agents/{agent}/messages", agent=agent)
    headers = {} if idempotency_key is None else {"idempotency-key": idempotency_key}

    def post(carried: Optional[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"text": text}
        if group is not None:
            body["group"] = group
        if run_timeout_seconds is not None:
            body["run_timeout_seconds"] = run_timeout_seconds
        if carried is not None:
            body["traceparent"] = carried
        return request_json(url, token, "POST", path, body, timeout, headers=headers)[1]

    return traced_post(agent, traceparent, post)
