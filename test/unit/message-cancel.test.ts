// Cancel as a pure rule, and as an event of planAgent: what each status becomes, who is told to
// stop, and that the freed slot takes the next message in the same plan.
import { describe, expect, it } from "vitest";
import { planAgent, type AgentSnapshot, type Canceller } from "../../worker/rules/agent-plan.ts";
import { cancel } from "../../worker/rules/message-cancel.ts";
import { statusChangeEvent } from "../../worker/rules/webhooks.ts";
import { agentFamilies } from "../../worker/rules/metrics-families.ts";
import { EMPTY_COUNTERS, type AgentMetrics } from "../../worker/rules/metrics.ts";
import { checkMessageWrite, DEFAULT_POLICY, expireDue, retry, type MessageLease, type MessageStatus } from "../../worker/rules/message-lease.ts";

const BUDGET = { steps: 100, bytes: 1 << 20 };
const NO_WEBHOOKS = { dueAt: null, sendsNow: false, keeps: true, outage: { since: null, notified: false }, noHolderAfterMs: null };

const NOW = 100_000;
const msg = (id: number, over: Partial<MessageLease> = {}): MessageLease => ({
  id, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: null, runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: false, ...over,
});
const running = (id: number, runner = "1") => msg(id, { status: "running", runner, token: 40 + id, attempts: 1, expiresAt: NOW + 5000, capAt: NOW + 5000 });
const by: Canceller = { account: "dev", token: "alice", via: "cli" };

describe("cancel (rules/message-cancel.ts)", () => {
  const rows: [string, MessageLease, { outcome: string; status?: MessageStatus; stop?: unknown; code?: string }][] = [
    ["a queued message ends at once; nobody is told", msg(1, { retryAt: NOW + 10 }), { outcome: "cancelled", status: "cancelled", stop: null }],
    ["a parked message ends at once, its deadline and question gone", msg(2, { status: "parked", expiresAt: NOW + 9, onDeadline: "approve", parkMs: 9, pendingAsk: "charge" }), { outcome: "cancelled", status: "cancelled", stop: null }],
    ["a running message ends, and its runner is named with the run's token", running(3, "7"), { outcome: "cancelled", status: "cancelled", stop: { runner: "7", token: 43 } }],
    ["a cancelled message answers the first cancel, unchanged", msg(4, { status: "cancelled", token: 9 }), { outcome: "already", status: "cancelled" }],
    ["an acknowledged message is too late to cancel", msg(5, { status: "acknowledged" }), { outcome: "refused", code: "message_finished" }],
    ["a failed message is too late to cancel", msg(6, { status: "failed" }), { outcome: "refused", code: "message_finished" }],
    ["a rejected message is too late to cancel", msg(7, { status: "rejected" }), { outcome: "refused", code: "message_finished" }],
  ];
  for (const [name, before, expected] of rows) {
    it(name, () => {
      const verdict = cancel(before);
      expect(verdict.outcome).toBe(expected.outcome);
      if (verdict.outcome === "refused") return void expect(verdict.code).toBe(expected.code);
      expect(verdict.message.status).toBe(expected.status);
      if (verdict.outcome === "cancelled") {
        expect(verdict.stop).toEqual(expected.stop);
        expect(verdict.message).toMatchObject({ runner: null, expiresAt: null, capAt: null, retryAt: null, pendingAsk: null, onDeadline: null, token: before.token });
      } else {
        expect(verdict.message).toEqual(before);
      }
    });
  }

  it("the stopped run's token is refused as cancelled, whatever it writes; an older token is still stale", () => {
    const after = cancel(running(3)) as Extract<ReturnType<typeof cancel>, { outcome: "cancelled" }>;
    expect(checkMessageWrite(after.message, 43, "1", NOW)).toMatchObject({ ok: false, code: "cancelled" });
    expect(checkMessageWrite(after.message, 42, "1", NOW)).toMatchObject({ ok: false, code: "stale_token" });
  });

  it("cancelled is final: no retry, no take-back, no deadline moves it", () => {
    const done = msg(4, { status: "cancelled", token: 9, expiresAt: NOW - 1 });
    expect(retry(done)).toMatchObject({ ok: false, code: "cancelled", message: expect.stringMatching(/cancelled message is final/) });
    expect(expireDue([done], NOW, DEFAULT_POLICY)).toEqual([]);
  });
});

