// Replays every shared transcript (test/transcripts/*.json, format in its README.md) against the
// TypeScript core: a fake link collects the frames it sends and delivers the script's, a fake
// clock moves only when the script says, and the handler is the transcript's scripted one. Python
// replays the same files against its own core.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ClientFrame } from "../../worker/wire/protocol.ts";
import { serverFrameSchema, type ServerFrame } from "../../worker/wire/server-frames.ts";
import { WaitingForPersonError } from "../../client/errors.ts";
import type { Clock } from "../../client/core/clock.ts";
import type { MessageContext, MessageHandler } from "../../client/core/handler.ts";
import { ServeCore } from "../../client/core/serve-core.ts";
import type { CoreLink, ReplyFrame } from "../../client/core/writes.ts";

const DIR = join(import.meta.dirname, "..", "transcripts");
const WAIT_MS = 2000;

type Action = Record<string, unknown>;
type Entry = Record<string, unknown>;
interface Transcript {
  format: number;
  name: string;
  agent: string;
  runner: { runner_id: string; concurrency?: number; priority?: number; cursor?: number };
  handler: Action[];
  script: Entry[];
  calls: string[];
}

/** A clock that stands still until advanced; due timers fire in order of their time. */
class FakeClock implements Clock {
  private t = 0;
  private timers: { at: number; seq: number; fn: () => void }[] = [];
  private seq = 0;
  now(): number {
    return this.t;
  }
  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + ms, seq: this.seq++, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  }
  advance(ms: number): void {
    const until = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= until).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = until;
  }
}

/** Collects what the core sends; answers requests with the script's frames, matched by `req`. */
class FakeLink implements CoreLink {
  isOpen = false;
  readonly ttlMs = 60_000;
  readonly sent: ClientFrame[] = [];
  readonly reconnects: number[] = [];
  private readonly pending = new Map<string, { resolve: (f: ReplyFrame) => void; reject: (e: Error) => void }>();
  private counter = 0;
  send(frame: ClientFrame): void {
    if (this.isOpen) this.sent.push(frame);
  }
  request(frame: ClientFrame & { req: string }): Promise<ReplyFrame> {
    if (!this.isOpen) return Promise.reject(new Error("not connected"));
    this.sent.push(frame);
    return new Promise((resolve, reject) => this.pending.set(frame.req, { resolve, reject }));
  }
  nextReq(): string {
    return `r${++this.counter}`;
  }
  reconnectNow(): void {
    this.reconnects.push(this.sent.length);
  }
  /** An answer to one of our requests; false when nothing waits for its req. */
  answer(frame: ReplyFrame): boolean {
    const waiting = frame.req === undefined ? undefined : this.pending.get(frame.req);
    if (!waiting) return false;
    this.pending.delete(frame.req!);
    waiting.resolve(frame);
    return true;
  }
  close(): void {
    this.isOpen = false;
    for (const [req, waiting] of this.pending) {
      this.pending.delete(req);
      waiting.reject(new Error("the connection closed"));
    }
  }
}

