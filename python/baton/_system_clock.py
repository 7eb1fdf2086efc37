"""The one time source of the Python client (client/core/clock.ts ``systemClock``): the process's
monotonic clock and the running loop's timers. Shells and adapters read it (serve, the socket,
session leases); the core is handed it as a :class:`~baton._clock.Clock` and never reads time itself.
"""

from __future__ import annotations

import asyncio
import time
from typing import Callable

from ._clock import Clock

__all__ = ["SYSTEM_CLOCK"]


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    def after(self, delay: float, fn: Callable[[], None]) -> Callable[[], None]:
        return asyncio.get_running_loop().call_later(max(0.0, delay), fn).cancel


SYSTEM_CLOCK: Clock = SystemClock()
