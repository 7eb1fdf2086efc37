// A serve that is stopping (SIGTERM) runs nothing more: a hand-out the coordinator sent before it
// read the runner's hello {stopping} arrives while the runs stop, and its handler never starts
// (as the Python core's work.stopping keeps it from starting); it declines it instead, ahead of its
// release, so the message goes back to the queue without costing an attempt.
import { describe, expect, it } from "vitest";
import type { ClientFrame, MessageFrame } from "../../worker/wire/protocol.ts";
import type { Clock } from "../../client/core/clock.ts";
import type { MessageHandler } from "../../client/core/handler.ts";
import { ServeCore } from "../../client/core/serve-core.ts";
import type { CoreLink, ReplyFrame } from "../../client/core/writes.ts";

const stillClock: Clock = { now: () => 0, after: () => () => {} };

/** A link that records what is sent and answers the release when the test says so. */
class RecordingLink implements CoreLink {
  readonly isOpen = true;
  readonly ttlMs = 60_000;
  readonly sent: ClientFrame[] = [];
  private release: ((f: ReplyFrame) => void) | null = null;
  private n = 0;
  send(frame: ClientFrame): void {
    this.sent.push(frame);
  }
  request(frame: ClientFrame & { req: string }): Promise<ReplyFrame> {
    this.sent.push(frame);
    if (frame.type === "serve_lease" && frame.op === "release") return new Promise((resolve) => (this.release = resolve));
    return new Promise(() => {});
  }
  nextReq(): string {
    return `r${++this.n}`;
  }
  reconnectNow(): void {}
  answerRelease(released = true): void {
    this.release?.({ type: "result", op: "release", released } as ReplyFrame);
  }
}

const HAND_OUT: MessageFrame = {
  type: "message", id: 9, text: "posted just before the stop", attempt: 1, created_at: 0, run: true, token: 4, run_timeout_ms: 60_000, heartbeat_timeout_ms: 30_000, run_key: "k",
};

const tick = () => new Promise((r) => setTimeout(r, 5));

/** A holder with one slot: message 8 runs under `handler`, message 9 waits for the slot. */
async function holdingTwo(handler: MessageHandler) {
  const link = new RecordingLink();
  const core = new ServeCore({ agent: "a", link, clock: stillClock, runnerId: "r", handler });
  core.opened(0);
  core.receive({ type: "serve_lease", held: true, fence: 1, machine: "m", ttl_ms: 60_000 } as never);
  core.receive({ ...HAND_OUT, id: 8, token: 3 });
  core.receive(HAND_OUT);
  await tick();
  return { link, core };
}

describe("a stopping serve", () => {
  it("never starts a hand-out that arrives after it said it is stopping", async () => {
    const link = new RecordingLink();
    const started: number[] = [];
    const core = new ServeCore({ agent: "a", link, clock: stillClock, runnerId: "r", handler: (m) => void started.push(m.id) });
    core.opened(0);
    core.receive({ type: "serve_lease", held: true, fence: 1, machine: "m", ttl_ms: 60_000 } as never);
    const stopping = core.stop(true);
    expect(link.sent).toContainEqual({ type: "hello", stopping: true });
    core.receive(HAND_OUT);
    await tick();
    link.answerRelease();
    await stopping;
    await tick();
    expect(started).toEqual([]);
  });

  it("declines a hand-out that arrives after it said it is stopping, before it releases", async () => {
    const link = new RecordingLink();
    const core = new ServeCore({ agent: "a", link, clock: stillClock, runnerId: "r", handler: () => {} });
    core.opened(0);
    core.receive({ type: "serve_lease", held: true, fence: 1, machine: "m", ttl_ms: 60_000 } as never);
    const stopping = core.stop(true);
    core.receive(HAND_OUT);
    await tick();
    link.answerRelease();
    await stopping;
    const declines = link.sent.filter((f) => f.type === "decline");
    expect(declines).toEqual([{ type: "decline", id: 9, token: 4, req: expect.any(String) }]);
    expect(link.sent.indexOf(declines[0]!)).toBeLessThan(link.sent.findIndex((f) => f.type === "serve_lease" && f.op === "release"));
  });

  it("declines a hand-out still waiting for a slot when the stop began; the one running is stopped, not declined", async () => {
    const { link, core } = await holdingTwo((_m, { signal }) => new Promise<void>((r) => signal.addEventListener("abort", () => r())));
    const stopping = core.stop(true);
    await tick();
    link.answerRelease();
    await stopping;
    expect(link.sent.filter((f) => f.type === "decline").map((f) => f.type === "decline" && f.id)).toEqual([9]);
  });

  it("declines what never started at once, while a handler that ignores its abort still runs", async () => {
    let finish = () => {};
    const { link, core } = await holdingTwo(() => new Promise<void>((r) => (finish = r)));
    const stopping = core.stop(true);
    await tick();
    // The handler of 8 has not settled, yet 9 is already given back (and nothing is released yet).
    expect(link.sent.filter((f) => f.type === "decline").map((f) => f.type === "decline" && f.id)).toEqual([9]);
    expect(link.sent.some((f) => f.type === "serve_lease" && f.op === "release")).toBe(false);
    finish();
    await tick();
    link.answerRelease();
    await stopping;
  });

  it("declines nothing when it never said it is stopping (stopped without a release)", async () => {
    const link = new RecordingLink();
    const core = new ServeCore({ agent: "a", link, clock: stillClock, runnerId: "r", handler: () => {} });
    core.opened(0);
    await core.stop(false);
    core.receive(HAND_OUT);
    await tick();
    expect(link.sent.filter((f) => f.type === "decline" || f.type === "hello")).toEqual([]);
  });

  it("reports the lease released when the coordinator handed it on because it said it is stopping, though its release then finds nothing", async () => {
    for (const handedOn of [true, false]) {
      const link = new RecordingLink();
      const events: string[] = [];
      const core = new ServeCore({ agent: "a", link, clock: stillClock, runnerId: "r", handler: () => {}, onEvent: (e) => void events.push(e.type) });
      core.opened(0);
      core.receive({ type: "serve_lease", held: true, fence: 1, machine: "m", ttl_ms: 60_000 } as never);
      const stopping = core.stop(true);
      if (handedOn) core.receive({ type: "serve_lease", held: false, fence: 2, machine: "m", ttl_ms: 60_000, position: 2 } as never);
      await tick();
      link.answerRelease(false);
      await stopping;
      expect(events.includes("released")).toBe(handedOn);
    }
  });
});
