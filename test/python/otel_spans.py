"""Where the tracing tests collect finished spans, and a text rendering of a trace.

opentelemetry-sdk's TracerProvider with its InMemorySpanExporter when the SDK imports. The SDK 1.45
needs opentelemetry-semantic-conventions, which the package index these machines use does not
offer; there a small recording provider built on opentelemetry-api alone stands in (spans with
the SDK's ReadableSpan fields the tests read: name, kind, context, parent, attributes, events,
status). Baton's side is the same either way: it only ever talks to the API.
"""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from opentelemetry import trace
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

try:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    SDK = True
except ImportError:
    SDK = False


@dataclass
class _Event:
    name: str
    attributes: dict[str, Any]
    timestamp: int = field(default_factory=time.time_ns)


@dataclass
class _Span(trace.Span):
    name: str
    context: SpanContext
    parent: Optional[SpanContext]
    kind: SpanKind
    attributes: dict[str, Any]
    sink: list["_Span"]
    events: list[_Event] = field(default_factory=list)
    status: Status = field(default_factory=lambda: Status(StatusCode.UNSET))
    start_time: int = field(default_factory=time.time_ns)
    ended: bool = False

    def get_span_context(self) -> SpanContext:
        return self.context

    def set_attributes(self, attributes: Any) -> None:
        self.attributes.update(attributes)

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def add_event(self, name: str, attributes: Any = None, timestamp: Any = None) -> None:
        self.events.append(_Event(name, dict(attributes or {})))

    def update_name(self, name: str) -> None:
        self.name = name

    def is_recording(self) -> bool:
        return not self.ended

    def set_status(self, status: Any, description: Optional[str] = None) -> None:
        self.status = status if isinstance(status, Status) else Status(status, description)

    def record_exception(self, exception: BaseException, attributes: Any = None, timestamp: Any = None, escaped: bool = False) -> None:
        self.add_event("exception", {"exception.message": str(exception)})

    def end(self, end_time: Any = None) -> None:
        if not self.ended:
            self.ended = True
            self.sink.append(self)


class _Tracer(trace.Tracer):
    def __init__(self, sink: list[_Span]) -> None:
        self.sink = sink

    def start_span(self, name: str, context: Any = None, kind: SpanKind = SpanKind.INTERNAL, attributes: Any = None,
                   links: Any = None, start_time: Any = None, record_exception: bool = True,
                   set_status_on_exception: bool = True) -> _Span:
        parent = trace.get_current_span(context).get_span_context()
        trace_id = parent.trace_id if parent.is_valid else random.getrandbits(128)
        own = SpanContext(trace_id, random.getrandbits(64), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        return _Span(name, own, parent if parent.is_valid else None, kind, dict(attributes or {}), self.sink)

    @contextlib.contextmanager
    def start_as_current_span(self, name: str, context: Any = None, kind: SpanKind = SpanKind.INTERNAL, attributes: Any = None,
                              links: Any = None, start_time: Any = None, record_exception: bool = True,
                              set_status_on_exception: bool = True, end_on_exit: bool = True) -> Iterator[_Span]:
        span = self.start_span(name, context, kind, attributes)
        with trace.use_span(span, end_on_exit=end_on_exit, record_exception=record_exception,
                            set_status_on_exception=set_status_on_exception) as current:
            yield current


class _Provider(trace.TracerProvider):
    def __init__(self) -> None:
        self.finished: list[_Span] = []

    def get_tracer(self, *args: Any, **kwargs: Any) -> _Tracer:
        return _Tracer(self.finished)


class Spans:
    """Finished spans of this process (the one global tracer provider, set on first use)."""

    def __init__(self) -> None:
        if SDK:
            self._exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(self._exporter))
        else:
            provider = self._recorder = _Provider()
        trace.set_tracer_provider(provider)

    def finished(self) -> list[Any]:
        return list(self._exporter.get_finished_spans()) if SDK else list(self._recorder.finished)

    def clear(self) -> None:
        if SDK:
            self._exporter.clear()
        else:
            self._recorder.finished.clear()

    def named(self, prefix: str) -> list[Any]:
        return [s for s in self.finished() if s.name.startswith(prefix)]

    def children_of(self, span: Any) -> list[Any]:
        return [s for s in self.finished() if s.parent is not None and s.parent.span_id == span.context.span_id]


_spans: Optional[Spans] = None


def spans() -> Spans:
    global _spans
    if _spans is None:
        _spans = Spans()
    return _spans


SHOWN = ("baton.attempt", "baton.machine", "baton.fence", "baton.token", "baton.outcome", "baton.replayed",
         "gen_ai.tool.call.id", "baton.effect.outcome", "baton.message.id")


def render(finished: list[Any], root: Any) -> str:
    """The trace under ``root`` as an indented tree: each span's name, kind and baton attributes,
    then its events and child spans in the order they happened."""
    lines: list[str] = []

    def show(span: Any, prefix: str, last: bool, top: bool) -> None:
        attrs = " ".join(f"{k.split('.', 1)[1]}={span.attributes[k]}" for k in SHOWN if k in span.attributes)
        kind = "" if span.kind == SpanKind.INTERNAL else f" [{span.kind.name}]"
        lines.append(f"{'' if top else prefix + ('└─ ' if last else '├─ ')}{span.name}{kind}  {attrs}".rstrip())
        inner = "" if top else prefix + ("   " if last else "│  ")
        below = [(e.timestamp, "event", e) for e in span.events]
        below += [(s.start_time, "span", s) for s in finished if s.parent is not None and s.parent.span_id == span.context.span_id]
        below.sort(key=lambda b: b[0])
        for i, (_, what, item) in enumerate(below):
            end = i == len(below) - 1
            if what == "event":
                detail = " ".join(f"{k}={v}" for k, v in item.attributes.items())
                lines.append(f"{inner}{'└─ ' if end else '├─ '}event {item.name}  {detail}".rstrip())
            else:
                show(item, inner, end, False)

    show(root, "", True, True)
    return "\n".join(lines)
