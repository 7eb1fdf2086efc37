"""Reading a message's live output (client/output.ts): :func:`read_output` follows it from a cursor
over HTTP, resuming after a dropped connection with the seq of the last event it yielded, so
nothing is lost and nothing repeats."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from ._http import arequest_json
from ._routes import route_path
from .errors import UnreachableError

__all__ = ["read_output"]


async def read_output(url: str, token: str, agent: str, message_id: int, from_seq: int = 0, follow: bool = True,
                      retry_delay: float = 0.5) -> AsyncIterator[dict[str, Any]]:
    """The events of a message's output after seq ``from_seq``, in order (worker/wire/output.ts:
    ``chunk``, ``attempt``, ``attempt_end``, ``dropped``, then ``end`` once the message is final).
    Following, it long-polls GET …/output?format=json&wait=25 and, after a dropped connection or an
    unreachable coordinator, asks again from the seq of the last event it yielded (after
    ``retry_delay`` seconds, doubling up to 10 s): nothing is lost, nothing repeats. Without
    ``follow`` it yields what is stored now (and ``end`` if the message is final). A refusal (bad
    token, no such message) raises CoordinatorError."""
    path = route_path("/agents/{agent}/messages/{id}/output", agent=agent, id=message_id)
    cursor = from_seq
    delay = retry_delay
    while True:
        wait = "&wait=25" if follow else ""
        try:
            _, page = await arequest_json(url, token, "GET", f"{path}?format=json&from={cursor}{wait}", timeout=40.0)
        except UnreachableError:
            if not follow:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10.0)
            continue
        delay = retry_delay
        for event in page.get("events", []):
            if isinstance(event.get("seq"), int):
                cursor = event["seq"]
            yield event
        cursor = max(cursor, int(page.get("cursor", cursor)))
        if page.get("more"):
            continue
        if page.get("final"):
            yield {"type": "end", "status": page.get("status")}
            return
        if not follow:
            return
