"""One run of one message: what it owns and how it ends (the run lifecycle of client/work-loop.ts).

A :class:`Run` owns its cancellation (``lost``, set once, with the task running the handler
cancelled with it), its timers (the run timeout, and the heartbeat clock when the agent has a
heartbeat timeout), its steps in flight, and its journal (:class:`baton._journal_rules.Journal`). It
writes through a :class:`RunPort`: the serve core (``_serve_core.py``, over its link), or memory
(``baton.testing``); its time is the :class:`~baton._clock.Clock` it is given. ``execute`` is the
whole lifecycle: read a large checkpoint, call the handler, then reply, fail, or post nothing
(lost, or parked).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable, Optional, Protocol

from ._clock import Clock
from ._journal_rules import REPLY_BYTES, Journal
from ._handler import Message, error_text
from ._wire_types import ClientFrame, MessageServerFrame
from .errors import BatonError, CoordinatorError, LeaseLostError

__all__ = ["Run", "RunPort", "Unconfirmed"]

log = logging.getLogger("baton")


class Unconfirmed(LeaseLostError):
    """A write sent and never answered (the connection broke or timed out): the run may still hold
    its message, so it is not stopped, but the write cannot be counted on."""


class RunPort(Protocol):
    """What a run writes through. ``write`` returns the result frame, or raises: LeaseLostError when
    the message (or the serve lease, for ``fenced``) is gone or could not be proven, Unconfirmed when
    no answer came, CoordinatorError for another refusal."""

    agent: str

    async def write(self, frame: ClientFrame, fenced: bool = False) -> dict[str, Any]: ...

    async def upload(self, run: "Run", raw: bytes, what: str) -> str: ...

    async def download(self, run: "Run", blob: str) -> bytes: ...

    def event(self, **event: Any) -> None: ...


class Run:
    def __init__(self, frame: MessageServerFrame, port: RunPort, fence: int, clock: Clock) -> None:
        self.frame = frame
        self.clock = clock
        #: The serve lease's fence when the run began (-1 when this process was not the holder).
        self.fence = fence
        #: This message's checkpoint from an earlier attempt (one kept in R2 is read before the handler runs).
        self.message_checkpoint: Any = frame.get("checkpoint")
        self.port = port
        self.journal = Journal(frame)
        self.id: int = frame["id"]
        self.token: Optional[int] = frame.get("token")
        self.message = Message.from_frame(frame)
        self.lost: Optional[LeaseLostError] = None
        self.lost_event = asyncio.Event()
        self.parked = False
        #: The task running the handler, while it runs: what ``abort`` cancels.
        self._handler_task: Optional[asyncio.Task[Any]] = None
        self._timer: Optional[Callable[[], None]] = None  # what cancels the run timeout
        self._beat_timer: Optional[Callable[[], None]] = None  # what cancels the heartbeat clock
        #: This run's live output (``ctx.output``), made on its first write; sent before the run ends.
        self.output: Optional[Any] = None
        #: Steps and effects of this attempt still running, by name: a second call of one shares the first's result.
        self.inflight: dict[str, asyncio.Task[Any]] = {}
        #: Results kept as blobs, once read back (or uploaded) by this run, by blob id.
        self.blob_values: dict[str, Any] = {}

    # -- cancellation and timers ---------------------------------------------------------------

    def abort(self, reason: LeaseLostError) -> None:
        """From now on nothing is written for this run, and its handler is cancelled (at its next await)."""
        self.stop_timers()
        if self.lost is None:
            self.lost = reason
            self.lost_event.set()
        if self._handler_task is not None and not self._handler_task.done():
            self._handler_task.cancel()

    def throw_if_lost(self) -> None:
        if self.lost is not None:
            raise self.lost

    def arm_timers(self) -> None:
        """The run timeout (the coordinator's started before the frame arrived: ours is never later)
        and the heartbeat clock, from now."""
        timeout_ms = self.frame.get("run_timeout_ms")
        if isinstance(timeout_ms, (int, float)) and timeout_ms > 0:
            self._timer = self.clock.after(timeout_ms / 1000, lambda: self.abort(
                LeaseLostError(f"message {self.id} ran past its run timeout", "lapsed")))
        self.heartbeat_confirmed(self.clock.now())

    def heartbeat_confirmed(self, sent_at: float) -> None:
        """With a heartbeat timeout, the coordinator takes the run back once none arrived within it;
        this clock cancels the run first: it runs from ``sent_at`` of the last confirmed heartbeat
        (or the hand-out), which is never later than the coordinator's own."""
        timeout_ms = self.frame.get("heartbeat_timeout_ms")
        if not isinstance(timeout_ms, (int, float)) or timeout_ms <= 0 or self.lost is not None:
            return
        if self._beat_timer is not None:
            self._beat_timer()

        def lapse() -> None:
            self.port.event(type="revoked", id=self.id, token=self.token,
                            reason="no heartbeat within the heartbeat timeout by the local clock")
            self.abort(LeaseLostError(f"message {self.id} sent no heartbeat within {timeout_ms:g} ms", "lapsed"))

        self._beat_timer = self.clock.after(sent_at + timeout_ms / 1000 - self.clock.now(), lapse)

    def stop_timers(self) -> None:
        for cancel in (self._timer, self._beat_timer):
            if cancel is not None:
                cancel()
        self._timer = self._beat_timer = None

    # -- writing -------------------------------------------------------------------------------

    async def write(self, frame: ClientFrame, fenced: bool = False) -> dict[str, Any]:
        """One write under this run; a refusal that means the message is gone stops the run first."""
        self.throw_if_lost()
        try:
            return await self.port.write(frame, fenced)
        except Unconfirmed:
            raise
        except LeaseLostError as lost:
            self.abort(lost)
            raise self.lost or lost from None

    async def upload(self, raw: bytes, what: str) -> str:
        self.throw_if_lost()
        try:
            blob = await self.port.upload(self, raw, what)
        except LeaseLostError as lost:
            self.abort(lost)
            raise self.lost or lost from None
        self.throw_if_lost()
        return blob

    async def read_json(self, ref: Any, what: str) -> Any:
        """The JSON value of blob ``ref`` ({id, bytes}) of this message, read back once per run."""
        blob = ref.get("id") if isinstance(ref, dict) else None
        if not isinstance(blob, str):
            raise CoordinatorError(None, f"{what} is a blob without an id", 0, ref if isinstance(ref, dict) else None)
        if blob in self.blob_values:
            return self.blob_values[blob]
        raw = await self.port.download(self, blob)
        if isinstance(ref.get("bytes"), int) and len(raw) != ref["bytes"]:
            raise CoordinatorError(None, f"blob {blob} of {what} is {len(raw)} bytes, not the {ref['bytes']} recorded", 0, ref)
        try:
            value = json.loads(raw.decode("utf-8"))
        except ValueError as err:
            raise CoordinatorError(None, f"blob {blob} of {what} is not JSON: {err}", 0, ref) from None
        self.blob_values[blob] = value
        return value

    # -- the lifecycle -------------------------------------------------------------------------

    async def execute(self, call: Callable[[], Awaitable[Any]]) -> Optional[str]:
        """Runs the handler (``call``) in this task and ends the run: reply, fail, or nothing. Returns
        how it ended: ``replied``, ``failed``, ``parked``, ``lost``, or None when nothing came of it."""
        self.arm_timers()
        self._handler_task = asyncio.current_task()
        try:
            try:
                ref = self.frame.get("checkpoint_blob")
                if isinstance(ref, dict):  # a checkpoint too large to ride inline: read it before the handler runs
                    try:
                        self.message_checkpoint = await self.read_json(ref, "the message's checkpoint")
                    except BatonError as err:
                        raise BatonError(f"the message's checkpoint could not be read: {err}") from err
                reply = await call()
            finally:
                self._handler_task = None
                self.stop_timers()
        except asyncio.CancelledError:
            if self.lost is None:  # this task itself is being cancelled (serving stops)
                raise
            self._uncancel()
            return "lost"
        except Exception as exc:  # the handler raised: a failed attempt, never a reply
            if self.lost is not None or self.parked:
                self._uncancel()
                return "lost" if self.lost is not None else "parked"
            await self.flush_output()
            return await self.fail(exc)
        self._uncancel()
        if self.lost is not None or self.parked:
            if self.lost is not None:
                self.port.event(type="suppressed", id=self.id, token=self.token, reason=str(self.lost))
            return "lost" if self.lost is not None else "parked"
        # Its output is stored before its reply ends the attempt (after that, the coordinator refuses it).
        await self.flush_output()
        if self.lost is not None:
            return "lost"
        return await self.reply("" if reply is None else str(reply))

    async def flush_output(self) -> None:
        if self.output is not None:
            await self.output.flush()

    def _uncancel(self) -> None:
        """A handler cancelled because the run was lost has ended: this task goes on (to post nothing)."""
        task = asyncio.current_task()
        while task is not None and self.lost is not None and task.cancelling():
            task.uncancel()

    async def reply(self, text: str) -> Optional[str]:
        try:
            raw = text.encode("utf-8")
            body = {"text": text} if len(raw) <= REPLY_BYTES else {"text": "", "blob": await self.upload(raw, "a reply")}
        except Exception as exc:  # too large, or the upload failed: a failed attempt, never a cut reply
            return None if self.lost is not None else await self.fail(exc)
        refused: Optional[BaseException] = None
        try:
            await self.write(self.journal.reply_frame(body))
        except (LeaseLostError, CoordinatorError) as err:
            refused = err
        outcome = self.journal.after_reply(refused)
        if outcome == "ran":
            self.port.event(type="ran", id=self.id, attempt=self.message.attempt, fence=self.fence, token=self.token)
            return "replied"
        if outcome == "park":  # the run asked a person and finished anyway: it waits for the answer instead
            from ._frame_journal import park  # the journal shell imports this module

            try:
                await park(self, None, None)
            except BatonError as exc:
                log.warning("message %s: the run asked a person but could not park: %s", self.id, exc)
                return None
            return "parked"
        if outcome == "fail":  # an effect of this attempt recorded no outcome: the message waits for a person
            return await self._post_fail(error_text(refused) if refused else "")
        return None

    async def fail(self, exc: BaseException) -> Optional[str]:
        """Posts ``fail`` for a failed attempt (the coordinator retries it after a backoff, or parks it for a person)."""
        self.port.event(type="handler_failed", id=self.id, error=str(exc))
        return await self._post_fail(error_text(exc))

    async def _post_fail(self, reason: str) -> Optional[str]:
        try:
            await self.write({"type": "fail", "id": self.id, "token": self.journal.token, "reason": reason})
        except (LeaseLostError, CoordinatorError):
            return None
        return "failed"

    async def ack(self) -> None:
        """The reply of this (message, token) was stored by an earlier hand-out: acknowledge it again."""
        try:
            await self.write(self.journal.ack_frame())
        except (LeaseLostError, CoordinatorError):
            pass  # the coordinator hands it out again, or it is gone: either way nothing more to do here
