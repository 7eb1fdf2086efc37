// The webhook outbox's choices (worker/rules/webhook-outbox-plan.ts), as tables: what a claimed
// batch does, what one attempt leaves, how many may be claimed, when the outbox wakes.
import { describe, expect, it } from "vitest";
import { ACCOUNT_RETRY_MS, claimRoom, outboxWake, planAttempt, planDelivery } from "../../worker/rules/webhook-outbox-plan.ts";
import { WEBHOOK } from "../../worker/rules/webhooks.ts";

const NOW = 1_000_000;
const CONFIG = { url: "https://hooks.example/x" };

describe("planDelivery", () => {
  const cases: [string, Parameters<typeof planDelivery>[0], object][] = [
    ["the account's webhook could not be read: put back for a while, no attempt counted", { answered: false }, { action: "postpone", at: NOW + ACCOUNT_RETRY_MS }],
    ["nobody is configured: discarded", { answered: true, config: null, refused: null }, { action: "discard" }],
    ["a URL the exposure rules refuse now: a failed attempt, sent nowhere", { answered: true, config: CONFIG, refused: "a private address" }, { action: "refuse", error: "not sent: a private address" }],
    ["a receiver: sent", { answered: true, config: CONFIG, refused: null }, { action: "send", config: CONFIG }],
  ];
  for (const [name, target, plan] of cases) it(name, () => expect(planDelivery(target, NOW)).toEqual(plan));
});

describe("planAttempt", () => {
  const cases: [string, { createdAt: number; attempts: number }, number | null, object][] = [
    ["a 2xx delivers", { createdAt: NOW, attempts: 0 }, 204, { attempts: 1, verdict: { kind: "delivered" }, counts: { delivered: 1, failed: 0, dropped: 0 } }],
    ["a 500 retries after the first backoff", { createdAt: NOW, attempts: 0 }, 500, { attempts: 1, verdict: { kind: "retry", at: NOW + WEBHOOK.firstRetryMs }, counts: { delivered: 0, failed: 1, dropped: 0 } }],
    ["no answer, third attempt: the wait doubles twice", { createdAt: NOW, attempts: 2 }, null, { attempts: 3, verdict: { kind: "retry", at: NOW + 4 * WEBHOOK.firstRetryMs }, counts: { delivered: 0, failed: 1, dropped: 0 } }],
    ["a day old: given up", { createdAt: NOW - WEBHOOK.giveUpMs, attempts: 9 }, 503, { attempts: 10, verdict: { kind: "dropped" }, counts: { delivered: 0, failed: 1, dropped: 1 } }],
  ];
  for (const [name, event, status, out] of cases) it(name, () => expect(planAttempt(event, status, NOW)).toEqual(out));
});

describe("claimRoom and outboxWake", () => {
  it("claims up to WEBHOOK.batch in flight, never fewer than none", () => {
    expect([claimRoom(0), claimRoom(WEBHOOK.batch - 1), claimRoom(WEBHOOK.batch), claimRoom(WEBHOOK.batch + 3)]).toEqual([WEBHOOK.batch, 1, 0, 0]);
  });
  const none = { since: null, notified: false };
  it("wakes at the next due event, or while no slot is free at the next one still ahead; the no-holder report if sooner", () => {
    expect(outboxWake({ sending: 0, nextDue: NOW, nextAfterNow: null, outage: none, noHolderAfterMs: null })).toBe(NOW);
    expect(outboxWake({ sending: WEBHOOK.batch, nextDue: null, nextAfterNow: NOW + 15_000, outage: none, noHolderAfterMs: null })).toBe(NOW + 15_000);
    expect(outboxWake({ sending: 0, nextDue: NOW + 9_000, nextAfterNow: null, outage: { since: NOW - 55_000, notified: false }, noHolderAfterMs: 60_000 })).toBe(NOW + 5_000);
    expect(outboxWake({ sending: 0, nextDue: null, nextAfterNow: null, outage: { since: NOW, notified: true }, noHolderAfterMs: 60_000 })).toBeNull();
  });
});
