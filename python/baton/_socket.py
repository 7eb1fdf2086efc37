"""One coordinator WebSocket that keeps itself alive (client/socket.ts): dials again with backoff,
saying why each attempt failed; pings on its own cadence (a third of the TTL) and reports when each
answered ping was sent (for the lease clock); drops a connection whose pings go unanswered for a
whole TTL even if no close ever arrives; matches answers to requests by ``req``, and paces
requests within the coordinator's frame rate. It is the serve core's :class:`~baton._link.Link`
and tells the core what happened (:class:`ConnectionListener`); like client/socket.ts it tracks the
fence its pings carry and whether the dropped connection held the lease (then it dials again within
4 s). A refusal that retrying cannot fix (a bad token, a bad name) ends ``run`` with CoordinatorError.
"""

from __future__ import annotations

import asyncio
import collections
import json
import random
import urllib.parse
from typing import Any, Optional, Protocol

from ._http import arequest_json
from ._link import FALLBACK_TTL, NotConnected
from ._system_clock import SYSTEM_CLOCK
from ._websocket import DIAL_ERRORS, Socket, SocketClosed, open_socket
from ._wire import LIMITS, valid_client_frame, valid_server_frame
from .errors import CoordinatorError, UnreachableError
from ._routes import route_path

__all__ = ["Connection", "ConnectionListener", "NotConnected", "backoff"]

PING_TEXT = '{"type":"ping"}'
PONG_TEXT = '{"type":"pong"}'
REQUEST_TIMEOUT = 10.0
FRAME_BYTES: int = LIMITS["frameBytes"]
#: The coordinator refuses a connection's frames past LIMITS.framesPerSecond in a second, with an
#: error that names no request (so the request would wait out its timeout): requests are paced
#: below it, leaving the rest of its budget to pings and acks.
RATE_WINDOW = 1.0
PACED_REQUESTS: int = LIMITS["framesPerSecond"] - 10
#: Output frames are paced within half the characters a connection may send in a second: the
#: coordinator's window counts arrivals, and frames sent evenly can land bunched.
PACED_CHARS: int = LIMITS["frameCharsPerSecond"] // 2


class ConnectionListener(Protocol):
    async def opened(self, dialed_at: float) -> None: ...

    def frame(self, frame: dict[str, Any]) -> None: ...

    def pong(self, sent_at: float) -> None: ...

    async def closed(self) -> None: ...

    def retrying(self, attempt: int, delay: float, reason: str) -> None: ...


def backoff(attempt: int, was_holder: bool) -> float:
    """Exponential with jitter (client/backoff.ts), capped at 4 s after losing a held lease."""
    cap = 4.0 if was_holder else 15.0
    return min((1 + random.random()) * 0.25 * (2 ** min(attempt, 16)), cap)


