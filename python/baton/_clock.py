"""Time as the core sees it (client/core/clock.ts) and the client-side lease clock (the same rules
as client/lease-clock.ts). Pure: the time comes from the shell as a :class:`Clock`
(``_system_clock.SYSTEM_CLOCK`` in serve, a clock that moves only when told in tests).

The coordinator expires a lease by its own clock; a client must never act later than that. So
validity is counted from when the last *confirmed* request was SENT: the coordinator saw it no
earlier, hence cannot expire the lease before ``sent_at + ttl`` (clock rates being equal). Once
lapsed, a lease stays lapsed: a late answer never revives it. Times are monotonic seconds.
"""

from __future__ import annotations

import asyncio
import math
from typing import Callable, Protocol


class Clock(Protocol):
    """Time for the core, as an adapter: monotonic seconds, and timers."""

    def now(self) -> float: ...

    def after(self, delay: float, fn: Callable[[], None]) -> Callable[[], None]:
        """Calls ``fn`` once ``delay`` seconds from now; returns what cancels it."""
        ...


async def sleep(clock: Clock, delay: float) -> None:
    """Returns after ``delay`` seconds on ``clock`` (client/core/clock.ts ``sleep``)."""
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    cancel = clock.after(delay, wake)
    try:
        await woken
    finally:
        cancel()


class LeaseClock:
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._last_confirmed_send = -math.inf
        self._valid_until = -math.inf
        self._holding = False
        self._lapsed = False

    def reset(self, ttl: float | None = None) -> None:
        """Forgets everything (a new connection or acquisition): nothing held, nothing lapsed."""
        if ttl is not None:
            self.ttl = ttl
        self._last_confirmed_send = -math.inf
        self._valid_until = -math.inf
        self._holding = False
        self._lapsed = False

    def set_ttl(self, ttl: float) -> None:
        if ttl > 0:
            self.ttl = ttl

    def confirmed(self, sent_at: float, at: float) -> None:
        """A request sent at ``sent_at`` reached the coordinator (answered at ``at``)."""
        if not self.valid(at):
            return
        self._last_confirmed_send = max(self._last_confirmed_send, sent_at)
        if self._holding:
            self._valid_until = self._last_confirmed_send + self.ttl

    def hold(self, at: float) -> None:
        """The coordinator says we hold it: valid for one TTL from the last confirmed send."""
        if self._lapsed:
            return
        self._holding = True
        self._valid_until = self._last_confirmed_send + self.ttl
        self.valid(at)

    def drop(self) -> None:
        self._holding = False
        self._valid_until = -math.inf

    def valid(self, at: float) -> bool:
        """False once lapsed; marks the lease lapsed the first time ``at`` reaches the deadline."""
        if self._lapsed:
            return False
        if not self._holding:
            return True
        if at < self._valid_until:
            return True
        self._holding = False
        self._lapsed = True
        return False

    def may_act(self, at: float) -> bool:
        return self.valid(at) and self._holding

    @property
    def lapsed(self) -> bool:
        return self._lapsed

    @property
    def held(self) -> bool:
        return self._holding

    @property
    def deadline(self) -> float | None:
        return self._valid_until if self._holding else None
