// Phase 5: messages taken back (worker/rules/plan/take-back.ts).
import { describe, expect, it } from "vitest";
import { takeBackDue } from "../../worker/rules/plan/take-back.ts";
import { DEFAULT_POLICY, type MessageLease, type MessagePolicy } from "../../worker/rules/message-lease.ts";
import { cancel } from "../../worker/rules/message-cancel.ts";
import { message, NOW, running } from "./plan-fixtures.ts";

const HB: MessagePolicy = { ...DEFAULT_POLICY, heartbeatTimeoutMs: 1000 };

describe("takeBackDue", () => {
  const cases: {
    name: string; open: MessageLease[]; eligible?: string[]; policy?: MessagePolicy;
    after: [number, string][]; revoked: [number, string][]; error: (string | null)[]; deadline?: (string | undefined)[];
  }[] = [
    { name: "a running message of an eligible runner within its deadline stays", open: [running(7, "1")], after: [], revoked: [], error: [] },
    { name: "a runner no longer eligible loses its message, and is told", open: [running(7, "1")], eligible: [], after: [[7, "queued"]], revoked: [[0, "runner_gone"]], error: ["its runner left (disconnected, released the lease or went silent) before finishing"] },
    { name: "a run deadline that passed is taken back from a connected runner", open: [running(7, "1", { expiresAt: NOW })], after: [[7, "queued"]], revoked: [[0, "run_timeout"]], error: ["its run timeout passed before the runner finished"] },
    { name: "a deadline short of the cap was a heartbeat deadline", open: [running(7, "1", { expiresAt: NOW, capAt: NOW + 10 })], policy: HB, after: [[7, "queued"]], revoked: [[0, "heartbeat_timeout"]], error: ["its run sent no heartbeat within the heartbeat timeout"] },
    { name: "the last attempt taken back fails", open: [running(7, "1", { expiresAt: NOW, attempts: 5 })], after: [[7, "failed"]], revoked: [[0, "run_timeout"]], error: ["its run timeout passed before the runner finished"] },
    { name: "a parked message past its deadline fails, nobody told", open: [message(8, { status: "parked", expiresAt: NOW - 1 })], after: [[8, "failed"]], revoked: [], error: ["its park deadline passed before anyone answered"] },
    { name: "a deadline that approves queues it, as the person's answer", open: [message(8, { status: "parked", expiresAt: NOW, onDeadline: "approve" })], after: [[8, "queued"]], revoked: [], error: [null], deadline: ["approve"] },
    { name: "a deadline never settles an unknown outcome", open: [message(8, { status: "parked", expiresAt: NOW, onDeadline: "approve", pendingAsk: "pay" })], after: [[8, "parked"]], revoked: [], error: [null], deadline: [undefined] },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const eligible = new Map((c.eligible ?? ["1"]).map((r) => [r, 0]));
      const out = takeBackDue(new Map(c.open.map((m) => [m.id, m])), new Map([["1", 0]]), eligible, [], c.policy ?? DEFAULT_POLICY, NOW);
      expect(out.takeBacks.map((t) => [t.lease.id, t.lease.status])).toEqual(c.after);
      expect(out.takeBacks.flatMap((t) => (t.revoke ? [[t.revoke.to, t.revoke.reason]] : []))).toEqual(c.revoked);
      expect(out.takeBacks.map((t) => t.error)).toEqual(c.error);
      if (c.deadline) expect(out.takeBacks.map((t) => t.deadline)).toEqual(c.deadline);
    });
  }

  it("a cancelled message's connected runner is told to stop; a gone one is not", () => {
    const by = { account: "a", token: "t", via: "http" };
    const cancelling = [running(7, "1"), running(8, "9")].map((m) => ({ target: m, by, reason: null, verdict: cancel(m) }));
    const out = takeBackDue(new Map(), new Map([["1", 0]]), new Map(), cancelling, DEFAULT_POLICY, NOW);
    expect(out.cancels.map((c) => c.stop)).toEqual([{ to: 0, id: 7, token: 7 }, null]);
  });

  it("a message taken back by its deadline is to avoid the runner it left", () => {
    expect(takeBackDue(new Map([[7, running(7, "1", { expiresAt: NOW })]]), new Map(), new Map([["1", 0]]), [], DEFAULT_POLICY, NOW).avoid).toEqual(new Map([[7, "1"]]));
  });
});
