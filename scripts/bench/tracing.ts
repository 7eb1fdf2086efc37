// `npm run bench -- --only tracing`: what OpenTelemetry spans cost a run. Two agents served from
// this process, one with `tracing: false`, one traced into the SDK's in-memory exporter; each trial
// sends one message to each, in alternating order, whose handler records STEPS durable steps, and
// measures from `send` to the runner's "ran" event (its reply accepted). The goal (issue 40): the
// traced run within 5% of the untraced one. Without the API installed nothing is loaded at all.
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { send, serve, type ServeHandle } from "../../client/node.ts";
import { DEV_TOKEN } from "../../test/e2e/wrangler-dev.ts";
import { fmt, markdownTable, percentile } from "./stats.ts";

const STEPS = 100;
const GOAL = 1.05;

interface Served {
  handle: ServeHandle;
  /** Resolves when the message with that id has run (its reply accepted); made on first ask, so a run that ends before `send` returns is not missed. */
  ran(id: number): Promise<void>;
}

function served(url: string, agent: string, tracing: boolean): Served {
  const waits = new Map<number, { promise: Promise<void>; resolve: () => void }>();
  const ran = (id: number) => {
    if (!waits.has(id)) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      waits.set(id, { promise, resolve });
    }
    return waits.get(id)!;
  };
  const handle = serve(agent, async (_m, ctx) => {
    for (let i = 0; i < STEPS; i++) await ctx.step(`s${i}`, () => i);
    return "ok";
  }, {
    url, token: DEV_TOKEN, machine: tracing ? "traced" : "plain", tracing,
    onEvent: (e) => {
      if (e.type === "ran") ran(e.id).resolve();
    },
  });
  return { handle, ran: (id) => ran(id).promise };
}

async function oneRun(url: string, agent: string, s: Served): Promise<number> {
  const t0 = performance.now();
  const posted = await send(agent, "go", { url, token: DEV_TOKEN });
  await s.ran(posted.id);
  return performance.now() - t0;
}

export async function runTracing(url: string, trials: number): Promise<string> {
  const exporter = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  const suffix = Math.random().toString(36).slice(2, 8);
  const agents = { plain: `bench-otel-plain-${suffix}`, traced: `bench-otel-traced-${suffix}` };
  const plain = served(url, agents.plain, false);
  const traced = served(url, agents.traced, true);
  const samples = { plain: [] as number[], traced: [] as number[] };
  try {
    await oneRun(url, agents.plain, plain);
    await oneRun(url, agents.traced, traced);
    for (let i = 0; i < trials; i++) {
      const order = i % 2 === 0 ? (["plain", "traced"] as const) : (["traced", "plain"] as const);
      for (const which of order) samples[which].push(await oneRun(url, agents[which], which === "plain" ? plain : traced));
      exporter.reset();
    }
  } finally {
    await Promise.all([plain.handle.stop(), traced.handle.stop()]);
    trace.disable();
  }
  const p50 = { plain: percentile(samples.plain, 50), traced: percentile(samples.traced, 50) };
  const r = p50.traced / p50.plain;
  return [
    `### Tracing: a ${STEPS}-step run, traced (in-memory exporter) against tracing: false`,
    "",
    markdownTable(["", "p50 ms", "p99 ms", "trials"], [
      ["tracing: false", fmt(p50.plain), fmt(percentile(samples.plain, 99)), String(samples.plain.length)],
      ["traced", fmt(p50.traced), fmt(percentile(samples.traced, 99)), String(samples.traced.length)],
    ]),
    "",
    `traced / untraced p50: ${r.toFixed(3)}x (goal <= ${GOAL}x: ${r <= GOAL ? "met" : "not met"})`,
    "",
  ].join("\n");
}
