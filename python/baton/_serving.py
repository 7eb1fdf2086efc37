"""What ``serve()`` returns: awaited, a running :class:`ServeHandle`; as ``async with``, a handle
that stops (releasing the lease) when the block ends, as ``session_lease`` holds its lease for one.

When serving ends for good while the block runs (the coordinator refused the token or the agent's
name), the block is cancelled at its next ``await`` and the refusal is raised from the
``async with`` as it would be from ``await handle.done``.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import TYPE_CHECKING, Any, Callable, Generator, Optional

if TYPE_CHECKING:
    from .serve import ServeHandle

__all__ = ["Serving"]


class Serving:
    """``handle = await baton.serve(...)`` or ``async with baton.serve(...) as handle:``."""

    def __init__(self, start: Callable[[], "ServeHandle"]) -> None:
        self._start = start
        self._handle: Optional[ServeHandle] = None
        self._body: Optional[asyncio.Task[Any]] = None
        self._cancelled_body = False

    def __del__(self) -> None:
        if self._handle is None:  # as a coroutine that was never awaited warns
            warnings.warn("baton.serve(...) was neither awaited nor used with async with: nothing was served",
                          RuntimeWarning, stacklevel=2)

    def _started(self) -> "ServeHandle":
        if self._handle is None:  # awaiting twice must not serve twice
            self._handle = self._start()
        return self._handle

    async def _run(self) -> "ServeHandle":
        return self._started()

    def __await__(self) -> Generator[Any, None, "ServeHandle"]:
        return self._run().__await__()

    async def __aenter__(self) -> "ServeHandle":
        handle = self._started()
        self._body = asyncio.current_task()
        handle.done.add_done_callback(self._ended)
        return handle

    def _ended(self, done: "asyncio.Future[None]") -> None:
        if done.cancelled() or done.exception() is None or self._body is None or self._body.done():
            return
        self._cancelled_body = True
        self._body.cancel()

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        handle = self._started()
        handle.done.remove_done_callback(self._ended)
        await handle.stop()
        refusal = None if handle.done.cancelled() else handle.done.exception()
        if self._cancelled_body and self._body is not None:
            self._body.uncancel()
            if refusal is not None:
                raise refusal from None
        return False
