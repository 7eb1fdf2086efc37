"""OpenTelemetry spans for message runs, as client/tracing.ts makes them, through ``opentelemetry-api``
when it can be imported (the ``otel`` extra). It is imported the first time ``serve`` or ``send``
asks, once; without it nothing is imported again and handlers run untouched.

A run is an ``invoke_agent`` span (GenAI semantic conventions, kind CONSUMER) continuing the trace
its sender put on the message, so every attempt of one message, on any machine and in either
language, is a sibling under the post; steps, effects (``execute_tool``) and asks are its children,
heartbeats and lease loss its events. What no convention covers (the lease, the fence, the attempt,
the machine) is under ``baton.*``. The handler runs with its run span current, and its
``message.traceparent`` is the run span's, so what it traces or propagates continues under the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from typing import Any, Callable, Iterator, Optional

from .errors import LeaseLostError, MessageCancelledError, OutcomeUnknownError, WaitingForPersonError
from ._run_context import Handler, MessageContext
from ._handler import Message, PersonAnswer
from ._frame_journal import Effect

TRACER = "baton"
#: A W3C traceparent (version 00), as TRACEPARENT of worker/wire/protocol.ts accepts it.
TRACEPARENT = re.compile(r"^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$")

_NOT_LOADED: Any = object()
_api: Any = _NOT_LOADED


def load_api() -> Any:
    """``opentelemetry.trace``, imported once; None when it is not installed."""
    global _api
    if _api is _NOT_LOADED:
        try:
            from opentelemetry import trace
        except ImportError:
            trace = None
        _api = trace
    return _api


def parent_context(api: Any, traceparent: Optional[str]) -> Any:
    """The context of a W3C traceparent within the current one; None (the current context) when
    there is none or it is malformed."""
    if not traceparent or TRACEPARENT.match(traceparent) is None:
        return None
    _, trace_id, span_id, flags = traceparent.split("-")
    remote = api.SpanContext(trace_id=int(trace_id, 16), span_id=int(span_id, 16), is_remote=True,
                             trace_flags=api.TraceFlags(int(flags, 16)))
    return api.set_span_in_context(api.NonRecordingSpan(remote))


def traceparent_of(span: Any) -> Optional[str]:
    """The W3C traceparent of a span; None when it has no valid context (no provider and no parent)."""
    c = span.get_span_context()
    if not c.is_valid:
        return None
    return f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags) & 0xff:02x}"


def _error_status(api: Any, span: Any, error: BaseException) -> None:
    span.set_status(api.Status(api.StatusCode.ERROR, str(error) or type(error).__name__))


def _outcome(error: BaseException, lost: Optional[LeaseLostError]) -> str:
    """How a run that raised ended, as ``baton.outcome`` says it."""
    if isinstance(error, WaitingForPersonError):
        return "parked"
    if isinstance(error, MessageCancelledError) or isinstance(lost, MessageCancelledError):
        return "cancelled"
    if lost is not None or isinstance(error, (asyncio.CancelledError, LeaseLostError)):
        return "lease_lost"
    return "failed"


def trace_handler(handler: Handler, agent: str, machine: str) -> Handler:
    """The handler itself when the API is not installed; else one that makes each run a span."""
    api = load_api()
    if api is None:
        return handler

    async def traced(message: Message, ctx: MessageContext) -> Any:
        tracer = api.get_tracer(TRACER)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": message.group or f"{agent}:{message.id}",
            "baton.message.id": message.id,
            "baton.attempt": message.attempt,
            "baton.fence": ctx.fence,
            "baton.machine": machine,
        }
        if message.token is not None:
            attributes["baton.token"] = message.token
        with tracer.start_as_current_span(f"invoke_agent {agent}", context=parent_context(api, message.traceparent),
                                          kind=api.SpanKind.CONSUMER, attributes=attributes,
                                          record_exception=False, set_status_on_exception=False) as span:
            own = dataclasses.replace(message, traceparent=traceparent_of(span) or message.traceparent)
            try:
                reply = await handler(own, _TracedContext(ctx, api, tracer, span))
            except BaseException as error:
                outcome = _outcome(error, ctx.lost)
                _end_run(span, outcome, ctx)
                if outcome != "parked":
                    _error_status(api, span, error)
                raise
            # A handler that swallowed its cancellation replies nothing: its run lost the lease all the same.
            _end_run(span, "lease_lost" if ctx.lost is not None else "parked" if ctx._run.parked else "replied", ctx)
            return reply

    return traced


def _end_run(span: Any, outcome: str, ctx: MessageContext) -> None:
    span.set_attribute("baton.outcome", outcome)
    if ctx.lost is not None:
        span.add_event("baton.lease_lost", {"baton.reason": str(ctx.lost), "baton.reason.code": ctx.lost.code})


class _TracedContext(MessageContext):
    """The handler's context with a child span around each step, effect and ask, and heartbeats as
    events of the run span. It shares the run's state with the context it copies."""

    def __init__(self, inner: MessageContext, api: Any, tracer: Any, run_span: Any) -> None:  # a copy: MessageContext.__init__ is not called
        self.__dict__.update(inner.__dict__)
        self._api = api
        self._tracer = tracer
        self._run_span = run_span
        # The run span is the parent by value: a step called from within another step is still the run's child.
        self._within = api.set_span_in_context(run_span)

    @contextlib.contextmanager
    def _child(self, name: str, attributes: dict[str, Any]) -> Iterator[Any]:
        with self._tracer.start_as_current_span(name, context=self._within, attributes=attributes,
                                                record_exception=False, set_status_on_exception=False) as span:
            try:
                yield span
            except WaitingForPersonError:
                raise
            except BaseException as error:
                _error_status(self._api, span, error)
                raise

    async def step(self, name: str, fn: Callable[[], Any]) -> Any:
        with self._child(f"baton.step {name}", {"baton.step.name": name}) as span:
            ran = False

            def call() -> Any:
                nonlocal ran
                ran = True
                return fn()

            value = await super().step(name, call)
            span.set_attribute("baton.replayed", not ran)
            return value

    async def effect(self, name: str, fn: Callable[[Effect], Any], on_unknown: str = "ask",
                     approve: Optional[dict[str, Any]] = None) -> Any:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "baton.step.name": name}
        with self._child(f"execute_tool {name}", attributes) as span:
            ran = False

            def call(effect: Effect) -> Any:
                nonlocal ran
                ran = True
                return fn(effect)

            try:
                value = await super().effect(name, call, on_unknown, approve)
            except OutcomeUnknownError:
                span.set_attribute("baton.effect.outcome", "unknown")
                raise
            finally:
                # The key is in the journal once the intent is recorded, also when an earlier attempt ran it.
                key = dict(self._run.journal.records.get(name) or {}).get("idempotency_key")
                if isinstance(key, str):
                    span.set_attributes({"gen_ai.tool.call.id": key, "baton.effect.idempotency_key": key})
            span.set_attributes({"baton.replayed": not ran, "baton.effect.outcome": "done"})
            return value

    async def ask(self, question: str, choices: Any = None, deadline_seconds: Optional[int] = None,
                  on_deadline: Optional[str] = None, name: Optional[str] = None, checkpoint: Any = None, *,
                  needs: Optional[int] = None, reject_needs: Optional[int] = None, approvers: Any = None) -> PersonAnswer:
        attributes: dict[str, Any] = {"baton.ask.name": name or ""}
        if deadline_seconds:
            attributes["baton.ask.deadline_seconds"] = deadline_seconds
        with self._child("baton.ask", attributes) as span:
            try:
                answer = await super().ask(question, choices, deadline_seconds, on_deadline, name, checkpoint,
                                           needs=needs, reject_needs=reject_needs, approvers=approvers)
            except WaitingForPersonError:
                span.set_attribute("baton.ask.waiting", True)
                raise
            span.set_attributes({"baton.ask.choice": answer.choice, "baton.ask.answered_at": answer.at,
                                 "baton.ask.answered_by": f"{answer.by.token} ({answer.by.account}) via {answer.by.via}"})
            return answer

    async def heartbeat(self, details: Any = None) -> Optional[float]:
        deadline = await super().heartbeat(details)
        self._run_span.add_event("baton.heartbeat", {} if deadline is None else {"baton.run.deadline": deadline})
        return deadline


def traced_post(agent: str, parent: Optional[str], post: Callable[[Optional[str]], dict[str, Any]]) -> dict[str, Any]:
    """For ``send``: a PRODUCER span around the post (within ``parent``, else the current context),
    and the traceparent the message carries (``parent`` itself when there is no valid span)."""
    api = load_api()
    if api is None:
        return post(parent)
    tracer = api.get_tracer(TRACER)
    with tracer.start_as_current_span(f"send {agent}", context=parent_context(api, parent), kind=api.SpanKind.PRODUCER,
                                      attributes={"gen_ai.agent.name": agent},
                                      record_exception=False, set_status_on_exception=False) as span:
        try:
            posted = post(traceparent_of(span) or parent)
        except BaseException as error:
            _error_status(api, span, error)
            raise
        span.set_attribute("baton.message.id", posted["id"])
        return posted