function snapshot(open: MessageLease[], slots = 1): AgentSnapshot {
  return {
    now: NOW, ttlMs: 1000, scanMs: 500,
    lease: { fence: 1, holderClaim: 1, holderMachine: "m1", since: 0 },
    conns: [{ conn: { id: "c1", claimSeq: 1, released: false, machine: "m1", joinedAt: 0, lastSeen: NOW, toldHeld: true, toldFence: 1, readySince: 0, slots }, heartbeat: NOW }],
    controls: { paused: false, drained: new Set(), hysteresisMs: 10_000, reserved: null },
    work: { policy: DEFAULT_POLICY, open, parkDeadline: null, due: new Map(), journalBudget: BUDGET },
    claimCounter: 1, tokenCounter: 50, ownDeadlines: [], alarmAt: null, webhooks: NO_WEBHOOKS, runKeys: ["rk-1", "rk-2", "rk-3", "rk-4"],
  };
}

describe("planAgent: a cancel event", () => {
  it("a running message is cancelled, its runner told with the run's token, and the freed slot takes the next message", () => {
    const open = [running(3), msg(4)];
    const plan = planAgent(snapshot(open), { type: "cancel", target: open[0]!, by, reason: "wrong branch" });
    expect(plan.cancel).toMatchObject({ verdict: { outcome: "cancelled", message: { id: 3, status: "cancelled" } }, by, reason: "wrong branch", stop: { to: 0, id: 3, token: 43 } });
    expect(plan.handOuts).toMatchObject([{ lease: { id: 4, status: "running", token: 51 }, to: 0 }]);
    expect(plan.takeBacks).toEqual([]);
  });

  it("a cancelled message no longer holds back its group", () => {
    const open = [running(3), msg(4, { group: "g" }), msg(5, { group: "g" })];
    open[0] = { ...open[0]!, group: "g" };
    const plan = planAgent(snapshot(open, 2), { type: "cancel", target: open[0]!, by, reason: null });
    expect(plan.handOuts.map((h) => h.lease.id)).toEqual([4]);
  });

  it("a queued message outside the dispatch window is cancelled all the same, and nobody is told", () => {
    const plan = planAgent(snapshot([]), { type: "cancel", target: msg(900), by, reason: null });
    expect(plan.cancel).toMatchObject({ verdict: { outcome: "cancelled" }, stop: null });
    expect(plan.handOuts).toEqual([]);
  });

  it("a running message whose runner is gone is cancelled with nobody to tell", () => {
    const open = [running(3, "9")];
    const plan = planAgent(snapshot(open), { type: "cancel", target: open[0]!, by, reason: null });
    expect(plan.cancel).toMatchObject({ verdict: { outcome: "cancelled" }, stop: null });
    expect(plan.takeBacks).toEqual([]);
  });

  it("a finished message refuses the cancel and the plan changes nothing about it", () => {
    const plan = planAgent(snapshot([]), { type: "cancel", target: msg(5, { status: "acknowledged" }), by, reason: null });
    expect(plan.cancel).toMatchObject({ verdict: { outcome: "refused", code: "message_finished" }, stop: null });
  });
});

describe("the webhook event of a cancel", () => {
  const facts = { id: 3, status: "cancelled" as const, text: "deploy", attempts: 1, expires_at: null, pending_ask: null, error: null, question: null, on_deadline: null };
  it("moving to cancelled makes message.cancelled with who, from where, why, and what it was", () => {
    const cancelRecord = JSON.stringify({ at: 1, account: "dev", token: "alice", via: "page", reason: "wrong branch" });
    expect(statusChangeEvent("running", { ...facts, cancel: cancelRecord })).toEqual({
      type: "message.cancelled", message: { id: 3, text_preview: "deploy", text_truncated: false, attempts: 1, reason: "wrong branch", by: "alice", via: "page", was: "running" },
    });
  });
  it("staying cancelled makes nothing", () => {
    expect(statusChangeEvent("cancelled", facts)).toBeNull();
  });
});

describe("the metric of cancels", () => {
  const agent = (cancelled?: number): AgentMetrics => ({
    agent: "reviewer", reported_at: 0, connections: 1, holders: 1, standbys: 0, fence: 1,
    counters: { transitions: {}, gapSeconds: EMPTY_COUNTERS.gapSeconds, refusals: {} },
    messages: { byStatus: {}, posted: 3, deliveries: 3, redeliveries: 0, ...(cancelled === undefined ? {} : { cancelled }) },
  });
  it("baton_messages_cancelled_total counts cancels per agent, 0 from a coordinator that reports none", () => {
    const family = agentFamilies([agent(2), { ...agent(), agent: "old" }]).find((f) => f.name === "baton_messages_cancelled_total")!;
    expect(family.type).toBe("counter");
    expect(family.samples).toEqual([{ labels: { agent: "reviewer" }, value: 2 }, { labels: { agent: "old" }, value: 0 }]);
  });
});
