"""The messages this runner was handed (client/work-loop.ts's queue): one task per message, up to
``concurrency`` at once, in order; a frame for a (message, token) already in flight waits for that
run to finish, so one token never runs twice at once. Revokes and cancels reach the run they name.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any, Optional, Protocol

from ._clock import Clock
from ._run_context import Handler, MessageContext
from ._run import Run, RunPort
from ._wire_types import MessageServerFrame
from .errors import LeaseLostError, MessageCancelledError

__all__ = ["WorkLoop"]

RunKey = tuple[int, Optional[int]]
log = logging.getLogger("baton")


class Host(RunPort, Protocol):
    """What the work loop asks of the serve it belongs to."""

    def may_run(self) -> bool: ...

    def run_fence(self) -> int: ...

    checkpoint: Any


class WorkLoop:
    def __init__(self, handler: Handler, concurrency: int, host: Host, clock: Clock) -> None:
        self.handler = handler
        self.clock = clock
        self.concurrency = concurrency
        self.host = host
        self.queue: collections.deque[MessageServerFrame] = collections.deque()
        #: Runs whose handler has not returned yet, by (message id, token).
        self.running: dict[RunKey, Run] = {}
        #: Every message task (its handler, then its reply or fail) -> (message id, token): one per slot.
        self.tasks: dict[asyncio.Task[Any], RunKey] = {}
        self.replied: set[RunKey] = set()
        #: Tasks created for a slot whose handler has not begun yet: a stop takes their messages back.
        self._not_begun: dict[RunKey, MessageServerFrame] = {}
        self.stopping = False
        self._group: Optional[asyncio.TaskGroup] = None

    def attach(self, group: asyncio.TaskGroup) -> None:
        """The task group message tasks run in (the serve's, while it serves)."""
        self._group = group

    def enqueue(self, frame: MessageServerFrame) -> None:
        key = (frame["id"], frame.get("token"))
        if any((m["id"], m.get("token")) == key for m in self.queue) or key in self.running:
            return
        self.queue.append(frame)
        self._pump()

    def _pump(self) -> None:
        # A slot stays taken until its message's reply (or fail) is answered: with one slot,
        # messages run strictly one after the other, in order.
        while not self.stopping and self._group is not None and len(self.tasks) < self.concurrency:
            busy = set(self.tasks.values())
            frame = next((m for m in self.queue if (m["id"], m.get("token")) not in busy), None)
            if frame is None:
                return
            self.queue.remove(frame)
            key = (frame["id"], frame.get("token"))
            self._not_begun[key] = frame
            task = self._group.create_task(self._handle(frame))
            self.tasks[task] = key
            task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self.tasks.pop(task, None)
        self._pump()

    def _drop_queued(self, mid: Any, token: Any) -> Optional[Run]:
        self.queue = collections.deque(m for m in self.queue if not (m["id"] == mid and m.get("token") == token))
        return self.running.get((mid, token)) if isinstance(mid, int) else None

    def revoke(self, mid: Any, token: Any, reason: str) -> None:
        run = self._drop_queued(mid, token)
        if run is not None:
            self.host.event(type="revoked", id=mid, token=token, reason=reason)
            run.abort(LeaseLostError(f"the coordinator took message {mid} back ({reason})", "revoked"))

    def cancel(self, mid: Any, token: Any, by: str, reason: Any) -> None:
        """A person cancelled the message: its handler's task is cancelled, with the reason as data."""
        run = self._drop_queued(mid, token)
        if run is not None:
            why = reason if isinstance(reason, str) else None
            self.host.event(type="cancelled", id=mid, token=token, by=by, reason=why)
            run.abort(MessageCancelledError(mid, by, why))

    def abort_all(self, reason: LeaseLostError) -> None:
        self.queue.clear()
        for run in list(self.running.values()):
            run.abort(reason)

    async def stop_runs(self, reason: LeaseLostError) -> list[MessageServerFrame]:
        """Every run stops (posting nothing more); returns, once their tasks have ended, the queued
        messages no handler started."""
        unstarted = self.halt(reason)
        await self.settled()
        return unstarted

    def halt(self, reason: LeaseLostError) -> list[MessageServerFrame]:
        """Every run is told to stop, at once; returns the messages no handler started (queued, or
        given a task that has not begun: with ``stopping`` set it never will)."""
        unstarted = list(self._not_begun.values()) + list(self.queue)
        self._not_begun.clear()
        self.abort_all(reason)
        return unstarted

    async def settled(self) -> None:
        """Returns once every message task has ended."""
        if self.tasks:
            await asyncio.wait(list(self.tasks))

    async def _handle(self, frame: MessageServerFrame) -> None:
        if self.stopping:
            return  # the stop began before this task did: its message is the stop's to decline, not to run
        self._not_begun.pop((frame["id"], frame.get("token")), None)
        token = frame.get("token")
        if not isinstance(token, int):
            self.host.event(type="coordinator_error", code="bad_frame",
                            message=f"message {frame['id']} came without a lease token; this coordinator is too old for this client")
            return
        if not self.host.may_run():
            return
        run = Run(frame, self.host, self.host.run_fence(), self.clock)
        key = (run.id, token)
        if key in self.replied:
            await run.ack()
            return
        ctx = self.context(run)
        self.running[key] = run
        outcome = None
        try:
            outcome = await run.execute(lambda: self.handler(run.message, ctx))
        except Exception as err:  # a bug of this client's own: reported with its message, and serving goes on
            log.exception("message %s: the run ended with an internal error", run.id)
            self.host.event(type="internal_error", id=run.id, error=repr(err))
        finally:
            if self.running.get(key) is run:
                del self.running[key]
        if outcome == "replied":
            self.replied.add(key)

    def context(self, run: Run) -> MessageContext:
        def kept(value: Any) -> None:
            self.host.checkpoint = value

        return MessageContext(run, self.host.checkpoint, kept)
