// OpenTelemetry through baton-client, against a real wrangler dev with the SDK's in-memory
// exporter: `send` is a producer span whose traceparent the message carries; each attempt of the
// message is an `invoke_agent` span under it, on whichever machine ran it, with the fence, token,
// attempt and outcome; a failover shows as two sibling attempts in one trace, the first ending in
// lease loss, the second replaying the recorded step and running the effect with its key.
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { send, serve, type MessageHandler, type ServeHandle } from "../../client/node.ts";
import { sharedServeFixture, uniqueAgent, waitForMessage } from "./serve-helpers.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const fx = sharedServeFixture();
const exporter = new InMemorySpanExporter();
const handles: ServeHandle[] = [];
beforeAll(() => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(() => trace.disable());
afterEach(async () => {
  await Promise.all(handles.splice(0).map((h) => h.stop()));
  exporter.reset();
});

const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;
const named = (prefix: string) => exporter.getFinishedSpans().filter((s) => s.name.startsWith(prefix));
const childrenOf = (run: ReadableSpan) => exporter.getFinishedSpans().filter((s) => parentOf(s) === run.spanContext().spanId);

async function until(what: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("OpenTelemetry spans of message runs", () => {
  it("a message that failed over is one trace: send, then attempt 1 on machine a (lease lost) and attempt 2 on machine b (replied) as siblings, with steps and effects as children", async () => {
    const agent = uniqueAgent("otel");
    const conn = { url: fx.dev.url, token: DEV_TOKEN };
    let started = false;
    const handler = (machine: string): MessageHandler => async (_m, ctx) => {
      await ctx.step("plan", () => "the plan");
      if (machine === "a") {
        started = true;
        await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error), { once: true }));
      }
      await ctx.effect("charge", ({ key }) => `charged under ${key}`);
      return "done";
    };
    const a = serve(agent, handler("a"), { ...conn, machine: "a" });
    handles.push(a);
    await until(() => a.status.kind === "holder");
    handles.push(serve(agent, handler("b"), { ...conn, machine: "b" }));
    const posted = await send(agent, "charge the customer", conn);
    await until(() => started);
    await a.stop();
    await waitForMessage(fx.dev.url, agent, posted.id, (m) => m.status === "acknowledged");
    await until(() => named("invoke_agent").length === 2);

    const [sent] = named("send");
    expect(sent).toBeDefined();
    expect(sent!.attributes).toMatchObject({ "baton.message.id": posted.id, "gen_ai.agent.name": agent });
    const runs = named("invoke_agent").sort((x, y) => Number(x.attributes["baton.attempt"]) - Number(y.attributes["baton.attempt"]));
    for (const run of runs) {
      expect(run.spanContext().traceId).toBe(sent!.spanContext().traceId);
      expect(parentOf(run)).toBe(sent!.spanContext().spanId);
      expect(run.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent, "baton.message.id": posted.id });
      expect(run.attributes["baton.fence"]).toEqual(expect.any(Number));
      expect(run.attributes["baton.token"]).toEqual(expect.any(Number));
    }
    expect(runs.map((r) => [r.attributes["baton.machine"], r.attributes["baton.attempt"], r.attributes["baton.outcome"]])).toEqual([["a", 1, "lease_lost"], ["b", 2, "replied"]]);
    expect(runs[0]!.events.map((e) => e.name)).toContain("baton.lease_lost");
    expect(childrenOf(runs[0]!).map((s) => [s.name, s.attributes["baton.replayed"]])).toEqual([["baton.step plan", false]]);
    const second = childrenOf(runs[1]!);
    expect(second.map((s) => [s.name, s.attributes["baton.replayed"]])).toEqual([["baton.step plan", true], ["execute_tool charge", false]]);
    expect(second[1]!.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "charge", "gen_ai.tool.call.id": expect.stringContaining("charge") });
    expect(Number(runs[1]!.attributes["baton.fence"])).toBeGreaterThan(Number(runs[0]!.attributes["baton.fence"]));
  });

  it("tracing: false leaves runs untraced", async () => {
    const agent = uniqueAgent("otel");
    const conn = { url: fx.dev.url, token: DEV_TOKEN };
    handles.push(serve(agent, () => "ok", { ...conn, machine: "a", tracing: false }));
    const posted = await send(agent, "hi", conn);
    await waitForMessage(fx.dev.url, agent, posted.id, (m) => m.status === "acknowledged");
    expect(named("invoke_agent")).toEqual([]);
    expect(named("send")).toHaveLength(1);
  });
});
