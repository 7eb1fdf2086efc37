"""Stopping a message from anywhere, for scripts (as client/cancel.ts): a queued or parked message
ends ``cancelled`` at once and never runs; a running one's runner is told to stop (its handler's
task is cancelled, ``ctx.lost`` is a :class:`MessageCancelledError`) and nothing that run writes
afterwards is kept. The coordinator keeps who cancelled (the token's name), from where and why.

The call blocks (urllib); from async code, ``await asyncio.to_thread(baton.cancel, ...)``.
Cancelling again returns the first cancel, unchanged. A message that already ended (acknowledged,
failed, rejected) raises CoordinatorError ``message_finished`` (409); a token without the
``answer`` scope raises ``forbidden`` (403).
"""

from __future__ import annotations

from typing import Any, Optional

from ._http import request_json
from ._routes import route_path

__all__ = ["cancel"]


def cancel(agent: str, id: int, *, url: str, token: str, reason: Optional[str] = None, via: str = "http",
           timeout: float = 30.0) -> dict[str, Any]:
    """Cancels message ``id`` of ``agent`` (``reason``: why, at most 1000 characters) and returns
    its view after it (``status`` ``cancelled``, ``cancelled``: who, when, why, and the effects left
    with an unknown outcome)."""
    if isinstance(id, bool) or not isinstance(id, int) or id < 1:
        raise ValueError(f"a message id is a positive integer, not {id!r}")
    if via not in ("cli", "page", "http"):
        raise ValueError(f"via is one of cli, page, http, not {via!r}")
    path = route_path("/agents/{agent}/messages/{id}/cancel", agent=agent, id=id)
    body = {} if reason is None else {"reason": reason}
    _status, view = request_json(url, token, "POST", path, body, timeout, headers={"x-baton-via": via})
    return view
