"""Session leases: one execution at a time per (account, session), over HTTP.

``async with session_lease(...)`` acquires (or waits), renews from its own task every TTL/3,
cancels the body the moment a renewal is refused or the lease can no longer be proven by this
process's monotonic clock (the body sees ``LeaseLostError`` raised where it was awaiting), and
releases on exit.

What is promised: while the body runs uncancelled, this process's clock has not yet passed the
moment the coordinator could have expired the lease (TTL counted from the *send* time of the last
answered acquire or renewal), assuming both clocks run at the same rate. Once lost, the lease is
never revived: a late renewal answer is ignored.

What is not promised: cancellation reaches the body only at its next ``await``; a body that
blocks the event loop (CPU work, blocking I/O) is cancelled late, and nothing it did meanwhile is
undone. Writes to your own systems must carry ``lease.fence_token`` so a resource can refuse a
stale holder; that, not the cancellation, is what makes them safe.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import random
import threading
import uuid
from typing import Any, Callable, TypeVar

from ._clock import LeaseClock
from ._http import arequest_json, checked_url
from ._wire import LIMITS
from .errors import BatonError, CoordinatorError, LeaseHeldError, LeaseLostError, UnreachableError
from ._routes import route_path
from ._system_clock import SYSTEM_CLOCK

__all__ = ["SessionLease", "session_lease", "run_with_session_lease"]

log = logging.getLogger("baton")
T = TypeVar("T")

_WAIT_MIN, _WAIT_MAX = 0.1, 2.0
#: While a wait meets an unreachable coordinator, it says so on its first try and every this many (about a minute apart).
_SAY_UNREACHABLE_EVERY = 30


class SessionLease:
    """An async context manager holding one session lease; see the module docstring."""

    def __init__(self, session: str, *, url: str, token: str, ttl: int = LIMITS["leaseTtlSeconds"]["default"], wait: bool = False,
                 wait_timeout: float | None = None) -> None:
        ttl_range = LIMITS["leaseTtlSeconds"]
        if not ttl_range["min"] <= int(ttl) <= ttl_range["max"]:
            raise ValueError(f"ttl must be {ttl_range['min']} to {ttl_range['max']} whole seconds")
        self.session = session
        self.url = checked_url(url)
        self._token = token
        self.ttl = int(ttl)
        self.wait = wait
        self.wait_timeout = wait_timeout
        #: This holder's id: the capability that renews and releases. Keep it private.
        self.run_id = str(uuid.uuid4())
        #: Grows with every new grant of this session: attach it to your writes.
        self.fence: int = -1
        #: The fence as a 16-digit string that sorts like the number.
        self.fence_token: str = ""
        #: When the coordinator expires the lease unless renewed (epoch ms, its clock).
        self.expires_at: float = 0.0
        #: Set (with ``lost``) the moment the lease is lost; for code that polls instead of awaiting.
        self.lost_event = threading.Event()
        self.lost: LeaseLostError | None = None
        self._clock = LeaseClock(float(self.ttl))
        self._task: asyncio.Task[Any] | None = None
        self._renewer: asyncio.Task[None] | None = None
        self._deadline: Callable[[], None] | None = None  # what cancels the deadline timer
        self._finished = False
        self._cancelled_body = False
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- acquisition -------------------------------------------------------------------------

    async def _acquire(self) -> float:
        started = SYSTEM_CLOCK.now()
        attempt = 0
        while True:
            sent = SYSTEM_CLOCK.now()
            try:
                _, grant = await arequest_json(self.url, self._token, "POST", route_path("/leases/{session}/acquire", session=self.session),
                                               {"run_id": self.run_id, "ttl_seconds": self.ttl})
                self._apply(grant)
                return sent
            except CoordinatorError as err:
                if err.code != "lease_held":
                    raise
                exp = err.details.get("expires_at")
                blocker: Exception = LeaseHeldError(self.session, exp if isinstance(exp, (int, float)) else None)
            except UnreachableError as err:
                blocker = err
            waited = SYSTEM_CLOCK.now() - started
            if not self.wait or (self.wait_timeout is not None and waited >= self.wait_timeout):
                raise blocker
            if isinstance(blocker, UnreachableError) and attempt % _SAY_UNREACHABLE_EVERY == 0:
                # Waiting means waiting (wait_timeout bounds it), but never silently for a coordinator that does not answer.
                log.warning("session lease %s: waiting; the coordinator is unreachable (%s)", self.session, blocker)
            delay = min(_WAIT_MAX, _WAIT_MIN * (2 ** attempt) * (1 + random.random()))
            if self.wait_timeout is not None:
                delay = min(delay, max(0.0, self.wait_timeout - waited))
            attempt += 1
            await asyncio.sleep(delay)

    def _apply(self, grant: Any) -> None:
        self.fence = int(grant["fence"])
        self.fence_token = str(grant["fence_token"])
        self.expires_at = float(grant["expires_at"])
        self._clock.set_ttl(float(grant.get("ttl_seconds", self.ttl)))

    # -- keeping it ---------------------------------------------------------------------------

    def refused(self, error: LeaseLostError) -> None:
        """Reports that the coordinator refused a write under this fence (``baton.langgraph`` calls it,
        from any thread): the lease counts as lost, the body is cancelled, and the block raises ``error``."""
        if self._loop is not None and self._loop.is_running() and not self._in_loop():
            self._loop.call_soon_threadsafe(self.refused, error)
            return
        if self._finished:
            return
        if self.lost is not None:
            self.lost = error  # a refusal says more than a lapse seen first on the local clock
            return
        self._lose("refused", error)

    def _in_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _lose(self, reason: str, error: LeaseLostError | None = None) -> None:
        if self.lost is not None or self._finished:
            return
        if error is not None:
            self.lost = error
        elif reason == "refused":
            self.lost = LeaseLostError(f"the coordinator refused to renew the lease on {self.session}", "lease_lost")
        else:
            self.lost = LeaseLostError(f"the lease on {self.session} could not be renewed before it expired", "lapsed")
        self.lost_event.set()
        if self._deadline is not None:
            self._deadline()
        if self._renewer is not None and self._renewer is not asyncio.current_task():
            self._renewer.cancel()
        if self._task is not None and not self._task.done():
            self._cancelled_body = True
            self._task.cancel()

    def _arm_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline()
        deadline = self._clock.deadline
        if deadline is None:
            self._lose("lapsed")
            return

        def fire() -> None:
            if not self._clock.valid(SYSTEM_CLOCK.now()):
                self._lose("lapsed")
            else:
                self._arm_deadline()

        self._deadline = SYSTEM_CLOCK.after(deadline - SYSTEM_CLOCK.now(), fire)

    async def _renew_loop(self) -> None:
        every = self.ttl / 3
        next_at = SYSTEM_CLOCK.now() + every
        while self.lost is None and not self._finished:
            await asyncio.sleep(max(0.0, next_at - SYSTEM_CLOCK.now()))
            sent = SYSTEM_CLOCK.now()
            next_at = sent + every
            deadline = self._clock.deadline
            if deadline is None or not self._clock.valid(sent):
                self._lose("lapsed")
                return
            try:
                _, grant = await arequest_json(self.url, self._token, "POST", route_path("/leases/{session}/renew", session=self.session),
                                               {"run_id": self.run_id, "ttl_seconds": self.ttl},
                                               timeout=max(0.05, deadline - sent))
            except CoordinatorError as err:
                if err.code == "lease_lost":
                    self._lose("refused")
                    return
                continue  # a transient refusal: keep trying until the deadline decides
            except UnreachableError:
                continue
            if self.lost is not None or self._finished:
                return
            self._apply(grant)
            self._clock.confirmed(sent, SYSTEM_CLOCK.now())
            self._arm_deadline()

    async def check(self) -> bool:
        """Asks the coordinator whether this lease's fence is still the current holder's."""
        _, body = await arequest_json(self.url, self._token, "POST", route_path("/leases/{session}/check", session=self.session),
                                      {"run_id": self.run_id, "fence": self.fence})
        return bool(body.get("current"))

    @property
    def valid(self) -> bool:
        """True while the lease is held and still provable by the local clock."""
        return self.lost is None and not self._finished and self._clock.may_act(SYSTEM_CLOCK.now())

    # -- the context manager -------------------------------------------------------------------

    async def __aenter__(self) -> "SessionLease":
        self._task = asyncio.current_task()
        self._loop = asyncio.get_running_loop()
        sent = await self._acquire()
        self._clock.confirmed(sent, SYSTEM_CLOCK.now())
        self._clock.hold(SYSTEM_CLOCK.now())
        self._arm_deadline()
        self._renewer = asyncio.create_task(self._renew_loop())
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        self._finished = True
        if self._deadline is not None:
            self._deadline()
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.wait([self._renewer])
            if not self._renewer.cancelled() and self._renewer.exception() is not None:
                log.error("session lease %s: the renewer failed", self.session, exc_info=self._renewer.exception())
        if self.lost is not None:
            if self._cancelled_body and self._task is not None:
                self._task.uncancel()
            raise self.lost from (exc if exc_type is not asyncio.CancelledError else None)
        try:
            await arequest_json(self.url, self._token, "POST", route_path("/leases/{session}/release", session=self.session), {"run_id": self.run_id}, timeout=5)
        except (BatonError, OSError, http.client.HTTPException) as err:
            # It expires by itself at its TTL; the block's own outcome stands.
            log.warning("session lease %s: release failed (%s); it expires by itself", self.session, err)
        return False


def session_lease(session: str, *, url: str, token: str, ttl: int = 30, wait: bool = False,
                  wait_timeout: float | None = None) -> SessionLease:
    """Holds the session lease for the duration of an ``async with`` block.

    Raises (on entry) LeaseHeldError when another run holds it and ``wait`` is false (or
    ``wait_timeout`` seconds passed), CoordinatorError / UnreachableError when no grant could be
    had. Raises (on exit) LeaseLostError when the lease ended before the block did, even if the
    block swallowed the cancellation: work done after that point is not fenced.
    """
    return SessionLease(session, url=url, token=token, ttl=ttl, wait=wait, wait_timeout=wait_timeout)


def run_with_session_lease(session: str, fn: Callable[[SessionLease], T], *, url: str, token: str, ttl: int = 30,
                           wait: bool = False, wait_timeout: float | None = None) -> T:
    """For plain (non-async) scripts: runs ``fn(lease)`` while holding the session lease.

    ``fn`` runs in a worker thread while this thread renews. Python cannot stop a thread, so ``fn``
    is NOT interrupted when the lease is lost: it should check ``lease.lost_event`` (or
    ``lease.valid``) between steps and carry ``lease.fence_token`` on its writes. When the lease
    was lost before ``fn`` returned, its result is discarded and LeaseLostError is raised.
    """

    async def main() -> T:
        async with session_lease(session, url=url, token=token, ttl=ttl, wait=wait, wait_timeout=wait_timeout) as lease:
            worker = asyncio.get_running_loop().create_task(asyncio.to_thread(fn, lease))
            try:
                return await asyncio.shield(worker)
            except asyncio.CancelledError:
                if lease.lost is None:
                    raise
                # the lease is gone; fn keeps running in its thread until it returns: wait for it
                # so nothing outlives this call, then report the loss
                await asyncio.wait([worker])
                if not worker.cancelled() and worker.exception() is not None:
                    log.warning("session lease %s: fn raised after the lease was lost", session, exc_info=worker.exception())
                raise

    return asyncio.run(main())
