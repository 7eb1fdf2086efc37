"""How the serve core reaches the coordinator (client/core/writes.ts ``CoreLink``): the socket
(``_socket.Connection``) in ``serve``, a scripted fake in the transcripts and unit tests. The core
sends frames and requests through it and asks it to dial again; everything else about the
connection (dialling, pings, the fence pings carry, backoff) is the adapter's.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["FALLBACK_TTL", "Link", "NotConnected"]

#: The heartbeat TTL until the coordinator's welcome says otherwise (seconds).
FALLBACK_TTL = 60.0


class NotConnected(ConnectionError):
    """A request that got no answer: not sent (no connection), the connection closed, or no answer in time."""


class Link(Protocol):
    #: The heartbeat TTL the coordinator announced (seconds).
    ttl: float

    @property
    def open(self) -> bool: ...

    async def send(self, frame: dict[str, Any]) -> bool:
        """A frame that expects no answer (the claim); False when there is no open connection."""
        ...

    async def request(self, frame: dict[str, Any], timeout: float = ...) -> dict[str, Any]:
        """Sends ``frame`` with a new ``req``; returns the result or error frame answering it, or
        raises NotConnected when none can come."""
        ...

    def reconnect_now(self, reason: str) -> None:
        """Drops the connection (no close handshake: it may be a dead one) and dials again at once."""
        ...
