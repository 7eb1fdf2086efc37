// client/tracing.ts with @opentelemetry/api installed but no tracer provider registered (a common
// case: the API comes with many libraries, the SDK only with a tracing setup): spans are not
// recording and have no valid context, so a post carries the caller's traceparent or none, never
// the all-zero one the coordinator refuses.
import { trace } from "@opentelemetry/api";
import { beforeAll, describe, expect, it } from "vitest";
import { loadTracingApi, tracedPost, traceHandler } from "../../client/tracing.ts";
import type { AgentMessage, MessageContext } from "../../client/core/handler.ts";

const PARENT = `00-${"ab".repeat(16)}-${"cd".repeat(8)}-01`;

beforeAll(async () => {
  trace.disable();
  expect(await loadTracingApi()).not.toBeNull();
});

describe("tracing without a registered tracer provider", () => {
  it("a send outside any trace carries no traceparent; one within a trace carries that trace's", async () => {
    const carried: (string | null)[] = [];
    await tracedPost("a", null, async (tp) => (carried.push(tp), { id: 1 }));
    await tracedPost("a", PARENT, async (tp) => (carried.push(tp), { id: 2 }));
    expect(carried).toEqual([null, PARENT]);
  });

  it("a run of a message sent outside any trace hands its handler no traceparent", async () => {
    const seen: (string | null)[] = [];
    const handler = traceHandler(async (m) => (seen.push(m.traceparent), "ok"), { agent: "a", machine: "m" });
    const ctx = { fence: 1, signal: new AbortController().signal } as unknown as MessageContext;
    const message = { id: 1, attempt: 1, token: 1, group: null, traceparent: null } as unknown as AgentMessage;
    await handler(message, ctx);
    await handler({ ...message, traceparent: PARENT }, ctx);
    expect(seen).toEqual([null, PARENT]);
  });
});
