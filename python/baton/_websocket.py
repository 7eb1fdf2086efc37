"""The WebSocket to the coordinator, over whichever ``websockets`` is installed (10.4 to 17.x).

websockets 13 added a new asyncio implementation and 14 made it the default: its ``connect`` takes
``additional_headers`` where the legacy one took ``extra_headers``, and its connection reports
``state`` where the legacy one had ``open``. This module is the one place that knows which one runs;
serve.py sees a :class:`Socket`, ``DIAL_ERRORS`` and ``SocketClosed``. Both implementations raise
``websockets.exceptions.ConnectionClosed`` from ``send`` and from iteration once the socket is gone.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from websockets.exceptions import ConnectionClosed, WebSocketException

try:  # websockets >= 13: the new asyncio implementation
    from websockets.asyncio.client import connect as _connect

    _HEADERS_ARG = "additional_headers"
    _LEGACY = False
except ImportError:  # websockets 10.4 to 12: only the legacy implementation exists
    from websockets.legacy.client import connect as _connect  # type: ignore[no-redef]

    _HEADERS_ARG = "extra_headers"
    _LEGACY = True

__all__ = ["DIAL_ERRORS", "Socket", "SocketClosed", "open_socket"]

#: What a failed dial raises: no TCP connection, no answer in time, or a refused or broken handshake.
DIAL_ERRORS: tuple[type[BaseException], ...] = (OSError, asyncio.TimeoutError, WebSocketException)
#: What ``send`` and iteration raise once the socket is closed.
SocketClosed = ConnectionClosed


class Socket:
    """An open WebSocket: send text, iterate what arrives, close politely or abort at once."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    @property
    def open(self) -> bool:
        if _LEGACY:
            return bool(self._conn.open)
        return self._conn.state.name == "OPEN"

    @property
    def close_code(self) -> int | None:
        return self._conn.close_code

    @property
    def close_reason(self) -> str | None:
        return self._conn.close_reason

    async def send(self, text: str) -> None:
        """Raises SocketClosed when the socket is gone."""
        await self._conn.send(text)

    def __aiter__(self) -> AsyncIterator[str | bytes]:
        """Every frame that arrives; ends when the socket closes cleanly, raises SocketClosed when it breaks."""
        return self._conn.__aiter__()

    async def close(self, timeout: float) -> None:
        """The close handshake, given up after ``timeout`` seconds; a socket that is already closing is no failure."""
        try:
            async with asyncio.timeout(timeout):
                await self._conn.close()
        except (TimeoutError, OSError, WebSocketException):
            pass

    def abort(self) -> None:
        """Drops the TCP connection without a close handshake (the peer may be gone)."""
        transport = getattr(self._conn, "transport", None)
        if transport is not None:
            transport.abort()


async def open_socket(url: str, token: str, *, open_timeout: float, max_size: int) -> Socket:
    """Dials ``url`` (ws:// or wss://) with the token as a bearer header and the ``baton`` subprotocol;
    no keepalive pings of the library's own (serve sends the protocol's). Raises one of DIAL_ERRORS."""
    options: dict[str, Any] = {"subprotocols": ["baton"], "open_timeout": open_timeout, "ping_interval": None,
                               "close_timeout": 1, "max_size": max_size, _HEADERS_ARG: {"Authorization": f"Bearer {token}"}}
    return Socket(await _connect(url, **options))