class Connection:
    def __init__(self, url: str, token: str, agent: str, machine: str) -> None:
        self.url = url
        self.token = token
        self.agent = agent
        self.machine = machine
        #: Who hears what happens (the serve core); set before ``run``.
        self.listener: Optional[ConnectionListener] = None
        self.ttl = FALLBACK_TTL
        self.ws: Optional[Socket] = None
        self.fence: Optional[int] = None  # pings carry it while this process holds the lease, per the last serve_lease frame
        #: The last connection dropped while it held the serve lease, and no serve_lease frame came since.
        self.lost_holding = False
        self.stopping = False
        self._pings: collections.deque[float] = collections.deque()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reqs = 0
        self._drop_reason: Optional[str] = None
        self._reconnect_now = False
        self._failures = 0
        self._ttl_changed = asyncio.Event()
        self._sent_at: collections.deque[tuple[float, int]] = collections.deque()  # when recent requests went out, and their characters
        self._sent_chars = 0
        self._pacing = asyncio.Lock()  # FIFO: paced requests leave in call order

    @property
    def open(self) -> bool:
        return self.ws is not None and self.ws.open and self._drop_reason is None

    def set_ttl(self, ttl: float) -> None:
        self.ttl = ttl
        self._ttl_changed.set()

    # -- the dial loop -------------------------------------------------------------------------

    async def run(self) -> None:
        """Connects, and again after every drop, until ``stopping``; raises for refusals retrying cannot fix."""
        listener = self.listener
        assert listener is not None, "a Connection runs with a listener"
        ws_url = self.url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        path = route_path("/agents/{agent}/serve", agent=self.agent) + f"?machine={urllib.parse.quote(self.machine, safe='')}"
        while not self.stopping:
            dialed_at = SYSTEM_CLOCK.now()
            try:
                ws = await open_socket(ws_url + path, self.token, open_timeout=10, max_size=1 << 22)
            except DIAL_ERRORS as err:
                reason = await self._probe(err)
            else:
                try:
                    reason = await self._serve_socket(ws, dialed_at)
                finally:
                    await self._detach(ws)
            if self.stopping:
                return
            if self._reconnect_now:
                self._reconnect_now, self._failures, delay = False, 0, 0.0
            else:
                delay = backoff(self._failures, self.lost_holding)
                self._failures += 1
            listener.retrying(self._failures, delay, reason)
            await asyncio.sleep(delay)

    async def _probe(self, err: BaseException) -> str:
        """Asks over plain HTTP why the WebSocket failed; raises for refusals retrying cannot fix."""
        try:
            # The serve path itself: 426 when only the upgrade went missing, 403 for a token without the serve scope.
            await arequest_json(self.url, self.token, "GET", route_path("/agents/{agent}/serve", agent=self.agent), timeout=10)
            return f"the WebSocket upgrade failed although plain HTTP works ({err})"
        except CoordinatorError as refusal:
            if refusal.code == "upgrade_required":
                return f"the WebSocket upgrade failed although plain HTTP works ({err})"
            if 400 <= refusal.status < 500 and refusal.status not in (408, 429):
                raise
            return str(refusal)
        except UnreachableError as unreachable:
            return unreachable.reason

    async def _serve_socket(self, ws: Socket, dialed_at: float) -> str:
        self.ws = ws
        self._drop_reason = None
        self._pings.clear()
        self.fence = None
        assert self.listener is not None
        await self.listener.opened(dialed_at)
        try:
            async with asyncio.TaskGroup() as tasks:
                pinger = tasks.create_task(self._ping(ws))
                try:
                    await self._read(ws)
                finally:
                    pinger.cancel()
        except* SocketClosed:
            pass
        reason = "the connection closed"
        if ws.close_code is not None and ws.close_code != 1000:
            reason += f" (code {ws.close_code}{': ' + ws.close_reason if ws.close_reason else ''})"
        return self._drop_reason or reason

    async def _read(self, ws: Socket) -> None:
        async for raw in ws:
            if self._drop_reason is not None:
                return
            if isinstance(raw, str):
                self._failures = 0
                self._on_text(raw)

    async def _ping(self, ws: Socket) -> None:
        next_at = SYSTEM_CLOCK.now() + self.ttl / 3
        while True:
            self._ttl_changed.clear()
            try:
                async with asyncio.timeout(max(0.0, next_at - SYSTEM_CLOCK.now())):
                    await self._ttl_changed.wait()
                next_at = SYSTEM_CLOCK.now() + self.ttl / 3  # a new TTL (the welcome): its cadence from now
                continue
            except TimeoutError:
                next_at += max(0.001, self.ttl / 3)
            t = SYSTEM_CLOCK.now()
            if self._pings and t - self._pings[0] > self.ttl:
                return self.drop("heartbeats went unanswered")
            self._pings.append(t)
            await ws.send(PING_TEXT if self.fence is None else json.dumps({"type": "ping", "fence": self.fence}))

    async def _detach(self, ws: Socket) -> None:
        self.ws = None
        if self.fence is not None:
            self.lost_holding = True
        self.fence = None
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(NotConnected("connection closed"))
        self._pending.clear()
        assert self.listener is not None
        await self.listener.closed()
        await ws.close(1.5)

    async def close(self) -> None:
        """The close handshake of the current connection (given up after 1.5 s)."""
        if self.ws is not None:
            await self.ws.close(1.5)

    def drop(self, reason: str, reconnect_now: bool = False) -> None:
        """Ends the current connection now (no close handshake: it may be a dead one); ``run`` dials again."""
        self._drop_reason = reason
        self._reconnect_now = self._reconnect_now or reconnect_now
        if self.ws is not None:
            self.ws.abort()

    def reconnect_now(self, reason: str) -> None:
        """The core's lease or connection lapsed by its clock: drop this connection and dial again at once."""
        self.drop(reason, reconnect_now=True)

    # -- frames --------------------------------------------------------------------------------

    def _on_text(self, text: str) -> None:
        if text == PONG_TEXT:
            return self._on_pong()
        try:
            frame = json.loads(text)
        except ValueError:
            return
        # As the TypeScript client: a frame that does not match the shared schema is dropped, never half-trusted.
        if not isinstance(frame, dict) or not valid_server_frame(frame):
            return
        kind = frame["type"]
        if kind == "pong":
            return self._on_pong()
        if kind == "welcome" and frame["heartbeat_ttl_ms"] > 0:
            self.set_ttl(frame["heartbeat_ttl_ms"] / 1000)
        elif kind == "serve_lease":
            self.fence = frame["fence"] if frame["held"] else None
            self.lost_holding = False
        elif kind in ("result", "error") and isinstance(frame.get("req"), str):
            fut = self._pending.pop(frame["req"], None)
            if fut is not None and not fut.done():
                return fut.set_result(frame)
        assert self.listener is not None
        self.listener.frame(frame)

    def _on_pong(self) -> None:
        if self._pings and self.listener is not None:
            self.listener.pong(self._pings.popleft())

    async def send(self, frame: dict[str, Any]) -> bool:
        """Sends one frame; False when there is no open connection. ValueError for a frame the wire refuses."""
        ws = self.ws
        if ws is None or not ws.open:
            return False
        if not valid_client_frame(frame):
            raise ValueError(f"{frame.get('type')} frame does not match the wire schema; not sent: {frame!r}")
        text = json.dumps(frame, ensure_ascii=False)  # the coordinator counts UTF-8 bytes; \u escapes would triple them
        if len(text.encode()) > FRAME_BYTES:
            raise ValueError(f"{frame['type']} frame exceeds {FRAME_BYTES} bytes; not sent")
        try:
            await ws.send(text)
        except SocketClosed:
            return False
        return True

    async def _paced(self, chars: int = 0) -> None:
        """Returns once one more request (of ``chars`` characters, counted for output frames) fits the
        frame rate (at most PACED_REQUESTS and PACED_CHARS in any RATE_WINDOW), in call order: a
        burst of quick steps, or a chatty run's output, is paced instead of refused."""
        chars = min(chars, PACED_CHARS)
        async with self._pacing:
            while True:
                t = SYSTEM_CLOCK.now()
                while self._sent_at and self._sent_at[0][0] <= t - RATE_WINDOW:
                    self._sent_chars -= self._sent_at.popleft()[1]
                if len(self._sent_at) < PACED_REQUESTS and self._sent_chars + chars <= PACED_CHARS:
                    self._sent_at.append((t, chars))
                    self._sent_chars += chars
                    return
                await asyncio.sleep(self._sent_at[0][0] + RATE_WINDOW - t)

    async def request(self, frame: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
        """Sends ``frame`` with a new ``req`` and returns its result or error frame; NotConnected when none came."""
        self._reqs += 1
        req = f"r{self._reqs}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[req] = fut
        try:
            await self._paced(len(json.dumps(frame)) if frame.get("type") == "output" else 0)
            if not await self.send({**frame, "req": req}):
                raise NotConnected("not connected")
            async with asyncio.timeout(timeout):
                return await fut
        except TimeoutError:
            raise NotConnected(f"no answer to {frame['type']} within {timeout:.0f} s") from None
        finally:
            self._pending.pop(req, None)
