"""serve(agent, handler): join an agent's serve line; while this process holds the serve lease,
run the handler once per message the coordinator hands it (one at a time, in order; or up to
``concurrency`` at once, each in its own task, in the agent's ``pool`` mode on every runner).

What is promised:

* The handler of a message is cancelled (its task gets ``CancelledError``; ``ctx.lost`` says why)
  the moment this process may no longer act on it: the coordinator revoked it, its run timeout
  passed on this process's clock, the connection dropped, the serve lease lapsed by this
  process's own monotonic clock (TTL counted from the send time of the last answered ping, as in
  client/lease-clock.ts), or ``stop()`` was called.
* Nothing is posted for a run after that point: not its reply, not a ``fail``, not a checkpoint,
  even if the handler swallows the cancellation and returns.
* A handler that raises sends ``fail`` with ``str(exc)`` (the coordinator retries the message
  after a backoff, up to the agent's max_attempts); it is never stored as a reply.
* It claims on every (re)connect, reconnecting with exponential backoff and jitter (capped at 4 s
  while the dropped connection held the lease, to be back within the coordinator's restart grace).

What is not promised: cancellation reaches a handler only at its next ``await``; a handler that
blocks the event loop keeps running until it yields (and the process's heartbeats stop with it, so
it loses the lease). Side effects outside baton are not undone: key them on the message id and
carry ``ctx.token`` / ``ctx.fence`` so the resource can refuse a stale writer. The lease clock
assumes this machine's clock runs at the coordinator's rate.

Durable steps (the same journal as the TypeScript client's ``ctx.step`` / ``ctx.effect``): run the
handler from the top on every attempt; ``await ctx.step(name, fn)`` returns what an earlier attempt
(here or on another machine) recorded for ``name`` without calling ``fn`` again, and
``await ctx.effect(name, fn)`` records its intent before ``fn`` runs, so an effect whose outcome is
unknown is never run a second time silently; two concurrent calls of one name in one attempt share
the first call's result. A result over 48 KiB of JSON (up to 16 MiB) is uploaded to the
coordinator's R2 over HTTP before its journal write, which records a blob reference; a replay reads
it back over HTTP. A message checkpoint over 16 KiB and a reply over 32 KiB go the same way (up to
16 MiB; a larger reply fails the attempt). A reply refused because an effect of this attempt began
and recorded no outcome (``outcome_unknown``) fails the attempt, so the message parks for a person.
``await ctx.heartbeat()`` keeps a run alive under the
agent's heartbeat timeout; a run that has no heartbeat confirmed within it is cancelled here first.

A person in the loop (as the TypeScript client's ``ctx.ask``): ``await ctx.ask(question)`` returns
the answer recorded in the journal under its step (``ask:N``, N counting this run's asks, or
``name``) when there is one; else it parks the message with the question and raises
WaitingForPersonError, which ends the run as parked (nothing is posted; it is not a failure). When a
person answers (``baton.answer``, ``approve``, ``reject``, or the CLI), the coordinator records the
answer under that step and hands the message out again: the handler runs from the top, recorded
steps replay, and ``ask`` returns the answer. A rejected message never runs again.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import logging
import random
import socket as _socket
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional, Sequence

from ._clock import LeaseClock, now
from ._http import arequest_bytes, arequest_json, checked_url
from ._serving import Serving
from ._websocket import DIAL_ERRORS, Socket, SocketClosed, open_socket
from ._wire import LIMITS, client_field, step_name_pattern, valid, valid_client_frame, valid_server_frame
from .errors import (BatonError, CoordinatorError, LeaseLostError, MessageCancelledError, OutcomeUnknownError, UnreachableError,
                     WaitingForPersonError)

__all__ = ["Answerer", "Effect", "Message", "MessageContext", "PersonAnswer", "ServeHandle", "serve"]

PING_TEXT = '{"type":"ping"}'
PONG_TEXT = '{"type":"pong"}'
FALLBACK_TTL = 60.0
#: From the wire's LIMITS: larger replies and message checkpoints go to R2 as blobs.
REPLY_BYTES: int = LIMITS["replyTextBytes"]
FAIL_REASON_CHARS: int = LIMITS["failReasonChars"]
CHECKPOINT_BYTES: int = LIMITS["checkpointBytes"]
FRAME_BYTES: int = LIMITS["frameBytes"]
STEP_VALUE_BYTES: int = LIMITS["stepValueBytes"]
BLOB_BYTES: int = LIMITS["blobBytes"]
STEP_NAME_CHARS: int = LIMITS["stepNameChars"]
#: How long one blob upload or download may take (as BLOB_TIMEOUT_MS of client/run-journal.ts).
BLOB_TIMEOUT = 120.0
ON_UNKNOWN = ("ask", "retry")
#: What a question's deadline does when nobody answered within it (questionSchema of worker/wire/protocol.ts).
ON_DEADLINE = ("fail", "approve", "reject", "escalate")
REQUEST_TIMEOUT = 10.0

#: Where an ``on_status`` or ``on_event`` callback that raised is reported (serving goes on).
log = logging.getLogger("baton")

#: Refusals after which nothing more may be posted for the message (its run stops).
MESSAGE_GONE = frozenset({"stale_token", "message_not_running", "not_your_message", "cancelled"})
#: Refusals after which nothing more may be posted under the serve lease.
LEASE_GONE = frozenset({"stale_fence", "not_holder", "lease_expired", "lease_lost"})


@dataclass(frozen=True)
class Message:
    id: int
    text: str
    #: 1 on first hand-out; more after a runner lost it or after a resume.
    attempt: int
    #: When the message was posted (ms since the epoch, coordinator's clock).
    created_at: float
    #: The message's own lease token; every write for it carries it.
    token: Optional[int]
    #: The input given with ``baton resume`` (None unless resumed).
    resume_input: Optional[str]
    group: Optional[str]
    #: Proves this hand-out over HTTP (a command's ``baton step``, any language); None from older coordinators.
    run_key: Optional[str] = None
    #: With the agent's heartbeat timeout: a run that sends no heartbeat within it is taken back; None: none.
    heartbeat_timeout_ms: Optional[float] = None
    #: The choice of the answer that queued it again (approve, or one its question offered); None when it was not answered.
    resume_choice: Optional[str] = None
    #: The W3C trace context its sender attached (None: none); with tracing on, the run span's (see baton/_tracing.py).
    traceparent: Optional[str] = None


@dataclass(frozen=True)
class Answerer:
    """Who answered a question: the account, the name of its token, and where the answer came from
    (``cli``, ``page``, ``http``; ``deadline`` when the deadline answered it)."""
    account: str
    token: str
    via: str


@dataclass(frozen=True)
class PersonAnswer:
    """A person's answer to ``ctx.ask``: the choice (``approve``, or one of the question's choices),
    the text they gave (None when none), who answered and when (ms since the epoch, coordinator's clock)."""
    choice: str
    text: Optional[str]
    by: Answerer
    at: float

    @classmethod
    def from_value(cls, value: Any, step: str) -> "PersonAnswer":
        """The answer as the coordinator records it in the journal ({choice, text, by: {account, token, via}, at})."""
        by = value.get("by") if isinstance(value, dict) else None
        if not (isinstance(value, dict) and isinstance(value.get("choice"), str) and isinstance(by, dict)
                and isinstance(value.get("at"), (int, float))):
            raise TypeError(f'"{step}" is recorded in the journal, but not as a person\'s answer; an ask needs a name of its own')
        text = value.get("text")
        return cls(choice=value["choice"], text=text if isinstance(text, str) else None,
                   by=Answerer(account=str(by.get("account", "")), token=str(by.get("token", "")), via=str(by.get("via", ""))),
                   at=float(value["at"]))


class Effect:
    """What ``ctx.effect``'s ``fn`` gets: ``key``, the same on every attempt of the message on every
    machine and different in every account (``baton:ACCOUNT_TAG:AGENT:ID:NAME``, made by the
    coordinator), to pass to the external API as its idempotency key, and
    ``lost_event``, set the moment the run may no longer act (``cancelled`` says the same)."""

    __slots__ = ("key", "lost_event", "_run")

    def __init__(self, key: str, run: "_Run") -> None:
        self.key = key
        self.lost_event = run.lost_event
        self._run = run

    @property
    def cancelled(self) -> bool:
        return self._run.lost is not None

    def __repr__(self) -> str:
        return f"Effect(key={self.key!r})"


class _Run:
    def __init__(self, frame: dict[str, Any]) -> None:
        self.frame = frame
        self.id: int = frame["id"]
        self.token: Optional[int] = frame.get("token")
        self.task: Optional[asyncio.Task[Any]] = None
        self.lost: Optional[LeaseLostError] = None
        self.lost_event = asyncio.Event()
        self.parked = False
        self.timer: Optional[asyncio.TimerHandle] = None
        #: With a heartbeat timeout: cancels the run when no heartbeat was confirmed within it, by this process's clock.
        self.beat_timer: Optional[asyncio.TimerHandle] = None
        #: The step journal handed out with the message, and every record this run made since, by name.
        self.journal: dict[str, dict[str, Any]] = {
            e["name"]: e for e in (frame.get("steps") or []) if isinstance(e, dict) and isinstance(e.get("name"), str)
        }
        #: Results kept as blobs, once read back (or uploaded) by this run, by blob id.
        self.blob_values: dict[str, Any] = {}
        #: Steps and effects of this attempt still running, by name: a second call of one shares the first's result.
        self.inflight: dict[str, asyncio.Task[Any]] = {}
        #: How many times this run called ``ask`` without a name (its default journal names: ask:1, ask:2, ...).
        self.asks = 0
        #: Effects of this attempt whose ``fn`` is running: an ``ask`` now is refused (it could never be answered).
        self.effects_running: set[str] = set()


class MessageContext:
    """What a handler gets beside the message. See the module docstring for the promises."""

    def __init__(self, serve: "_Serve", run: _Run, fence: int, checkpoint: Any) -> None:
        self._serve = serve
        self._run = run
        #: The serve lease's fence this process holds (-1 when it is not the holder).
        self.fence = fence
        #: The message's own lease token.
        self.token = run.token
        #: The agent's latest checkpoint, handed to the serve leaseholder (None when none).
        self.checkpoint = checkpoint
        #: This message's checkpoint from an earlier attempt (None when none; one kept in R2 is read before the handler runs).
        self.message_checkpoint = run.frame.get("checkpoint")
        #: Set the moment this run may no longer act (the handler task is cancelled too).
        self.lost_event = run.lost_event

    @property
    def cancelled(self) -> bool:
        """True once this run lost its lease (like an aborted AbortSignal)."""
        return self._run.lost is not None

    @property
    def lost(self) -> Optional[LeaseLostError]:
        """Why this run may no longer act, or None while it may."""
        return self._run.lost

    async def save_checkpoint(self, value: Any) -> None:
        """Stores the agent's checkpoint under the serve fence; raises LeaseLostError when the lease is gone."""
        await self._serve._save_checkpoint(self._run, self.fence, value)

    async def save_message_checkpoint(self, value: Any) -> None:
        """Stores this message's checkpoint under its token: the next runner of this message gets it.
        Over 16 KiB of JSON it is uploaded to the coordinator's R2 first; over 16 MiB, ValueError
        before anything is sent."""
        await self._serve._save_message_checkpoint(self._run, value)

    async def park(self, checkpoint: Any = None, deadline_seconds: Optional[int] = None) -> None:
        """Gives the message's lease up until someone resumes it; nothing is replied for this run.

        After ``deadline_seconds`` without a resume it fails. Return from the handler afterwards.
        ``checkpoint`` is stored as :meth:`save_message_checkpoint` stores it.
        """
        await self._serve._park(self._run, checkpoint, deadline_seconds)

    async def ask(self, question: str, choices: Optional[Sequence[str]] = None, deadline_seconds: Optional[int] = None,
                  on_deadline: Optional[str] = None, name: Optional[str] = None, checkpoint: Any = None) -> PersonAnswer:
        """Asks a person. When the journal holds the answer under this ask's step (``name``, default
        ``ask:N``, N counting this run's asks without a name), returns it at once as a
        :class:`PersonAnswer`. Otherwise parks the message with the question and raises
        WaitingForPersonError: let it propagate, the run ends as parked (nothing is replied, it is
        not a failed attempt). When someone answers, the handler runs again from the top (recorded
        steps replay) and this ``ask`` returns the answer.

        ``choices`` (1-10 short labels) are what the person picks from; without them, approve or
        reject. Reject always ends the message as ``rejected``: it never runs again. After
        ``deadline_seconds`` (1..2592000) without an answer, ``on_deadline`` decides: ``"fail"`` (the
        default), ``"approve"``, ``"reject"`` or ``"escalate"``. ``checkpoint`` is stored with the park
        as :meth:`save_message_checkpoint` stores it. Raises ValueError for a question the coordinator
        would refuse, TypeError for a bad ``name``, LeaseLostError when the message's lease is gone.
        """
        return await self._serve._ask_person(self._run, question, choices, deadline_seconds, on_deadline, name, checkpoint)

    async def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """A durable step: the first time ``name`` completes for this message, its result (JSON, at
        most 16 MiB; over 48 KiB it is uploaded to the coordinator's R2 first and read back over
        HTTP on replay) is stored under the message's token; on every later attempt, here or on another
        machine, ``step`` returns the stored result without calling ``fn`` (sync or async). Run the
        handler from the top on each attempt: recorded steps return at once, so an expensive call
        is paid once. A step whose ``fn`` raises records nothing. Returns the value the coordinator
        holds (as JSON round-trips it: tuples come back as lists). Raises LeaseLostError when the
        message's lease is gone, TypeError when ``name`` is an effect's or the result is not JSON,
        ValueError when its JSON is over 16 MiB (nothing is recorded or uploaded then).
        """
        return await self._serve._step(self._run, name, fn)

    async def effect(self, name: str, fn: Callable[[Effect], Any], on_unknown: str = "ask") -> Any:
        """A side effect: records its intent before ``fn`` runs and its outcome after, and hands
        ``fn`` (sync or async) an :class:`Effect` whose ``key`` is the same on every attempt and
        different in every account: pass it to the external API as its idempotency key. ``fn`` may
        not ``ask`` (refused with TypeError: the question could never be answered). An outcome already
        recorded is returned without running ``fn``; a second call of ``name`` while the first runs
        (``asyncio.gather``) gets the first one's outcome, and one after an outcome that was never
        recorded in this attempt is refused (``CoordinatorError``, code ``effect_in_progress``)
        without running ``fn``. If an earlier attempt recorded the intent but
        no outcome (it died, or ``fn`` raised), nobody knows whether the effect happened:
        ``on_unknown="retry"`` runs it again under the same key (for APIs that honour it); ``"ask"``
        (the default) parks the message as "outcome unknown: step NAME" until a person answers
        ``baton resume AGENT ID --done`` or ``--redo`` (here it raises OutcomeUnknownError; let it
        fail the attempt). An effect is never run twice silently.
        """
        return await self._serve._effect(self._run, name, fn, on_unknown)

    async def heartbeat(self, details: Any = None) -> Optional[float]:
        """Tells the coordinator the run is alive: with the agent's heartbeat timeout, its deadline
        moves that far from now (never past the run timeout); ``details`` (JSON) are kept as its
        progress. Returns the run's deadline (server ms, None when it has none)."""
        return await self._serve._beat(self._run, details)


Handler = Callable[[Message, MessageContext], Awaitable[Any]]


class ServeHandle:
    """A running serve: ``status``, ``await stop()``, and ``done`` (awaitable)."""

    def __init__(self, serve: "_Serve") -> None:
        self._serve = serve

    @property
    def status(self) -> dict[str, Any]:
        """{"kind": "connecting" | "standby" | "holder" | "lapsed" | "reconnecting", ...}"""
        return dict(self._serve.status)

    async def stop(self) -> None:
        """Cancels the running handler and waits for it, releases the lease (a standby takes over
        at once), and closes. Safe to call more than once."""
        await self._serve.stop()

    @property
    def done(self) -> "asyncio.Future[None]":
        """Resolves after stop(); raises CoordinatorError when the coordinator refuses for good
        (wrong token, bad agent name): then nothing more is tried."""
        return self._serve.done


def _backoff(attempt: int, was_holder: bool) -> float:
    cap = 4.0 if was_holder else 15.0
    return min((1 + random.random()) * 0.25 * (2 ** min(attempt, 16)), cap)


def _truncate_utf8(text: str, limit: int) -> str:
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", errors="ignore")


def _kind_name(kind: Any) -> str:
    return {"step": "a step", "effect": "an effect", "answer": "a person's answer"}.get(kind, repr(kind))


def _check_step_name(name: Any) -> None:
    if not isinstance(name, str) or step_name_pattern().fullmatch(name) is None:
        raise TypeError(f"step names are 1-{STEP_NAME_CHARS} letters, digits, '.', '_', ':' or '-', got {name!r}")


async def _call_maybe_async(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _json_bytes(value: Any, what: str) -> bytes:
    """``value`` as compact UTF-8 JSON, as JSON.stringify writes it; TypeError when it is not JSON."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} must be JSON: {err}") from None


def _error_text(exc: BaseException) -> str:
    """A fail frame's reason: the error's text, cut to LIMITS.failReasonChars (UTF-8 bytes bound UTF-16 units)."""
    return _truncate_utf8(str(exc) or type(exc).__name__, FAIL_REASON_CHARS)


class _Serve:
    def __init__(self, agent: str, handler: Handler, url: str, token: str, machine: str, runner_id: Optional[str],
                 on_status: Optional[Callable[[dict[str, Any]], None]], on_event: Optional[Callable[[dict[str, Any]], None]],
                 concurrency: int = 1, priority: int = 0) -> None:
        self.agent = agent
        self.handler = handler
        self.concurrency = concurrency
        self.priority = priority
        self.url = url.rstrip("/")
        self.token = token
        self.machine = machine
        self.runner_id = runner_id or str(uuid.uuid4())
        self.on_status = on_status
        self.on_event = on_event
        self.status: dict[str, Any] = {"kind": "connecting"}
        self.ttl = FALLBACK_TTL
        self.lease = LeaseClock(FALLBACK_TTL)  # the serve lease
        self.link = LeaseClock(FALLBACK_TTL)   # the connection itself
        self.view = "connecting"
        self.fence = -1
        self.position = 0
        self.checkpoint: Any = None
        self.ws: Optional[Socket] = None
        self.held_fence: Optional[int] = None
        self.lost_holding = False
        self.pings: collections.deque[float] = collections.deque()
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.req_counter = 0
        self.queue: collections.deque[dict[str, Any]] = collections.deque()
        #: Runs whose handler has not returned yet, by (message id, token).
        self.running: dict[tuple[int, Optional[int]], _Run] = {}
        #: Every message task (its handler, then its reply or fail) -> (message id, token): one per slot.
        self.handles: dict[asyncio.Task[Any], tuple[int, Optional[int]]] = {}
        self.replied: set[tuple[int, Optional[int]]] = set()
        self.deadline: Optional[asyncio.TimerHandle] = None
        self.drop_reason: Optional[str] = None
        self.reconnect_now = False
        self.heard_lease = False
        self.claim_sent_at = 0.0
        self.beat: Optional[asyncio.Task[None]] = None
        self.failures = 0
        self.stopping = False
        self.stop_task: Optional[asyncio.Task[None]] = None
        loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = loop.create_future()
        self.main: asyncio.Task[None] = loop.create_task(self._run())

    # -- reporting -------------------------------------------------------------------------------

    def _event(self, **event: Any) -> None:
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

    def _view_status(self) -> dict[str, Any]:
        if self.view == "holder":
            return {"kind": "holder", "fence": self.fence}
        if self.view == "standby":
            return {"kind": "standby", "position": self.position, "fence": self.fence}
        if self.view == "lapsed":
            return {"kind": "lapsed", "fence": self.fence}
        return {"kind": "connecting"}

    # -- connections -----------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._main()
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # refused for good (bad token, bad name), or a bug
            self.stopping = True
            await self._stop_runs(LeaseLostError(f"serving ended: {err}", "stopped"))
            if isinstance(err, BatonError):  # a refusal in one line, without the internals that met it
                err.__suppress_context__ = True
                err = err.with_traceback(None)
            if not self.done.done():
                self.done.set_exception(err)

    async def _main(self) -> None:
        ws_url = self.url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
        path = f"/agents/{urllib.parse.quote(self.agent, safe='')}/serve?machine={urllib.parse.quote(self.machine, safe='')}"
        while not self.stopping:
            dialed_at = now()
            reason = "the connection closed"
            try:
                ws = await open_socket(ws_url + path, self.token, open_timeout=10, max_size=1 << 22)
            except DIAL_ERRORS as err:
                reason = await self._probe(err)
            else:
                try:
                    reason = await self._connection(ws, dialed_at)
                finally:
                    await self._detach(ws)
            if self.stopping:
                break
            if self.reconnect_now:
                self.reconnect_now = False
                self.failures = 0
                delay = 0.0
            else:
                delay = _backoff(self.failures, self.lost_holding)
                self.failures += 1
            self._report({"kind": "reconnecting", "attempt": self.failures, "delay_ms": round(delay * 1000), "reason": reason})
            await asyncio.sleep(delay)

    async def _probe(self, err: BaseException) -> str:
        """Asks over plain HTTP why the WebSocket failed; raises for refusals retrying cannot fix."""
        try:
            # The serve path itself: 426 when only the upgrade went missing, 403 for a token without the serve scope.
            await arequest_json(self.url, self.token, "GET", f"/agents/{urllib.parse.quote(self.agent, safe='')}/serve", timeout=10)
            return f"the WebSocket upgrade failed although plain HTTP works ({err})"
        except CoordinatorError as refusal:
            if refusal.code == "upgrade_required":
                return f"the WebSocket upgrade failed although plain HTTP works ({err})"
            if 400 <= refusal.status < 500 and refusal.status not in (408, 429):
                raise
            return str(refusal)
        except UnreachableError as unreachable:
            return unreachable.reason

    async def _connection(self, ws: Socket, dialed_at: float) -> str:
        self.ws = ws
        self.drop_reason = None
        self.pings.clear()
        self.held_fence = None
        self.lease.reset(self.ttl)
        self.lease.confirmed(dialed_at, now())
        self.link.reset(self.ttl)
        self.link.confirmed(dialed_at, now())
        self.link.hold(now())
        self.view = "connecting"
        self.heard_lease = False
        self.claim_sent_at = now()
        await self._send(self._claim())
        self._report(self._view_status())
        self._restart_heartbeat(ws)
        closed = "the connection closed"
        try:
            async for raw in ws:
                if self.drop_reason is not None:
                    break
                if not isinstance(raw, str):
                    continue
                self.failures = 0
                self._on_text(raw)
                if self.drop_reason is not None:
                    break
        except SocketClosed:
            pass
        finally:
            if self.beat is not None:
                self.beat.cancel()
                self.beat = None
        if ws.close_code is not None and ws.close_code != 1000:
            closed += f" (code {ws.close_code}{': ' + ws.close_reason if ws.close_reason else ''})"
        return self.drop_reason or closed

    def _claim(self) -> dict[str, Any]:
        """The claim frame; concurrency 1 and priority 0 are the coordinator's defaults and are left out."""
        claim: dict[str, Any] = {"type": "serve_lease", "op": "claim", "runner_id": self.runner_id}
        if self.concurrency != 1:
            claim["concurrency"] = self.concurrency
        if self.priority != 0:
            claim["priority"] = self.priority
        return claim

    def _restart_heartbeat(self, ws: Socket) -> None:
        """(Re)starts the heartbeat at a third of the current TTL (the welcome frame sets it)."""
        if self.beat is not None:
            self.beat.cancel()
        self.beat = asyncio.get_running_loop().create_task(self._heartbeat(ws))

    async def _detach(self, ws: Socket) -> None:
        if self.held_fence is not None:
            self.lost_holding = True
        self.held_fence = None
        self.ws = None
        self._clear_deadline()
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("connection closed"))
        self.pending.clear()
        await self._stop_runs(LeaseLostError("the connection closed", "lapsed"))
        self.lease.reset(self.ttl)
        self.view = "connecting"
        await ws.close(1.5)

    def _drop(self, reason: str) -> None:
        """Ends the current connection now; the main loop dials again."""
        self.drop_reason = reason
        ws = self.ws
        if ws is not None:
            ws.abort()  # no close handshake: the socket may be a dead one

    async def _send(self, frame: dict[str, Any]) -> bool:
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

    def _next_req(self) -> str:
        self.req_counter += 1
        return f"r{self.req_counter}"

    async def _request(self, frame: dict[str, Any], timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
        req = frame["req"]
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[req] = fut
        try:
            if not await self._send(frame):
                raise ConnectionError("not connected")
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise ConnectionError(f"no answer to {frame['type']} within {timeout:.0f} s") from None
        finally:
            self.pending.pop(req, None)

    async def _heartbeat(self, ws: Socket) -> None:
        next_at = now()
        while True:
            next_at += max(0.001, self.ttl / 3)
            await asyncio.sleep(max(0.0, next_at - now()))
            if self.ws is not ws or not ws.open:
                return
            t = now()
            if self.pings and t - self.pings[0] > self.ttl:
                self._drop("heartbeats went unanswered")
                return
            self.pings.append(t)
            try:
                await ws.send(PING_TEXT if self.held_fence is None else json.dumps({"type": "ping", "fence": self.held_fence}))
            except SocketClosed:
                return

    # -- frames ----------------------------------------------------------------------------------

    def _on_text(self, text: str) -> None:
        if text == PONG_TEXT:
            return self._on_pong()
        try:
            frame = json.loads(text)
        except ValueError:
            return
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return
        # As the TypeScript client: a frame that does not match the shared schema is dropped, never half-trusted.
        if not valid_server_frame(frame):
            return
        kind = frame["type"]
        if kind == "pong":
            return self._on_pong()
        if kind == "welcome":
            ttl_ms = frame.get("heartbeat_ttl_ms")
            if isinstance(ttl_ms, (int, float)) and ttl_ms > 0:
                self.ttl = ttl_ms / 1000
                self.link.set_ttl(self.ttl)
                self.lease.set_ttl(self.ttl)
                if self.ws is not None:
                    self._restart_heartbeat(self.ws)
                self._after_lease_change()
            return
        if kind in ("result", "error"):
            req = frame.get("req")
            fut = self.pending.pop(req, None) if isinstance(req, str) else None
            if fut is not None and not fut.done():
                fut.set_result(frame)
            elif kind == "error" and req is None:
                self._event(type="coordinator_error", code=frame.get("code"), message=frame.get("message"))
            return
        if kind == "serve_lease":
            return self._on_lease(frame)
        if kind == "message":
            if isinstance(frame.get("id"), int) and isinstance(frame.get("text"), str) and frame.get("run") is True:
                self._enqueue(frame)
            return
        if kind == "revoked":
            self._revoke(frame.get("id"), frame.get("token"), str(frame.get("reason")))
        if kind == "cancel":
            self._cancel(frame.get("id"), frame.get("token"), str(frame.get("by")), frame.get("reason"))

    def _on_pong(self) -> None:
        if not self.pings:
            return
        sent = self.pings.popleft()
        t = now()
        self.link.confirmed(sent, t)
        self.lease.confirmed(sent, t)
        self._after_lease_change()

    def _on_lease(self, frame: dict[str, Any]) -> None:
        if not isinstance(frame.get("held"), bool) or not isinstance(frame.get("fence"), int):
            return
        held = frame["held"]
        self.held_fence = frame["fence"] if held else None
        self.lost_holding = False
        if not self.heard_lease:
            self.heard_lease = True
            self.lease.confirmed(self.claim_sent_at, now())
        if self.view == "lapsed":
            return
        ttl_ms = frame.get("ttl_ms")
        if isinstance(ttl_ms, (int, float)) and ttl_ms > 0:
            self.lease.set_ttl(ttl_ms / 1000)
        was_holder = self.view == "holder"
        self.fence = frame["fence"]
        self.position = frame.get("position", 0)
        if held:
            self.lease.hold(now())
            self.view = "lapsed" if self.lease.lapsed else "holder"
            if not was_holder:
                self.checkpoint = frame.get("checkpoint")
                self._event(type="held", fence=self.fence)
        else:
            self.lease.drop()
            self.view = "standby"
            # messages under their own tokens run on until the coordinator revokes them
        self._after_lease_change()

    def _after_lease_change(self) -> None:
        t = now()
        self.lease.valid(t)
        if self.lease.lapsed and self.view in ("holder", "standby"):
            self.view = "lapsed"
        if self.view == "lapsed":
            return self._demote("the lease lapsed on the local clock")
        if not self.link.valid(t):
            return self._demote("the connection could not be proven alive in time")
        self._report(self._view_status())
        self._clear_deadline()
        deadlines = [d for d in (self.lease.deadline, self.link.deadline) if d is not None]
        if deadlines and self.ws is not None:
            self.deadline = asyncio.get_running_loop().call_later(max(0.0, min(deadlines) - t) + 0.001, self._after_lease_change)

    def _demote(self, reason: str) -> None:
        """The local clock says the lease is gone: cancel the handler, post nothing, rejoin."""
        self._clear_deadline()
        self._report({"kind": "lapsed", "fence": self.fence})
        self._event(type="demoted", reason=reason, fence=self.fence)
        err = LeaseLostError(reason, "lapsed")
        self.queue.clear()
        for run in list(self.running.values()):
            self._abort(run, err)
        self.reconnect_now = True
        self._drop(reason)

    def _clear_deadline(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        self.deadline = None

    # -- the work loop ---------------------------------------------------------------------------

    def _may_act(self) -> bool:
        """Holding the serve lease, valid by this process's clock (fenced writes)."""
        ok = self.ws is not None and self.lease.may_act(now()) and self.view == "holder"
        if self.lease.lapsed and self.view != "lapsed" and self.view != "connecting":
            self.view = "lapsed"
            self._demote("the lease lapsed on the local clock")
        return ok

    def _may_run(self) -> bool:
        """The connection is alive by this process's clock (writes under a message token)."""
        return self.ws is not None and self.ws.open and self.link.may_act(now()) and self.drop_reason is None

    def _enqueue(self, frame: dict[str, Any]) -> None:
        key = (frame["id"], frame.get("token"))
        if any((m["id"], m.get("token")) == key for m in self.queue) or any((r.id, r.token) == key for r in self.running.values()):
            return
        self.queue.append(frame)
        self._pump()

    def _pump(self) -> None:
        # A slot stays taken until its message's reply (or fail) is answered: with one slot,
        # messages run strictly one after the other, in order.
        # A frame for a (message, token) already in flight waits for that run to finish (it is then
        # answered with an ack if that run's reply was stored), so one token never runs twice at once.
        while not self.stopping and len(self.handles) < self.concurrency:
            busy = set(self.handles.values())
            frame = next((m for m in self.queue if (m["id"], m.get("token")) not in busy), None)
            if frame is None:
                return
            self.queue.remove(frame)
            task = asyncio.get_running_loop().create_task(self._handle(frame))
            self.handles[task] = (frame["id"], frame.get("token"))

            def finished(t: asyncio.Task[Any]) -> None:
                self.handles.pop(t, None)
                if not t.cancelled() and t.exception() is not None:
                    self._event(type="internal_error", error=repr(t.exception()))
                self._pump()

            task.add_done_callback(finished)

    def _revoke(self, mid: Any, token: Any, reason: str) -> None:
        self.queue = collections.deque(m for m in self.queue if not (m["id"] == mid and m.get("token") == token))
        run = self.running.get((mid, token)) if isinstance(mid, int) else None
        if run is None:
            return
        self._event(type="revoked", id=mid, token=token, reason=reason)
        self._abort(run, LeaseLostError(f"the coordinator took message {mid} back ({reason})", "revoked"))

    def _cancel(self, mid: Any, token: Any, by: str, reason: Any) -> None:
        """A person cancelled the message: its handler's task is cancelled, with the reason as data."""
        self.queue = collections.deque(m for m in self.queue if not (m["id"] == mid and m.get("token") == token))
        run = self.running.get((mid, token)) if isinstance(mid, int) else None
        if run is None:
            return
        why = reason if isinstance(reason, str) else None
        self._event(type="cancelled", id=mid, token=token, by=by, reason=why)
        self._abort(run, MessageCancelledError(mid, by, why))

    def _abort(self, run: _Run, reason: LeaseLostError) -> None:
        if run.timer is not None:
            run.timer.cancel()
        if run.beat_timer is not None:
            run.beat_timer.cancel()
        if run.lost is None:
            run.lost = reason
            run.lost_event.set()
        if run.task is not None and not run.task.done():
            run.task.cancel()

    async def _stop_runs(self, reason: LeaseLostError) -> None:
        self.queue.clear()
        for run in list(self.running.values()):
            self._abort(run, reason)
        if self.handles:
            await asyncio.gather(*list(self.handles), return_exceptions=True)

    async def _handle(self, frame: dict[str, Any]) -> None:
        token = frame.get("token")
        if not isinstance(token, int):
            self._event(type="coordinator_error", code="bad_frame",
                        message=f"message {frame['id']} came without a lease token; this coordinator is too old for this client")
            return
        if not self._may_run():
            return
        run = _Run(frame)
        fence = self.fence if self.view == "holder" else -1
        if (run.id, token) in self.replied:
            await self._post({"type": "ack", "id": run.id, "token": token, "req": self._next_req()}, run, False)
            return
        message = Message(id=run.id, text=frame["text"], attempt=int(frame.get("attempt", 1)),
                          created_at=float(frame.get("created_at", 0)), token=token,
                          resume_input=frame.get("resume_input"), group=frame.get("group"), run_key=frame.get("run_key"),
                          heartbeat_timeout_ms=frame.get("heartbeat_timeout_ms"), resume_choice=frame.get("resume_choice"),
                          traceparent=frame.get("traceparent"))
        ctx = MessageContext(self, run, fence, self.checkpoint)
        self.running[(run.id, token)] = run
        loop = asyncio.get_running_loop()
        timeout_ms = frame.get("run_timeout_ms")
        if isinstance(timeout_ms, (int, float)) and timeout_ms > 0:
            # the coordinator's deadline started before this frame arrived: ours is never later
            run.timer = loop.call_later(timeout_ms / 1000, lambda: self._abort(
                run, LeaseLostError(f"message {run.id} ran past its run timeout", "lapsed")))
        self._arm_heartbeat_clock(run, now())
        run.task = loop.create_task(self._call(message, ctx))
        try:
            try:
                reply = await asyncio.shield(run.task)
            except asyncio.CancelledError:
                if run.lost is None:  # this loop itself is being cancelled
                    run.task.cancel()
                    raise
                return  # lost: post nothing
            except Exception as exc:  # the handler raised: a failed attempt, never a reply
                if run.lost is not None or run.parked:
                    return
                await self._fail(run, exc)
                return
        finally:
            if run.timer is not None:
                run.timer.cancel()
            if run.beat_timer is not None:
                run.beat_timer.cancel()
            if self.running.get((run.id, token)) is run:
                del self.running[(run.id, token)]
        if run.lost is not None or run.parked:
            if run.lost is not None:
                self._event(type="suppressed", id=run.id, token=token, reason=str(run.lost))
            return
        try:
            body = await self._reply_body(run, "" if reply is None else str(reply))
        except Exception as exc:  # too large, or the upload failed: a failed attempt, never a cut reply
            if run.lost is None:
                await self._fail(run, exc)
            return
        answer = await self._post({"type": "reply", "id": run.id, "token": token, "key": f"{run.id}:reply", **body,
                                   "req": self._next_req()}, run, False)
        if isinstance(answer, CoordinatorError) and answer.code == "question_open":
            # The run asked a person and finished anyway: it waits for the answer instead.
            try:
                await self._park(run, None, None)
            except Exception as exc:  # the lease went meanwhile: nothing more to do for this run
                self._event(type="handler_failed", id=run.id, error=exc)
            return
        if isinstance(answer, CoordinatorError) and answer.code == "outcome_unknown":
            # An effect of this attempt began and never recorded its outcome: the attempt fails, and the message waits for a person.
            await self._post({"type": "fail", "id": run.id, "token": token, "reason": _error_text(answer),
                              "req": self._next_req()}, run, False)
            return
        if answer == "ok":
            self.replied.add((run.id, token))
            self._event(type="ran", id=run.id, attempt=message.attempt, fence=fence, token=token)

    async def _call(self, message: Message, ctx: MessageContext) -> Any:
        ref = ctx._run.frame.get("checkpoint_blob")
        if isinstance(ref, dict):  # a checkpoint too large to ride inline: read it before the handler runs
            try:
                ctx.message_checkpoint = await self._read_json(ctx._run, ref, "the message's checkpoint")
            except Exception as err:
                raise BatonError(f"the message's checkpoint could not be read: {err}") from err
        return await self.handler(message, ctx)

    async def _fail(self, run: _Run, exc: BaseException) -> None:
        """Posts ``fail`` for a failed attempt (the coordinator retries it after a backoff, or parks it for a person)."""
        self._event(type="handler_failed", id=run.id, error=str(exc))
        await self._post({"type": "fail", "id": run.id, "token": run.token, "reason": _error_text(exc), "req": self._next_req()},
                         run, False)

    async def _reply_body(self, run: _Run, text: str) -> dict[str, Any]:
        """A reply rides inline up to REPLY_BYTES; a larger one is uploaded first (R2), and one over BLOB_BYTES raises ValueError."""
        raw = text.encode("utf-8")
        if len(raw) <= REPLY_BYTES:
            return {"text": text}
        return {"text": "", "blob": await self._upload(run, raw, "a reply")}

    async def _post(self, frame: dict[str, Any], run: _Run, fenced: bool) -> Any:
        """"ok", "stale" (not sent: the lease is gone), or an exception describing the refusal."""
        answer = await self._exchange(frame, run, fenced)
        return "ok" if isinstance(answer, dict) else answer

    async def _exchange(self, frame: dict[str, Any], run: _Run, fenced: bool) -> Any:
        """One write and its answer: the result frame, "stale" (not sent: the lease is gone), or an
        exception describing the refusal (after a refusal that means the run lost the message, the
        run is aborted first)."""
        if run.lost is not None or not (self._may_act() if fenced else self._may_run()):
            if run.lost is None:
                self._abort(run, LeaseLostError("the lease is gone by the local clock", "lapsed"))
            return "stale"
        try:
            answer = await self._request(frame)
        except ConnectionError as err:
            self._event(type="unconfirmed", frame=frame["type"], reason=str(err))
            return LeaseLostError(f"{frame['type']} not confirmed: {err}", "lapsed")
        if answer.get("type") == "result":
            return answer
        code = str(answer.get("code"))
        self._event(type="refused", frame=frame["type"], code=code, message=answer.get("message"))
        lost = LeaseLostError(f"the coordinator refused the {frame['type']}: {code}", code)
        if code in MESSAGE_GONE or code in LEASE_GONE:
            self._abort(run, lost)
            return lost
        return CoordinatorError(f"{frame['type']} refused: {answer.get('message')}", 0, code, answer)

    async def _save_checkpoint(self, run: _Run, fence: int, value: Any) -> None:
        """The agent's checkpoint, under the serve fence: inline only, at most CHECKPOINT_BYTES of JSON."""
        self._throw_if_stopped(run)
        if len(_json_bytes(value, "a checkpoint")) > CHECKPOINT_BYTES:
            raise ValueError(f"a checkpoint is JSON of at most {CHECKPOINT_BYTES} bytes")
        await self._store_checkpoint({"type": "checkpoint", "fence": fence, "value": value}, run, True)
        self.checkpoint = value

    async def _save_message_checkpoint(self, run: _Run, value: Any) -> None:
        self._throw_if_stopped(run)
        body = await self._checkpoint_body(run, value)
        await self._store_checkpoint({"type": "checkpoint", "id": run.id, "token": run.token, **body}, run, False)

    async def _store_checkpoint(self, frame: dict[str, Any], run: _Run, fenced: bool) -> None:
        answer = await self._post({**frame, "req": self._next_req()}, run, fenced)
        if answer == "stale":
            raise run.lost or LeaseLostError("the lease was lost before the checkpoint was stored", "lapsed")
        if isinstance(answer, BaseException):
            raise answer

    async def _checkpoint_body(self, run: _Run, value: Any) -> dict[str, Any]:
        """A message checkpoint rides inline up to CHECKPOINT_BYTES of JSON; a larger one is uploaded first (R2)."""
        raw = _json_bytes(value, "a checkpoint")
        return {"value": json.loads(raw)} if len(raw) <= CHECKPOINT_BYTES else {"blob": await self._upload(run, raw, "a checkpoint")}

    async def _park(self, run: _Run, checkpoint: Any, deadline_seconds: Optional[int],
                    question: Optional[dict[str, Any]] = None) -> None:
        frame: dict[str, Any] = {"type": "park", "id": run.id, "token": run.token}
        if checkpoint is not None:
            frame.update(await self._checkpoint_body(run, checkpoint))
        frame["req"] = self._next_req()
        if deadline_seconds is not None:
            frame["deadline_seconds"] = int(deadline_seconds)
        if question is not None:
            frame["question"] = question
        answer = await self._post(frame, run, False)
        if answer == "stale":
            raise run.lost or LeaseLostError("the message's lease was lost before it was parked", "lapsed")
        if isinstance(answer, BaseException):
            raise answer
        run.parked = True
        if run.timer is not None:
            run.timer.cancel()
        self._event(type="parked", id=run.id, token=run.token)

    async def _ask_person(self, run: _Run, text: str, choices: Optional[Sequence[str]], deadline_seconds: Optional[int],
                          on_deadline: Optional[str], name: Optional[str], checkpoint: Any) -> PersonAnswer:
        """The answer kept in the journal when this ask was answered; else the message parks with the question and this run ends."""
        if name is None:
            run.asks += 1
            name = f"ask:{run.asks}"
        _check_step_name(name)
        question: dict[str, Any] = {"text": text, "step": name}
        if choices is not None:
            if isinstance(choices, str) or not all(isinstance(c, str) for c in choices):
                raise ValueError(f"choices must be a list of strings, not {choices!r}")
            question["choices"] = list(choices)
        if on_deadline is not None:
            if on_deadline not in ON_DEADLINE:
                raise ValueError(f"on_deadline is one of {', '.join(ON_DEADLINE)}, not {on_deadline!r}")
            question["on_deadline"] = on_deadline
        if not valid(question, client_field("park", "question")):
            raise ValueError("a question is a text of 1-2000 characters with at most 10 choices of 1-64 characters each, "
                             f"not {question!r}")
        if deadline_seconds is not None and (isinstance(deadline_seconds, bool) or not isinstance(deadline_seconds, int)
                                             or not valid(deadline_seconds, client_field("park", "deadline_seconds"))):
            raise ValueError(f"deadline_seconds is a whole number of seconds from 1 to 2592000, not {deadline_seconds!r}")
        if run.effects_running:
            # Parking here would leave the message waiting on the effect's outcome, where no answer can reach it.
            raise TypeError(f'ask inside effect "{next(iter(run.effects_running))}": a question asked inside an effect '
                            "could never be answered; ask before the effect or after it")
        answered = run.journal.get(name)
        # Only the coordinator's answer path writes a record of kind answer: a run's own step under this name is no answer.
        if answered is not None and answered.get("kind") != "answer":
            raise TypeError(f'"{name}" is recorded as {_kind_name(answered.get("kind"))}, '
                            "not as a person's answer; an ask needs a name of its own")
        if answered is not None and answered.get("status") == "done":
            return PersonAnswer.from_value(await self._value_of(run, answered), name)
        await self._park(run, checkpoint, deadline_seconds, question)
        raise WaitingForPersonError(run.id, text)

    # -- the step journal ------------------------------------------------------------------------

    def _arm_heartbeat_clock(self, run: _Run, sent_at: float) -> None:
        """With a heartbeat timeout, the coordinator takes the run back once none arrived within it;
        this clock cancels the run first: it runs from ``sent_at`` of the last confirmed heartbeat
        (or the hand-out), which is never later than the coordinator's own."""
        timeout_ms = run.frame.get("heartbeat_timeout_ms")
        if not isinstance(timeout_ms, (int, float)) or timeout_ms <= 0 or run.lost is not None:
            return
        if run.beat_timer is not None:
            run.beat_timer.cancel()

        def lapse() -> None:
            self._event(type="revoked", id=run.id, token=run.token, reason="no heartbeat within the heartbeat timeout by the local clock")
            self._abort(run, LeaseLostError(f"message {run.id} sent no heartbeat within {timeout_ms:g} ms", "lapsed"))

        run.beat_timer = asyncio.get_running_loop().call_later(max(0.0, sent_at + timeout_ms / 1000 - now()), lapse)

    def _throw_if_stopped(self, run: _Run) -> None:
        if run.lost is not None:
            raise run.lost

    async def _ask(self, frame: dict[str, Any], run: _Run) -> dict[str, Any]:
        """Sends a write under the message's token and returns its result frame; raises what a refusal means."""
        self._throw_if_stopped(run)
        answer = await self._exchange(frame, run, False)
        if answer == "stale":
            raise run.lost or LeaseLostError("the connection is lost; the message's lease cannot be proven", "lapsed")
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def _beat(self, run: _Run, details: Any) -> Optional[float]:
        sent_at = now()
        frame: dict[str, Any] = {"type": "heartbeat", "id": run.id, "token": run.token, "req": self._next_req()}
        if details is not None:
            frame["details"] = details
        answer = await self._ask(frame, run)
        if answer.get("op") != "heartbeat":
            raise CoordinatorError("heartbeat answered with another result", 0, None, answer)
        self._arm_heartbeat_clock(run, sent_at)
        return answer.get("expires_at")

    async def _once(self, run: _Run, name: str, body: Callable[[], Awaitable[Any]]) -> Any:
        """One call per name at a time in an attempt: a second, concurrent call (asyncio.gather, a
        retry wrapper) gets the first one's result instead of writing again. The first caller awaits
        the call's task itself, so cancelling the handler cancels it; later callers only wait."""
        _check_step_name(name)
        running = run.inflight.get(name)
        if running is not None:
            return await asyncio.shield(running)
        task = asyncio.ensure_future(body())
        run.inflight[name] = task
        task.add_done_callback(lambda _: run.inflight.pop(name, None))
        return await task

    async def _step(self, run: _Run, name: str, fn: Callable[[], Any]) -> Any:
        async def body() -> Any:
            done = run.journal.get(name)
            if done is not None and done.get("kind") != "step":
                raise TypeError(f'"{name}" is recorded as {_kind_name(done.get("kind"))}; a step needs a name of its own')
            if done is not None and done.get("status") == "done":
                return await self._value_of(run, done)
            self._throw_if_stopped(run)
            value = await _call_maybe_async(fn)
            return (await self._record(run, name, "step", "done", value, None))[1]

        return await self._once(run, name, body)

    async def _effect(self, run: _Run, name: str, fn: Callable[[Effect], Any], on_unknown: str) -> Any:
        if on_unknown not in ON_UNKNOWN:
            raise ValueError(f'on_unknown is "ask" or "retry", not {on_unknown!r}')
        return await self._once(run, name, lambda: self._run_effect(run, name, fn, on_unknown))

    async def _run_effect(self, run: _Run, name: str, fn: Callable[[Effect], Any], on_unknown: str) -> Any:
        known = run.journal.get(name)
        if known is not None and known.get("kind") != "effect":
            raise TypeError(f'"{name}" is recorded as {_kind_name(known.get("kind"))}; an effect needs a name of its own')
        if known is not None and known.get("status") == "done":
            return await self._value_of(run, known)
        self._throw_if_stopped(run)
        # The intent is durable before the effect runs, so a successor knows it may have happened.
        status, value = await self._record(run, name, "effect", "intent", None, on_unknown)
        if status == "done":  # recorded already (a person answered --done meanwhile): its outcome stands
            return value
        if known is not None and known.get("status") == "intent" and on_unknown == "ask":
            # An earlier attempt began it; with "ask", failing this attempt parks the message for a person.
            raise OutcomeUnknownError(
                f"outcome unknown: step {name}; a person decides: baton resume {self.agent} {run.id} --done | --redo", name)
        # The coordinator makes the key (it knows the account); one that hands out none is too old for this client.
        key = run.journal[name].get("idempotency_key")
        if not isinstance(key, str):
            raise CoordinatorError(f'effect "{name}": this coordinator hands out no idempotency key; it is too old for this client', 0, None, None)
        run.effects_running.add(name)
        try:
            value = await _call_maybe_async(fn, Effect(key, run))
        finally:
            run.effects_running.discard(name)
        return (await self._record(run, name, "effect", "done", value, on_unknown))[1]

    async def _record(self, run: _Run, name: str, kind: str, phase: str, value: Any,
                      on_unknown: Optional[str]) -> tuple[str, Any]:
        """Writes one journal record under the message's token; returns what the journal holds for it
        (its status, and its value when done). A result over STEP_VALUE_BYTES of JSON is uploaded as
        a blob first and the write commits it."""
        frame: dict[str, Any] = {"type": "step", "id": run.id, "token": run.token, "name": name, "kind": kind, "phase": phase}
        uploaded: Optional[tuple[str, Any]] = None
        if phase == "done":
            raw = _json_bytes(value, "a step's result")
            if len(raw) <= STEP_VALUE_BYTES:
                frame["value"] = json.loads(raw)
            else:
                blob = await self._upload(run, raw, "a step's result")
                uploaded = (blob, json.loads(raw))
                frame["blob"] = blob
        if on_unknown is not None:
            frame["on_unknown"] = on_unknown
        frame["req"] = self._next_req()
        answer = await self._ask(frame, run)
        if answer.get("op") != "step":
            raise CoordinatorError("step answered with another result", 0, None, answer)
        status = answer.get("status")
        entry: dict[str, Any] = {"name": name, "kind": kind, "status": status, "value": answer.get("value"),
                                 "on_unknown": on_unknown, "attempt": run.frame.get("attempt", 1)}
        if isinstance(answer.get("idempotency_key"), str):
            entry["idempotency_key"] = answer["idempotency_key"]
        if isinstance(answer.get("blob"), dict):
            entry["blob"] = answer["blob"]
            if uploaded is not None and answer["blob"].get("id") == uploaded[0]:
                run.blob_values[uploaded[0]] = uploaded[1]  # the bytes just uploaded: no need to read them back
        run.journal[name] = entry
        return status, (await self._value_of(run, entry) if status == "done" else None)

    async def _upload(self, run: _Run, raw: bytes, what: str) -> str:
        """PUT /agents/{agent}/messages/{id}/blobs under the run's token and run key: the blob id a
        later write (step, checkpoint, park or reply) commits (client/run-journal.ts uploadBlob)."""
        if len(raw) > BLOB_BYTES:
            raise ValueError(f"{what} is at most {BLOB_BYTES} bytes, got {len(raw)}")
        run_key = run.frame.get("run_key")
        if not isinstance(run_key, str) or not isinstance(run.token, int):
            raise ValueError(f"{what} of {len(raw)} bytes needs a coordinator with large values (R2)")
        self._throw_if_stopped(run)
        path = f"/agents/{urllib.parse.quote(self.agent, safe='')}/messages/{run.id}/blobs"
        headers = {"x-baton-token": str(run.token), "x-baton-run-key": run_key}
        try:
            status, text = await arequest_bytes(self.url, self.token, "PUT", path, headers, raw, BLOB_TIMEOUT)
        except CoordinatorError as refusal:
            raise self._refused_blob(run, refusal) from None
        self._throw_if_stopped(run)
        try:
            staged = json.loads(text)
        except ValueError:
            staged = None
        blob = staged.get("blob") if isinstance(staged, dict) else None
        if status != 201 or not isinstance(blob, str) or staged.get("bytes") != len(raw):
            raise CoordinatorError(f"the coordinator answered the upload with HTTP {status} and no staged blob", status, None,
                                   staged if isinstance(staged, dict) else None)
        self._event(type="blob_uploaded", id=run.id, token=run.token, blob=blob, bytes=len(raw))
        return blob

    async def _value_of(self, run: _Run, entry: dict[str, Any]) -> Any:
        """A recorded result: inline, or read back from the coordinator's R2
        (GET /agents/{agent}/messages/{id}/blobs/{blob}, client/run-journal.ts downloadBlob)."""
        ref = entry.get("blob")
        if not isinstance(ref, dict):
            return entry.get("value")
        return await self._read_json(run, ref, f"step {entry.get('name')}'s result")

    async def _read_json(self, run: _Run, ref: dict[str, Any], what: str) -> Any:
        """The JSON value of blob ``ref`` ({id, bytes}) of this message, read back once per run."""
        blob = ref.get("id")
        if not isinstance(blob, str):
            raise CoordinatorError(f"{what} is a blob without an id", 0, None, ref)
        if blob in run.blob_values:
            return run.blob_values[blob]
        path = f"/agents/{urllib.parse.quote(self.agent, safe='')}/messages/{run.id}/blobs/{urllib.parse.quote(blob, safe='')}"
        _status, raw = await arequest_bytes(self.url, self.token, "GET", path, None, None, BLOB_TIMEOUT)
        if isinstance(ref.get("bytes"), int) and len(raw) != ref["bytes"]:
            raise CoordinatorError(f"blob {blob} of {what} is {len(raw)} bytes, not the {ref['bytes']} recorded", 0, None, ref)
        try:
            value = json.loads(raw.decode("utf-8"))
        except ValueError as err:
            raise CoordinatorError(f"blob {blob} of {what} is not JSON: {err}", 0, None, ref) from None
        run.blob_values[blob] = value
        return value

    def _refused_blob(self, run: _Run, refusal: CoordinatorError) -> BaseException:
        """An upload refused over HTTP means what the same refusal of a step frame means (_exchange)."""
        code = str(refusal.code)
        self._event(type="refused", frame="blob", code=code, message=refusal.details.get("message"))
        if code in MESSAGE_GONE or code in LEASE_GONE:
            lost = LeaseLostError(f"the coordinator refused the blob upload: {code}", code)
            self._abort(run, lost)
            return run.lost or lost
        return refusal

    # -- stopping --------------------------------------------------------------------------------

    async def stop(self) -> None:
        if self.stop_task is None:
            self.stop_task = asyncio.get_running_loop().create_task(self._shutdown())
        await asyncio.shield(self.stop_task)

    async def _shutdown(self) -> None:
        self.stopping = True
        await self._stop_runs(LeaseLostError("serving stopped", "stopped"))
        ws = self.ws
        if ws is not None and ws.open:
            try:
                if self.view == "holder":
                    self._event(type="releasing", fence=self.fence)
                answer = await self._request({"type": "serve_lease", "op": "release", "req": self._next_req()}, 2.0)
                if answer.get("type") == "result" and answer.get("released") is True:
                    self._event(type="released")
            except Exception:
                pass  # the coordinator notices the close instead
            await ws.close(1.5)
        if not self.main.done():
            self.main.cancel()
        try:
            await self.main
        except (asyncio.CancelledError, Exception):
            pass
        if not self.done.done():
            self.done.set_result(None)


def serve(agent: str, handler: Handler, *, url: str, token: str, machine: Optional[str] = None,
          runner_id: Optional[str] = None, on_status: Optional[Callable[[dict[str, Any]], None]] = None,
          on_event: Optional[Callable[[dict[str, Any]], None]] = None, concurrency: int = 1,
          priority: int = 0, tracing: bool = True) -> Serving:
    """Serves ``agent`` from this process: ``handle = await serve(...)`` starts and returns at once
    with a ServeHandle; ``async with serve(...) as handle:`` does the same and stops (releasing the
    lease) when the block ends; when the coordinator refuses for good meanwhile, the block is
    cancelled and the refusal raised from the ``async with``.

    ``handler(message, ctx)`` is awaited once per message this process must run, one at a time,
    in order (or up to ``concurrency`` at once); what it returns (``str()``-ed) is the reply, which
    acknowledges the message: over 32 KiB of UTF-8 it is uploaded to the coordinator's R2 first, and
    over 16 MiB it fails the attempt instead (it is never cut).
    ``concurrency`` (1..64, default 1) is how many messages this runner takes at once, each in its
    own task with its own cancellation, writes and ``fail``; in the agent's ``pool`` mode every
    serving runner takes messages up to its slots, in ``single`` mode only the holder does.
    ``priority`` (-1000..1000, default 0): the lease moves to a runner of higher priority once it
    has been connected for the coordinator's hysteresis period, when the holder runs no message. ``machine`` labels this process in presence (default: the host name).
    ``runner_id`` should stay the same across reconnects of one process (default: a random UUID).
    ``on_status`` gets every status change, ``on_event`` every event (held, demoted, ran,
    handler_failed, refused, revoked, suppressed, released, ...), both as dicts; one that raises is
    logged (logger ``baton``) and serving goes on.
    ``tracing`` (default True): with ``opentelemetry-api`` installed, each run is a span continuing
    its sender's trace (docs/guides/tracing.md); without the package nothing happens.
    Raises ValueError at once for a ``url`` that is not http(s) (in the CLI's words), a bad
    ``concurrency`` or ``priority``; a refused token or agent name ends serving with CoordinatorError.
    """
    slots, lowest, highest = LIMITS["runnerSlots"], LIMITS["priority"]["min"], LIMITS["priority"]["max"]
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= slots:
        raise ValueError(f"concurrency must be an integer from 1 to {slots}, not {concurrency!r}")
    if isinstance(priority, bool) or not isinstance(priority, int) or not lowest <= priority <= highest:
        raise ValueError(f"priority must be an integer from {lowest} to {highest}, not {priority!r}")
    url = checked_url(url)
    machine = machine or _socket.gethostname()
    if tracing:
        from ._tracing import trace_handler  # here, not at the top: it imports this module
        handler = trace_handler(handler, agent, machine)
    return Serving(lambda: ServeHandle(_Serve(agent, handler, url, token, machine, runner_id,
                                              on_status, on_event, concurrency, priority)))