/** The transcript's handler: its actions in order, every call logged; how each run ended is logged last. */
function scriptedHandler(actions: Action[], calls: string[]): MessageHandler {
  return async (_message, ctx) => {
    try {
      const reply = await perform(actions, ctx, calls);
      calls.push("replied");
      return reply;
    } catch (error) {
      calls.push(error instanceof WaitingForPersonError ? "asked" : ctx.signal.aborted ? "aborted" : `threw: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    }
  };
}

async function perform(actions: Action[], ctx: MessageContext, calls: string[]): Promise<string> {
  for (const a of actions) {
    if (typeof a.step === "string") {
      const name = a.step;
      await ctx.step(name, () => (calls.push(`step ${name}`), a.returns));
    } else if (typeof a.effect === "string") {
      const name = a.effect;
      const onUnknown = a.on_unknown as "ask" | "retry" | undefined;
      await ctx.effect(name, ({ key }) => (calls.push(`effect ${name} ${key}`), a.returns), onUnknown ? { onUnknown } : {});
    } else if (typeof a.ask === "string") {
      const answer = await ctx.ask(a.ask, { ...(a.choices ? { choices: a.choices as string[] } : {}), ...(typeof a.name === "string" ? { name: a.name } : {}) });
      calls.push(`answer ${answer.choice}`);
    } else if ("checkpoint" in a) {
      await ctx.saveMessageCheckpoint(a.checkpoint);
    } else if ("heartbeat" in a) {
      await ctx.heartbeat(a.heartbeat ?? undefined);
    } else if (a.wait === "abort") {
      calls.push("waiting");
      await new Promise((_, reject) => {
        if (ctx.signal.aborted) reject(ctx.signal.reason as Error);
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason as Error), { once: true });
      });
    } else if (typeof a.throw === "string") {
      throw new Error(a.throw);
    } else if (typeof a.reply === "string") {
      return a.reply;
    } else {
      throw new Error(`unknown handler action ${JSON.stringify(a)}`);
    }
  }
  return "";
}

/** Substitutes bound names in an `in` frame. */
function substitute(value: unknown, names: Map<string, unknown>): unknown {
  if (typeof value === "string" && value.startsWith("$")) {
    if (!names.has(value)) throw new Error(`${value} is used before an out frame bound it`);
    return names.get(value);
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, names));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, names)]));
  return value;
}

/** Binds names in an expected `out` frame to what was sent, so the rest compares by deep equality. */
function bind(expected: unknown, actual: unknown, names: Map<string, unknown>): unknown {
  if (typeof expected === "string" && expected.startsWith("$")) {
    if (!names.has(expected) && typeof actual === "string") names.set(expected, actual);
    return names.get(expected);
  }
  if (Array.isArray(expected)) return expected.map((v, i) => bind(v, Array.isArray(actual) ? actual[i] : undefined, names));
  if (expected !== null && typeof expected === "object") {
    const a = actual !== null && typeof actual === "object" ? (actual as Record<string, unknown>) : {};
    return Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, bind(v, a[k], names)]));
  }
  return expected;
}

/** Lets the core run until it waits on input: a few turns of the event loop. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`waited ${WAIT_MS} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

async function replay(t: Transcript): Promise<void> {
  const clock = new FakeClock();
  const link = new FakeLink();
  const calls: string[] = [];
  const core = new ServeCore({
    agent: t.agent, handler: scriptedHandler(t.handler, calls), link, clock,
    runnerId: t.runner.runner_id, priority: t.runner.priority, concurrency: t.runner.concurrency, cursor: t.runner.cursor,
  });
  const names = new Map<string, unknown>();
  let read = 0;
  try {
    for (const [i, entry] of t.script.entries()) {
      const [kind, body] = Object.entries(entry)[0]!;
      const where = `${t.name}: script[${i}] ${kind}`;
      if (kind === "open") {
        link.isOpen = true;
        core.opened(clock.now());
      } else if (kind === "in") {
        const frame = serverFrameSchema.parse(substitute(body, names)) as ServerFrame;
        if ((frame.type === "result" || (frame.type === "error" && frame.req !== undefined)) && link.answer(frame)) continue;
        core.receive(frame);
      } else if (kind === "out") {
        await until(`${where}: ${JSON.stringify(body)}`, () => link.sent.length > read);
        const actual = link.sent[read++];
        expect(actual, where).toStrictEqual(bind(body, actual, names));
      } else if (kind === "await") {
        await until(`${where}: ${String(body)}`, () => calls.includes(body as string));
      } else if (kind === "quiet") {
        await settle();
        expect(link.sent.slice(read), where).toStrictEqual([]);
      } else if (kind === "closed") {
        link.close();
        await core.closed();
      } else if (kind === "advance_ms") {
        clock.advance(body as number);
      } else {
        throw new Error(`${where}: unknown script entry`);
      }
    }
    await until(`${t.name}: every run to end`, () => !core.busy);
    await settle();
    expect(link.sent.slice(read), `${t.name}: frames the script did not expect`).toStrictEqual([]);
    expect(calls, `${t.name}: calls`).toStrictEqual(t.calls);
  } finally {
    link.close();
    await core.stop(false);
  }
}

const files = readdirSync(DIR).filter((f) => f.endsWith(".json")).sort();

describe("shared transcripts against the TypeScript core", () => {
  it("has the scenarios the two clients must agree on", () => {
    for (const name of ["claim", "run", "steps-replayed", "effect-unknown", "park-with-question", "lease-lost-mid-run", "stale-token", "cancel-mid-run"]) {
      expect(files).toContain(`${name}.json`);
    }
  });

  for (const file of files) {
    const t = JSON.parse(readFileSync(join(DIR, file), "utf8")) as Transcript;
    it(`${file}: ${t.name}`, async () => {
      expect(t.format).toBe(1);
      await replay(t);
    });
  }
});
