"""A person's side of a parked message, for scripts (as client/answers.ts): answer its question
(approve, reject, or one of its choices), or retry a failed message. The coordinator keeps each
answer with the account, the token's name and ``via`` (where it came from: ``cli``, ``page`` or
``http``), and each call returns the message's view after it (the dict GET
/agents/{agent}/messages/{id} answers with).

These calls block (urllib); from async code, ``await asyncio.to_thread(baton.approve, ...)``.
A refusal raises CoordinatorError with the coordinator's code: ``not_parked`` (409) when the
message is not waiting (answered already, never asked, or its deadline decided), ``bad_request``
(400) for a choice its question does not offer, ``outcome_unknown`` (409) when it waits on an
effect's outcome (answer that with ``baton resume AGENT ID --done`` or ``--redo``).
"""

from __future__ import annotations

from typing import Any, Optional

from ._http import request_json
from ._routes import route_path

__all__ = ["answer", "approve", "reject", "retry"]

#: Where an answer may say it came from (the coordinator records anything else as http).
VIA = ("cli", "page", "http")


def _decide(agent: str, id: int, route: str, body: dict[str, Any], url: str, token: str, via: str,
            timeout: float) -> dict[str, Any]:
    if isinstance(id, bool) or not isinstance(id, int) or id < 1:
        raise ValueError(f"a message id is a positive integer, not {id!r}")
    if via not in VIA:
        raise ValueError(f"via is one of {', '.join(VIA)}, not {via!r}")
    path = route_path(f"/agents/{{agent}}/messages/{{id}}/{route}", agent=agent, id=id)
    _status, view = request_json(url, token, "POST", path, body, timeout, headers={"x-baton-via": via})
    return view


def _text(text: Optional[str]) -> dict[str, Any]:
    return {} if text is None else {"text": text}


def answer(agent: str, id: int, choice: str, *, url: str, token: str, text: Optional[str] = None, via: str = "http",
           timeout: float = 30.0) -> dict[str, Any]:
    """Answers parked message ``id`` with one of its question's choices (``approve`` when it
    offered none; ``reject`` ends it). ``text`` reaches the next attempt as its resume input and
    the answer's text. Returns the message's view; raises CoordinatorError (``not_parked``, 409)
    when it is not waiting and (``bad_request``, 400) for a choice it does not take."""
    return _decide(agent, id, "answer", {"choice": choice, **_text(text)}, url, token, via, timeout)


def approve(agent: str, id: int, *, url: str, token: str, text: Optional[str] = None, via: str = "http",
            timeout: float = 30.0) -> dict[str, Any]:
    """Answers parked message ``id`` with ``approve``: it is queued to run again, and its ``ask`` returns the answer."""
    return _decide(agent, id, "approve", _text(text), url, token, via, timeout)


def reject(agent: str, id: int, *, url: str, token: str, text: Optional[str] = None, via: str = "http",
           timeout: float = 30.0) -> dict[str, Any]:
    """Ends parked message ``id`` as ``rejected`` (``text``: why): it never runs again."""
    return _decide(agent, id, "reject", _text(text), url, token, via, timeout)


def retry(agent: str, id: int, *, url: str, token: str, via: str = "http", timeout: float = 30.0) -> dict[str, Any]:
    """Queues failed message ``id`` again with a fresh set of tries, its attempt numbers going on
    (CoordinatorError ``not_parked``, 409, when it has not failed)."""
    return _decide(agent, id, "retry", {}, url, token, via, timeout)
