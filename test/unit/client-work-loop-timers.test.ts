// The work loop's timers end with the handler: a run whose handler threw is failed with its run
// timeout and heartbeat clock already stopped, as one that returned is replied to (and as the
// Python core does), so a slow answer to the fail is never followed by a local "revoked".
import { describe, expect, it } from "vitest";
import type { ClientFrame, MessageFrame } from "../../worker/wire/protocol.ts";
import type { Clock } from "../../client/core/clock.ts";
import type { ServeEvent } from "../../client/core/handler.ts";
import { WorkLoop } from "../../client/core/work-loop.ts";
import type { CoreLink, ReplyFrame } from "../../client/core/writes.ts";

class StillClock implements Clock {
  t = 0;
  private timers: { at: number; fn: () => void }[] = [];
  now(): number {
    return this.t;
  }
  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  }
  advance(ms: number): void {
    this.t += ms;
    for (const due of this.timers.filter((x) => x.at <= this.t)) {
      this.timers = this.timers.filter((x) => x !== due);
      due.fn();
    }
  }
}

/** A link whose requests stay unanswered until the test answers them. */
class HeldLink implements CoreLink {
  readonly isOpen = true;
  readonly ttlMs = 60_000;
  readonly sent: ClientFrame[] = [];
  private readonly waiting: ((f: ReplyFrame) => void)[] = [];
  private n = 0;
  send(): void {}
  request(frame: ClientFrame & { req: string }): Promise<ReplyFrame> {
    this.sent.push(frame);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  nextReq(): string {
    return `r${++this.n}`;
  }
  reconnectNow(): void {}
  answerAll(frame: (req: string) => ReplyFrame): void {
    for (const [i, resolve] of this.waiting.splice(0).entries()) resolve(frame(String(i)));
  }
}

const MESSAGE: MessageFrame = {
  type: "message", id: 7, text: "t", attempt: 1, created_at: 0, run: true, token: 3, run_timeout_ms: 1000, heartbeat_timeout_ms: 500, run_key: "k",
};

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(cond()).toBe(true);
}

describe("work loop timers", () => {
  it("a handler that throws is failed with its run timeout and heartbeat clock stopped", async () => {
    const clock = new StillClock();
    const link = new HeldLink();
    const events: ServeEvent[] = [];
    let signal: AbortSignal | null = null;
    const loop = new WorkLoop({
      agent: "a", link, clock, mayAct: () => true, mayRun: () => true, fence: () => 1, event: (e) => events.push(e),
      handler: (_m, ctx) => {
        signal = ctx.signal;
        throw new Error("boom");
      },
    });
    loop.enqueue(MESSAGE);
    await until(() => link.sent.some((f) => f.type === "fail"));
    // The answer to the fail is slow: both the heartbeat clock and the run timeout pass meanwhile.
    clock.advance(2000);
    expect(events.filter((e) => e.type === "revoked")).toEqual([]);
    expect(signal!.aborted).toBe(false);
    link.answerAll(() => ({ type: "result", op: "fail", id: 7, token: 3, status: "queued", retry_at: null }) as ReplyFrame);
    await until(() => !loop.busy);
  });
});
