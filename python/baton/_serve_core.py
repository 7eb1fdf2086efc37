"""One serve connection's decisions, without I/O (client/core/serve-core.ts): what to send when the
connection opens (the claim, then a replay of missed history), what each frame from the coordinator
means (the lease held or lost, a message to run, a run revoked or cancelled), and when this
process's own clock says the lease or the connection can no longer be proven (then every run stops
and the link dials again). It is also the port runs write through. The socket, large values and
time come in as adapters (:class:`~baton._link.Link`, :class:`~baton._run_blobs.Blobs`,
:class:`~baton._clock.Clock`); ``serve.py`` wires the real ones, the transcripts and unit tests
fakes. It decides nothing about the journal (``_journal_rules.py``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Mapping, Optional

from . import _run_blobs
from ._clock import Clock, LeaseClock, sleep
from ._handler import Message
from ._journal_rules import refusal
from ._link import FALLBACK_TTL, Link, NotConnected
from ._run import Run, Unconfirmed
from ._run_blobs import Blobs
from ._run_context import Handler
from ._serve_lease import ServeLease, claim_frame
from ._wire_types import ClientFrame
from ._work_loop import WorkLoop
from .errors import LeaseLostError

__all__ = ["ServeCore"]

#: Where an ``on_status``, ``on_event`` or ``on_message`` callback that raised is reported (serving goes on).
log = logging.getLogger("baton")
RATE_LIMITED_RETRY = 1.0
RELEASE_TIMEOUT = 2.0


class ServeCore:
    def __init__(self, agent: str, handler: Handler, link: Link, clock: Clock, runner_id: str, *,
                 blobs: Optional[Blobs] = None, concurrency: int = 1, priority: int = 0, cursor: int = 0,
                 on_status: Optional[Callable[[dict[str, Any]], None]] = None,
                 on_event: Optional[Callable[[dict[str, Any]], None]] = None,
                 on_message: Optional[Callable[[Message], None]] = None) -> None:
        self.agent = agent
        self.link = link
        self.clock = clock
        self.blobs = blobs
        self.runner_id = runner_id
        self.concurrency = concurrency
        self.priority = priority
        #: Messages up to this id were seen: a (re)connect's sync asks only for later ones.
        self.cursor = cursor
        self.on_status = on_status
        self.on_event = on_event
        self.on_message = on_message
        self.status: dict[str, Any] = {"kind": "connecting"}
        self.lease = ServeLease(FALLBACK_TTL)  # the serve lease
        self.connection = LeaseClock(FALLBACK_TTL)  # the connection itself, by this process's clock
        self.work = WorkLoop(handler, concurrency, self, clock)
        #: The agent's checkpoint, as handed to the holder (or saved by its runs since).
        self.checkpoint: Any = None
        self._sync_epoch = 0
        self._heard_lease = False
        self._claim_sent_at = 0.0
        self._deadline: Optional[Callable[[], None]] = None  # what cancels the lease's deadline timer
        self._group: Optional[asyncio.TaskGroup] = None
        #: stop() told the coordinator this runner is stopping, so it may decline what it will not start.
        self._said_stopping = False
        #: While stopping, the coordinator handed the lease to a runner that is not: as good as released.
        self._handed_on = False

    def attach(self, group: asyncio.TaskGroup) -> None:
        """The task group the history replay and the message tasks run in (the shell's, while it serves)."""
        self._group = group
        self.work.attach(group)

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

    # -- what the connection tells -------------------------------------------------------------

    async def opened(self, dialed_at: float) -> None:
        """Connected (dialled at ``dialed_at``): claim, and replay the history missed meanwhile; once
        the stop began, nothing (a new connection is not known to be stopping and would be handed work)."""
        if self.work.stopping:
            return
        t = self.clock.now()
        self.lease.reset(self.link.ttl)
        self.lease.acked(dialed_at, t)
        self.connection.reset(self.link.ttl)
        self.connection.confirmed(dialed_at, t)
        self.connection.hold(t)
        self._heard_lease = False
        self._claim_sent_at = t
        await self.link.send(dict(claim_frame(self.runner_id, self.concurrency, self.priority)))
        self._sync_epoch += 1
        if self._group is not None:
            self._group.create_task(self._replay_history(self._sync_epoch))
        self._report(self.lease.status())

    async def _replay_history(self, epoch: int) -> None:
        """One sync page at a time (``more`` while there is another); over the coordinator's replay
        budget it is refused rate_limited and asked again a second later. A reconnect ends it."""
        after = self.cursor
        while epoch == self._sync_epoch and self.link.open:
            try:
                answer = await self.link.request({"type": "sync", "after": after})
            except NotConnected:
                return
            if answer["type"] == "error":
                if answer.get("code") != "rate_limited":
                    return
                await sleep(self.clock, RATE_LIMITED_RETRY)
            elif answer.get("op") == "sync" and answer.get("more"):
                after = answer["cursor"]
            else:
                return

    def frame(self, frame: dict[str, Any]) -> None:
        """A frame from the coordinator (answers to requests are matched by the link, not here)."""
        kind = frame["type"]
        if kind == "welcome":
            ttl = frame["heartbeat_ttl_ms"] / 1000
            if ttl > 0:
                self.connection.set_ttl(ttl)
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
                self._handed_out(frame)
        elif kind == "revoked":
            self.work.revoke(frame["id"], frame["token"], str(frame["reason"]))
        elif kind == "cancel":
            self.work.cancel(frame["id"], frame["token"], str(frame["by"]), frame.get("reason"))

    def _handed_out(self, frame: dict[str, Any]) -> None:
        if not self.work.stopping:
            self.work.enqueue(frame)  # type: ignore[arg-type]
        elif self._said_stopping and self._group is not None:
            # Handed out before the coordinator read our hello {stopping}: given back, so it costs no attempt.
            self._group.create_task(self._decline(frame))

    def pong(self, sent_at: float) -> None:
        """A pong answered the ping sent at ``sent_at``: both clocks move on."""
        t = self.clock.now()
        self.connection.confirmed(sent_at, t)
        self.lease.acked(sent_at, t)
        self._after_lease_change()

    async def closed(self) -> None:
        """The connection closed: every run stops (the coordinator takes their messages back)."""
        self._clear_deadline()
        await self.work.stop_runs(LeaseLostError("the connection closed", "lapsed"))
        self.lease.reset(self.link.ttl)

    def retrying(self, attempt: int, delay: float, reason: str) -> None:
        """The link dials again after ``delay`` seconds."""
        self._report({"kind": "reconnecting", "attempt": attempt, "delay_ms": round(delay * 1000), "reason": reason})

    # -- the serve lease -----------------------------------------------------------------------

    def _on_lease(self, frame: dict[str, Any]) -> None:
        if not self._heard_lease:
            self._heard_lease = True
            self.lease.acked(self._claim_sent_at, self.clock.now())
        if self.lease.kind == "lapsed":
            return
        if self._said_stopping and self.lease.kind == "holder" and frame.get("held") is False:
            self._handed_on = True  # the coordinator moved the lease on because this runner is stopping
        if self.lease.on_lease_frame(frame, self.clock.now()):  # type: ignore[arg-type]
            self.checkpoint = frame.get("checkpoint")
            self.event(type="held", fence=self.lease.fence)
        # messages under their own tokens run on until the coordinator revokes them
        self._after_lease_change()

    def _after_lease_change(self) -> None:
        """Reports the state and re-arms the local deadline; a lapsed lease or connection demotes at once."""
        t = self.clock.now()
        self.lease.valid(t)
        if self.lease.kind == "lapsed":
            return self._demote("the lease lapsed on the local clock")
        if not self.connection.valid(t):
            return self._demote("the connection could not be proven alive in time")
        self._report(self.lease.status())
        self._clear_deadline()
        deadlines = [d for d in (self.lease.deadline, self.connection.deadline) if d is not None]
        if deadlines and self.link.open:
            self._deadline = self.clock.after(max(0.0, min(deadlines) - t) + 0.001, self._after_lease_change)

    def _demote(self, reason: str) -> None:
        """The local clock says the lease is gone: cancel the handlers, post nothing, rejoin."""
        self._clear_deadline()
        self._report({"kind": "lapsed", "fence": self.lease.fence})
        self.event(type="demoted", reason=reason, fence=self.lease.fence)
        self.work.abort_all(LeaseLostError(reason, "lapsed"))
        self.link.reconnect_now(reason)

    def _clear_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline()
        self._deadline = None

    # -- the port runs write through -----------------------------------------------------------

    def may_run(self) -> bool:
        """The connection is alive by this process's clock (writes under a message token)."""
        return self.link.open and self.connection.may_act(self.clock.now())

    def _may_act(self) -> bool:
        """Holding the serve lease, valid by this process's clock (fenced writes)."""
        before = self.lease.kind
        ok = self.link.open and self.lease.may_act(self.clock.now())
        if self.lease.kind == "lapsed" and before != "lapsed":
            self._demote("the lease lapsed on the local clock")
        return ok

    def run_fence(self) -> int:
        return self.lease.fence if self.lease.kind == "holder" else -1

    async def write(self, frame: ClientFrame, fenced: bool = False) -> dict[str, Any]:
        if not (self._may_act() if fenced else self.may_run()):
            raise LeaseLostError("the lease is gone by the local clock", "lapsed")
        try:
            answer = await self.link.request(dict(frame))
        except NotConnected as err:
            self.event(type="unconfirmed", frame=frame["type"], reason=str(err))
            raise Unconfirmed(f"{frame['type']} not confirmed: {err}", "lapsed") from None
        if answer["type"] == "result":
            return answer
        self.event(type="refused", frame=frame["type"], code=answer.get("code"), message=answer.get("message"))
        raise refusal(frame["type"], answer)[0]  # type: ignore[arg-type]

    async def upload(self, run: Run, raw: bytes, what: str) -> str:
        return await _run_blobs.upload(self.blobs, run, raw, what, self.event)

    async def download(self, run: Run, blob: str) -> bytes:
        return await _run_blobs.download(self.blobs, run, blob)

    # -- stopping ------------------------------------------------------------------------------

    async def _decline(self, frame: Mapping[str, Any]) -> None:
        """Gives a hand-out this stopping runner never started back to the queue."""
        token = frame.get("token")
        if not isinstance(token, int) or not self.link.open:
            return
        try:
            await self.link.request({"type": "decline", "id": frame["id"], "token": token}, RELEASE_TIMEOUT)
        except NotConnected:
            return  # the coordinator takes it back with the connection

    async def stop(self, reason: str, release: bool) -> None:
        """Every run stops (posting nothing more) and has ended when this returns; with ``release``
        and an open connection, the coordinator is first told this runner is stopping (nothing new is
        handed to it meanwhile), then the lease is given up so a standby takes over at once. What
        reached it that no handler started (waiting for a slot, or handed out before the coordinator
        read the hello) it declines first: back to the queue, the attempt not counted."""
        self.work.stopping = True
        if release and self.link.open:
            # Said before the hello: an idle holder's hello is its safe point, where the coordinator may hand the lease on at once.
            if self.lease.kind == "holder":
                self.event(type="releasing", fence=self.lease.fence)
            # Before the await: a hand-out arriving while the hello goes out is declined, not dropped.
            self._said_stopping = True
            if not await self.link.send({"type": "hello", "stopping": True}):
                self._said_stopping = False
        # What never started goes back at once, while handlers that ignore their cancel still run.
        unstarted = self.work.halt(LeaseLostError(reason, "stopped"))
        declines = [self._decline(f) for f in unstarted] if self._said_stopping else []
        await asyncio.gather(self.work.settled(), *declines)
        if not release or not self.link.open:
            return
        try:
            answer = await self.link.request({"type": "serve_lease", "op": "release"}, RELEASE_TIMEOUT)
        except NotConnected:
            return  # the coordinator notices the close instead
        if answer.get("type") == "result" and (answer.get("released") is True or self._handed_on):
            self.event(type="released")
