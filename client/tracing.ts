// OpenTelemetry spans for message runs, through `@opentelemetry/api` when it can be loaded (an
// optional peer dependency; without it nothing is loaded again and handlers run untouched). A run
// is an `invoke_agent` span (GenAI semantic conventions) that continues the trace its sender put
// on the message, so every attempt of one message, on any machine, is a sibling under the post;
// steps, effects (`execute_tool`) and asks are its children. What no convention covers yet (the
// lease, the fence, the attempt, the machine) is under `baton.*`.
import type { Attributes, Context, Span, Tracer } from "@opentelemetry/api";
import { TRACEPARENT } from "../worker/wire/protocol.ts";
import { MessageCancelledError, WaitingForPersonError } from "./errors.ts";
import type { AgentMessage, MessageContext, MessageHandler } from "./core/handler.ts";

type Api = typeof import("@opentelemetry/api");

let loading: Promise<Api | null> | null = null;

/** The API, loaded once; null when it is not installed. */
export function loadTracingApi(): Promise<Api | null> {
  loading ??= import("@opentelemetry/api").then((api) => api, () => null);
  return loading;
}

const TRACER = "baton";

/** The span context of a W3C traceparent, or null when there is none or it is malformed. */
export function parseTraceparent(api: Api, header: string | null): Context | null {
  if (header === null || !TRACEPARENT.test(header)) return null;
  const [, traceId, spanId, flags] = header.split("-") as [string, string, string, string];
  return api.trace.setSpanContext(api.context.active(), { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true });
}

/** The W3C traceparent of a span (what a message carries to its runner, or a run to its command); null for a span no SDK records (all-zero ids). */
export function traceparentOf(api: Api, span: Span): string | null {
  const c = span.spanContext();
  if (!api.trace.isSpanContextValid(c)) return null;
  return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** How a run ended, as `baton.outcome` says it. */
function outcomeOf(error: unknown, signal: AbortSignal): string {
  if (error instanceof WaitingForPersonError) return "parked";
  if (error instanceof MessageCancelledError || signal.reason instanceof MessageCancelledError) return "cancelled";
  if (signal.aborted) return "lease_lost";
  return "failed";
}

export interface TracedRun {
  agent: string;
  machine: string;
}

/**
 * Wraps a handler so each run is a span, with its steps, effects and asks as children. The
 * handler's `message.traceparent` is the run span's, so what it propagates (a served command's
 * TRACEPARENT, an HTTP call) continues under the run.
 */
export function traceHandler(handler: MessageHandler, run: TracedRun): MessageHandler {
  return async (message, ctx) => {
    const api = await loadTracingApi();
    if (api === null) return handler(message, ctx);
    const tracer = api.trace.getTracer(TRACER);
    const parent = parseTraceparent(api, message.traceparent) ?? api.context.active();
    const attributes: Attributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": run.agent,
      "gen_ai.conversation.id": message.group ?? `${run.agent}:${message.id}`,
      "baton.message.id": message.id,
      "baton.attempt": message.attempt,
      "baton.fence": ctx.fence,
      "baton.machine": run.machine,
      ...(message.token === null ? {} : { "baton.token": message.token }),
    };
    return tracer.startActiveSpan(`invoke_agent ${run.agent}`, { kind: api.SpanKind.CONSUMER, attributes }, parent, async (span) => {
      const onAbort = () => span.addEvent("baton.lease_lost", { "baton.reason": String((ctx.signal.reason as Error | undefined)?.message ?? ctx.signal.reason) });
      ctx.signal.addEventListener("abort", onAbort, { once: true });
      try {
        const reply = await handler({ ...message, traceparent: traceparentOf(api, span) ?? message.traceparent }, tracedContext(api, tracer, ctx, span));
        span.setAttribute("baton.outcome", "replied");
        return reply;
      } catch (error) {
        const outcome = outcomeOf(error, ctx.signal);
        span.setAttribute("baton.outcome", outcome);
        if (outcome !== "parked") span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        ctx.signal.removeEventListener("abort", onAbort);
        span.end();
      }
    });
  };
}

/** The handler's context with a child span around each step, effect and ask, and heartbeats as events of the run span. */
function tracedContext(api: Api, tracer: Tracer, ctx: MessageContext, runSpan: Span): MessageContext {
  // The run span is the parent by value: without a context manager registered, the active context would not carry it.
  const within = api.trace.setSpan(api.context.active(), runSpan);
  async function child<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
    return tracer.startActiveSpan(name, { attributes }, within, async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        if (!(error instanceof WaitingForPersonError)) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        span.end();
      }
    });
  }
  return {
    ...ctx,
    step: (name, fn) => child(`baton.step ${name}`, { "baton.step.name": name }, async (span) => {
      let ran = false;
      const value = await ctx.step(name, () => ((ran = true), fn()));
      span.setAttribute("baton.replayed", !ran);
      return value;
    }),
    effect: (name, fn, options) => child(`execute_tool ${name}`, { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "baton.step.name": name }, async (span) => {
      let ran = false;
      const value = await ctx.effect(name, (effect) => {
        ran = true;
        span.setAttribute("gen_ai.tool.call.id", effect.key);
        span.setAttribute("baton.effect.idempotency_key", effect.key);
        return fn(effect);
      }, options);
      span.setAttributes({ "baton.replayed": !ran, "baton.effect.outcome": "done" });
      return value;
    }),
    ask: (question, options) => child("baton.ask", { "baton.ask.name": options?.name ?? "", ...(options?.deadlineSeconds ? { "baton.ask.deadline_seconds": options.deadlineSeconds } : {}) }, async (span) => {
      try {
        const answer = await ctx.ask(question, options);
        span.setAttributes({ "baton.ask.choice": answer.choice, "baton.ask.answered_by": `${answer.by.token} (${answer.by.account}) via ${answer.by.via}`, "baton.ask.answered_at": answer.at });
        return answer;
      } catch (error) {
        if (error instanceof WaitingForPersonError) span.setAttribute("baton.ask.waiting", true);
        throw error;
      }
    }),
    heartbeat: async (details) => {
      const deadline = await ctx.heartbeat(details);
      runSpan.addEvent("baton.heartbeat", deadline === null ? {} : { "baton.run.deadline": deadline });
      return deadline;
    },
  };
}

/** For `send`: a producer span around the post, and the traceparent the message carries. */
export async function tracedPost<T>(
  agent: string, parent: string | null, post: (traceparent: string | null) => Promise<T & { id: number }>,
): Promise<T & { id: number }> {
  const api = await loadTracingApi();
  if (api === null) return post(parent);
  const tracer = api.trace.getTracer(TRACER);
  const within = parseTraceparent(api, parent) ?? api.context.active();
  return tracer.startActiveSpan(`send ${agent}`, { kind: api.SpanKind.PRODUCER, attributes: { "gen_ai.agent.name": agent } }, within, async (span: Span) => {
    try {
      const posted = await post(traceparentOf(api, span) ?? parent);
      span.setAttribute("baton.message.id", posted.id);
      return posted;
    } catch (error) {
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      throw error;
    } finally {
      span.end();
    }
  });
}

export type { AgentMessage };
