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

How it is built (as client/core in TypeScript, module for module): ``_journal_rules`` decides each
journal write and what its answer means, without I/O; ``_frame_journal`` is its shell for one run
(steps, effects, asks, parks, checkpoints, heartbeats); ``_run`` is one run (its cancellation,
timers, steps in flight, and how it ends); ``_work_loop`` hands messages to runs; ``_serve_core``
applies the coordinator's frames to the serve lease and the work loop; ``_run_blobs`` decides what
a refused upload means. None of them does I/O or reads the time: the socket (``_socket``, the
``_link.Link`` the core sends through), large values over HTTP (``_http_blobs``) and time
(``_system_clock``) are adapters that this module wires in, which is how ``baton.testing``, the
shared transcripts and the core's unit tests run the same core in memory.
"""

from __future__ import annotations

import asyncio
import socket as _socket
import uuid
from typing import Any, Callable, Optional

from ._frame_journal import Effect
from ._handler import Answerer, Message, PersonAnswer
from ._http import checked_url
from ._http_blobs import HttpBlobs
from ._run_context import Handler, MessageContext
from ._serve_core import ServeCore
from ._serving import Serving
from ._socket import Connection
from ._system_clock import SYSTEM_CLOCK
from ._wire import LIMITS
from .errors import BatonError

__all__ = ["Answerer", "Effect", "Handler", "Message", "MessageContext", "PersonAnswer", "ServeHandle", "serve"]


class ServeHandle:
    """A running serve: ``status``, ``await stop()``, and ``done`` (awaitable). It is the shell
    (client/serve.ts): it wires the socket to the core and runs both in one task group."""

    def __init__(self, core: ServeCore, conn: Connection) -> None:
        self._core = core
        self._conn = conn
        conn.listener = core
        loop = asyncio.get_running_loop()
        self._done: asyncio.Future[None] = loop.create_future()
        self._stopping: Optional[asyncio.Task[None]] = None
        self._main = loop.create_task(self._serve())

    @property
    def status(self) -> dict[str, Any]:
        """{"kind": "connecting" | "standby" | "holder" | "lapsed" | "reconnecting", ...}"""
        return dict(self._core.status)

    async def stop(self) -> None:
        """Cancels the running handler and waits for it, releases the lease (a standby takes over
        at once), and closes. Safe to call more than once."""
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._shutdown())
        await asyncio.shield(self._stopping)

    @property
    def done(self) -> "asyncio.Future[None]":
        """Resolves after stop(); raises CoordinatorError when the coordinator refuses for good
        (wrong token, bad agent name): then nothing more is tried."""
        return self._done

    async def _serve(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                self._core.attach(group)
                try:
                    await self._conn.run()
                except Exception as err:
                    self._conn.stopping = True
                    await self._core.stop(f"serving ended: {err}", release=False)
                    raise
        except BaseExceptionGroup as group:  # refused for good (bad token, bad name), or a bug
            err = group.exceptions[0] if len(group.exceptions) == 1 else group
            if isinstance(err, BatonError):  # a refusal in one line, without the internals that met it
                err.__suppress_context__ = True
                err = err.with_traceback(None)
            if not self._done.done():
                self._done.set_exception(err)

    async def _shutdown(self) -> None:
        self._conn.stopping = True
        await self._core.stop("serving stopped", release=True)
        if self._conn.open:
            await self._conn.close()
        self._main.cancel()
        await asyncio.wait([self._main])
        if not self._done.done():
            self._done.set_result(None)


def serve(agent: str, handler: Handler, *, url: str, token: str, machine: Optional[str] = None,
          runner_id: Optional[str] = None, on_status: Optional[Callable[[dict[str, Any]], None]] = None,
          on_event: Optional[Callable[[dict[str, Any]], None]] = None, concurrency: int = 1,
          priority: int = 0, tracing: bool = True, on_message: Optional[Callable[[Message], None]] = None,
          cursor: int = 0) -> Serving:
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
    handler_failed, refused, revoked, suppressed, released, ...), both as dicts; ``on_message`` every
    message frame as a :class:`Message`, the history replayed on each (re)connect (ids after
    ``cursor``) and the messages this runner is handed; one that raises is logged (logger ``baton``)
    and serving goes on.
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

    def start() -> ServeHandle:
        conn = Connection(url, token, agent, machine)
        core = ServeCore(agent, handler, conn, SYSTEM_CLOCK, runner_id or str(uuid.uuid4()), blobs=HttpBlobs(url, token),
                         concurrency=concurrency, priority=priority, cursor=cursor, on_status=on_status, on_event=on_event,
                         on_message=on_message)
        return ServeHandle(core, conn)

    return Serving(start)
