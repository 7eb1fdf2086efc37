// Frames answered by one frame (worker/rules/plan/reply.ts), and the replies the full plan makes to
// a new connection and a stale frame: each leaves as a frame effect to its sender, named by id.
import { describe, expect, it } from "vitest";
import { planAgent, type AgentSnapshot } from "../../worker/rules/agent-plan.ts";
import { DEFAULT_POLICY } from "../../worker/rules/message-lease.ts";
import { isReplyEvent, replyEffects, type ReplyEvent } from "../../worker/rules/plan/reply.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { conn, CONTROLS, HELD, NOW, running, TTL } from "./plan-fixtures.ts";

/** Claim 1 holds and runs message 7; claim 2 waits. */
function snapshot(heartbeats: [number, number] = [NOW, NOW]): AgentSnapshot {
  return {
    now: NOW, ttlMs: TTL, scanMs: 500, lease: HELD,
    conns: [{ conn: conn(1, { toldHeld: true, toldFence: 1 }), heartbeat: heartbeats[0] }, { conn: conn(2, { toldHeld: false, toldFence: 1 }), heartbeat: heartbeats[1] }],
    controls: CONTROLS,
    work: { policy: DEFAULT_POLICY, open: [running(7, "1")], parkDeadline: null, due: new Map(), journalBudget: { steps: 100, bytes: 1 << 20 } },
    claimCounter: 2, tokenCounter: 7, ownDeadlines: [], alarmAt: null, runKeys: ["rk-1", "rk-2"],
    webhooks: { dueAt: null, sendsNow: false, keeps: true, outage: { since: null, notified: false }, noHolderAfterMs: null },
  };
}

describe("reply events", () => {
  const cases: { event: ReplyEvent; frame: object }[] = [
    { event: { type: "ping", from: "c2" }, frame: { type: "pong" } },
    { event: { type: "rate_limited", from: "c2" }, frame: { type: "error", code: "rate_limited", message: `at most ${LIMITS.framesPerSecond} frames and ${LIMITS.frameCharsPerSecond} characters per second` } },
    { event: { type: "bad_frame", from: "c2", code: "frame_too_large", message: "too big", req: "r1" }, frame: { type: "error", code: "frame_too_large", message: "too big", req: "r1" } },
    { event: { type: "sync_refused", from: "c2", retryAfterMs: 250, req: "s" }, frame: { type: "error", code: "rate_limited", message: "sync replay budget exceeded; ask again in 250 ms", req: "s" } },
  ];
  for (const { event, frame } of cases) {
    it(`${event.type}: one frame to its sender by id and nothing else, the same whether planned over a snapshot or applied without one`, () => {
      expect(isReplyEvent(event)).toBe(true);
      const plan = planAgent(snapshot(), event);
      expect(plan.effects).toEqual([{ type: "frame", to: "c2", frame }]);
      expect(replyEffects(event)).toEqual(plan.effects);
      expect([plan.presenceChanged, plan.alarm, plan.changes, plan.leaseChanged]).toEqual([false, null, [], false]);
    });
  }

  it("no other event is a reply event", () => {
    expect([{ type: "alarm" } as const, { type: "stale_frame", from: "c1" } as const, { type: "opened", from: "c1", agent: "a" } as const].some(isReplyEvent)).toBe(false);
  });
});

describe("replies of the full plan", () => {
  it("a new connection is welcomed (its agent, the TTL, the limits) before any other frame of its open", () => {
    const plan = planAgent(snapshot(), { type: "opened", from: "c2", agent: "reviewer" });
    const frames = plan.effects.filter((e) => e.type === "frame" || e.type === "tell" || e.type === "message");
    expect(frames[0]).toEqual({ type: "frame", to: "c2", frame: { type: "welcome", agent: "reviewer", heartbeat_ttl_ms: TTL, limits: LIMITS } });
  });

  it("a new connection that closed before its open was planned gets no welcome: its open is work", () => {
    const plan = planAgent(snapshot(), { type: "opened", from: "c9", agent: "reviewer" });
    expect(plan.effects.filter((e) => e.type === "frame")).toEqual([]);
  });

  it("a stale frame is told lease_expired before its connection is closed, and every effect names connections by id", () => {
    const plan = planAgent(snapshot([NOW - TTL - 1, NOW]), { type: "stale_frame", from: "c1" });
    const told = plan.effects.findIndex((e) => e.type === "frame" && e.frame.type === "error" && e.frame.code === "lease_expired" && e.to === "c1");
    const closed = plan.effects.findIndex((e) => e.type === "close" && e.to === "c1");
    expect(told).toBeGreaterThanOrEqual(0);
    expect(closed).toBeGreaterThan(told);
    for (const e of plan.effects) if ("to" in e) expect(["c1", "c2"]).toContain(e.to);
  });
});
