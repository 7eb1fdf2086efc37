"""The serve of one agent from this process (client/serve.ts): wires the connection, the serve
lease as this process sees it, and the work loop, and is the port runs write through. It decides
nothing about the journal (``_journal_rules.py``) and owns no socket code (``_socket.py``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Callable, Optional

from . import _run_blobs
from ._clock import SYSTEM_CLOCK, Clock, LeaseClock
from ._socket import FALLBACK_TTL, Connection, Link, NotConnected
from ._run_context import Handler
from ._journal_rules import refusal
from ._handler import Message
from ._run import Run, Unconfirmed
from ._serve_lease import ServeLease, claim_frame
from ._wire_types import ClientFrame
from ._work_loop import WorkLoop
from .errors import BatonError, LeaseLostError

__all__ = ["ServeCore"]

#: Where an ``on_status``, ``on_event`` or ``on_message`` callback that raised is reported (serving goes on).
log = logging.getLogger("baton")
RATE_LIMITED_RETRY = 1.0


class ServeCore:
    def __init__(self, agent: str, handler: Handler, url: str, token: str, machine: str, runner_id: Optional[str],
                 on_status: Optional[Callable[[dict[str, Any]], None]], on_event: Optional[Callable[[dict[str, Any]], None]],
                 concurrency: int = 1, priority: int = 0, on_message: Optional[Callable[[Message], None]] = None,
                 cursor: int = 0, link: Optional[Link] = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self.agent = agent
        self.clock = clock
        self.on_message = on_message
        #: Messages up to this id were seen: a (re)connect's sync asks only for later ones.
        self.cursor = cursor
        self._sync_epoch = 0
        self.url = url.rstrip("/")
        self.token = token
        self.runner_id = runner_id or str(uuid.uuid4())
        self.concurrency = concurrency
        self.priority = priority
        self.on_status = on_status
        self.on_event = on_event
        self.status: dict[str, Any] = {"kind": "connecting"}
        self.conn: Link = link if link is not None else Connection(self.url, token, agent, machine, self)
        self.lease = ServeLease(FALLBACK_TTL)  # the serve lease
        self.link = LeaseClock(FALLBACK_TTL)  # the connection itself
        self.work = WorkLoop(handler, concurrency, self, clock)
        #: The agent's checkpoint, as handed to the holder (or saved by its runs since).
        self.checkpoint: Any = None
        self.holding = False  # the dropped connection held the lease: reconnect within 4 s
        self._heard_lease = False
        self._claim_sent_at = 0.0
        self._deadline: Optional[Callable[[], None]] = None  # what cancels the lease's deadline timer
        self._stop_task: Optional[asyncio.Task[None]] = None
        self._group: Optional[asyncio.TaskGroup] = None
        self.done: Optional[asyncio.Future[None]] = None
        self._main: Optional[asyncio.Task[None]] = None

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.done = loop.create_future()
        self._main = loop.create_task(self._run())

    # -- reporting -----------------------------------------------------------------------------

    def event(self, **event: Any) -> None:
        if self.on_event:
            try:
                self.on_event(event)
            except Exception:  # it runs inside the lease machinery: raising there would cost the lease
                log.exception("on_event raised on a %s event; serving goes on", event.get("type"))

    def _report(self, status: dict[str, Any]) -> None:
        if status == self.status:
            return
        self.status = status
        if self.on_status:
            try:
                self.on_status(dict(status))
            except Exception:  # as for on_event
                log.exception("on_status raised on status %s; serving goes on", status.get("kind"))

    # -- the main task -------------------------------------------------------------------------

    async def _run(self) -> None:
        assert self.done is not None
        try:
            async with asyncio.TaskGroup() as group:
                self.attach(group)
                await self._connect()
        except BaseExceptionGroup as group:  # refused for good (bad token, bad name), or a bug
            err = group.exceptions[0] if len(group.exceptions) == 1 else group
            if isinstance(err, BatonError):  # a refusal in one line, without the internals that met it
                err.__suppress_context__ = True
                err = err.with_traceback(None)
            if not self.done.done():
                self.done.set_exception(err)

    def attach(self, group: asyncio.TaskGroup) -> None:
        """The task group the history replay and the message tasks run in."""
        self._group = group
        self.work.attach(group)

    async def _connect(self) -> None:
        try:
            await self.conn.run()
        except Exception as err:
            self.conn.stopping = self.work.stopping = True
            await self.work.stop_runs(LeaseLostError(f"serving ended: {err}", "stopped"))
            raise

    # -- the connection's listener -------------------------------------------------------------

    async def opened(self, dialed_at: float) -> None:
        """Connected: claim, and replay the history missed meanwhile."""
        t = self.clock.now()
        self.lease.reset(self.conn.ttl)
        self.lease.acked(dialed_at, t)
        self.link.reset(self.conn.ttl)
        self.link.confirmed(dialed_at, t)
        self.link.hold(t)
        self._heard_lease = False
        self._claim_sent_at = t
        await self.conn.send(dict(claim_frame(self.runner_id, self.concurrency, self.priority)))
        self._sync_epoch += 1
        if self._group is not None:
            self._group.create_task(self._replay_history(self._sync_epoch))
        self._report(self.lease.status())

    async def _replay_history(self, epoch: int) -> None:
        """One sync page at a time (``more`` while there is another); over the coordinator's replay
        budget it is refused rate_limited and asked again a second later. A reconnect ends it."""
        after = self.cursor
        while epoch == self._sync_epoch and self.conn.open:
            try:
                answer = await self.conn.request({"type": "sync", "after": after})
            except NotConnected:
                return
            if answer["type"] == "error":
                if answer.get("code") != "rate_limited":
                    return
                await asyncio.sleep(RATE_LIMITED_RETRY)
            elif answer.get("op") == "sync" and answer.get("more"):
                after = answer["cursor"]
            else:
                return

    def frame(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        if kind == "welcome":
            ttl = frame["heartbeat_ttl_ms"] / 1000
            if ttl > 0:
                self.conn.set_ttl(ttl)
                self.link.set_ttl(ttl)
                self.lease.set_ttl(ttl)
                self._after_lease_change()
        elif kind == "error" and frame.get("req") is None:
            self.event(type="coordinator_error", code=frame.get("code"), message=frame.get("message"))
        elif kind == "serve_lease":
            self._on_lease(frame)
        elif kind == "message":
            self.cursor = max(self.cursor, frame["id"])
            if self.on_message is not None:
                try:
                    self.on_message(Message.from_frame(frame))  # type: ignore[arg-type]
                except Exception:  # as for on_event
                    log.exception("on_message raised on message %s; serving goes on", frame["id"])
            if frame["run"] is True:
                self.work.enqueue(frame)  # type: ignore[arg-type]
        elif kind == "revoked":
            self.work.revoke(frame["id"], frame["token"], str(frame["reason"]))
        elif kind == "cancel":
            self.work.cancel(frame["id"], frame["token"], str(frame["by"]), frame.get("reason"))

    def pong(self, sent_at: float) -> None:
        t = self.clock.now()
        self.link.confirmed(sent_at, t)
        self.lease.acked(sent_at, t)
        self._after_lease_change()

    async def closed(self) -> None:
        if self.conn.fence is not None:
            self.holding = True
        self.conn.fence = None
        self._clear_deadline()
        await self.work.stop_runs(LeaseLostError("the connection closed", "lapsed"))
        self.lease.reset(self.conn.ttl)

    def retrying(self, attempt: int, delay: float, reason: str) -> None:
        self._report({"kind": "reconnecting", "attempt": attempt, "delay_ms": round(delay * 1000), "reason": reason})

    # -- the serve lease -----------------------------------------------------------------------

    def _on_lease(self, frame: dict[str, Any]) -> None:
        self.conn.fence = frame["fence"] if frame["held"] else None
        self.holding = False
        if not self._heard_lease:
            self._heard_lease = True
            self.lease.acked(self._claim_sent_at, self.clock.now())
        if self.lease.kind == "lapsed":
            return
        if self.lease.on_lease_frame(frame, self.clock.now()):  # type: ignore[arg-type]
            self.checkpoint = frame.get("checkpoint")
            self.event(type="held", fence=self.lease.fence)
        # messages under their own tokens run on until the coordinator revokes them
        self._after_lease_change()

    def _after_lease_change(self) -> None:
        t = self.clock.now()
        self.lease.valid(t)
        if self.lease.kind == "lapsed":
            return self._demote("the lease lapsed on the local clock")
        if not self.link.valid(t):
            return self._demote("the connection could not be proven alive in time")
        self._report(self.lease.status())
        self._clear_deadline()
        deadlines = [d for d in (self.lease.deadline, self.link.deadline) if d is not None]
        if deadlines and self.conn.open:
            self._deadline = self.clock.after(max(0.0, min(deadlines) - t) + 0.001, self._after_lease_change)

    def _demote(self, reason: str) -> None:
        """The local clock says the lease is gone: cancel the handlers, post nothing, rejoin."""
        self._clear_deadline()
        self._report({"kind": "lapsed", "fence": self.lease.fence})
        self.event(type="demoted", reason=reason, fence=self.lease.fence)
        self.work.abort_all(LeaseLostError(reason, "lapsed"))
        self.conn.drop(reason, reconnect_now=True)

    def _clear_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline()
        self._deadline = None

    # -- the port runs write through -----------------------------------------------------------

    def may_run(self) -> bool:
        """The connection is alive by this process's clock (writes under a message token)."""
        return self.conn.open and self.link.may_act(self.clock.now())

    def _may_act(self) -> bool:
        """Holding the serve lease, valid by this process's clock (fenced writes)."""
        before = self.lease.kind
        ok = self.conn.open and self.lease.may_act(self.clock.now())
        if self.lease.kind == "lapsed" and before != "lapsed":
            self._demote("the lease lapsed on the local clock")
        return ok

    def run_fence(self) -> int:
        return self.lease.fence if self.lease.kind == "holder" else -1

    async def write(self, frame: ClientFrame, fenced: bool = False) -> dict[str, Any]:
        if not (self._may_act() if fenced else self.may_run()):
            raise LeaseLostError("the lease is gone by the local clock", "lapsed")
        try:
            answer = await self.conn.request(dict(frame))
        except NotConnected as err:
            self.event(type="unconfirmed", frame=frame["type"], reason=str(err))
            raise Unconfirmed(f"{frame['type']} not confirmed: {err}", "lapsed") from None
        if answer["type"] == "result":
            return answer
        self.event(type="refused", frame=frame["type"], code=answer.get("code"), message=answer.get("message"))
        raise refusal(frame["type"], answer)[0]  # type: ignore[arg-type]

    async def upload(self, run: Run, raw: bytes, what: str) -> str:
        return await _run_blobs.upload(self.url, self.token, run, raw, what, self.event)

    async def download(self, run: Run, blob: str) -> bytes:
        return await _run_blobs.download(self.url, self.token, run, blob)

    # -- stopping ------------------------------------------------------------------------------

    async def stop(self) -> None:
        if self._stop_task is None:
            self._stop_task = asyncio.get_running_loop().create_task(self._shutdown())
        await asyncio.shield(self._stop_task)

    async def _shutdown(self) -> None:
        self.conn.stopping = self.work.stopping = True
        await self.work.stop_runs(LeaseLostError("serving stopped", "stopped"))
        if self.conn.open:
            if self.lease.kind == "holder":
                self.event(type="releasing", fence=self.lease.fence)
            try:
                answer = await self.conn.request({"type": "serve_lease", "op": "release"}, 2.0)
                if answer.get("type") == "result" and answer.get("released") is True:
                    self.event(type="released")
            except NotConnected:
                pass  # the coordinator notices the close instead
            await self.conn.close()
        if self._main is not None:
            self._main.cancel()
            await asyncio.wait([self._main])
        if self.done is not None and not self.done.done():
            self.done.set_result(None)
