// When the webhook outbox must wake after an event (worker/rules/plan/webhook-wake.ts).
import { describe, expect, it } from "vitest";
import { makesWebhookEvent, webhookWake } from "../../worker/rules/plan/webhook-wake.ts";
import type { MessageChange } from "../../worker/rules/agent-plan.ts";
import type { Transition } from "../../worker/rules/election.ts";
import { message, NOW } from "./plan-fixtures.ts";

const change = (before: MessageChange["before"], status: MessageChange["before"], over: object = {}): MessageChange =>
  ({ kind: "taken_back", id: 1, before, lease: message(1, { status }), failure: null, escalate: false, ended: null, ...over }) as MessageChange;

describe("makesWebhookEvent", () => {
  const cases: [string, MessageChange, boolean][] = [
    ["running to parked", change("running", "parked"), true],
    ["running to failed", change("running", "failed"), true],
    ["queued to cancelled", change("queued", "cancelled"), true],
    ["queued to superseded", change("queued", "superseded", { kind: "superseded", by: 2 }), true],
    ["still parked, escalated", change("parked", "parked", { escalate: true }), true],
    ["running to acknowledged", change("running", "acknowledged"), false],
    ["queued to running", change("queued", "running"), false],
    ["no lease written", { kind: "heartbeat", id: 1, before: "parked", lease: null, expiresAt: null, progress: null }, false],
  ];
  for (const [name, c, makes] of cases) it(name, () => expect(makesWebhookEvent(c)).toBe(makes));
});

describe("webhookWake", () => {
  const w = { dueAt: null, sendsNow: true, keeps: true, outage: { since: null, notified: false }, noHolderAfterMs: 60_000 };
  const lost: Transition = { at: NOW, fromClaim: 1, toClaim: null, fromMachine: "m1", toMachine: null, fence: 2, reason: "stale" };
  it("an event made now wakes the outbox now, unless it would be dropped or no slot is free", () => {
    expect(webhookWake(w, [change("running", "failed")], null, NOW, NOW)).toBe(NOW);
    expect(webhookWake({ ...w, sendsNow: false }, [change("running", "failed")], null, NOW, NOW)).toBeNull();
  });
  it("an outage a transition begins wakes it for agent.no_holder at its threshold", () => {
    expect(webhookWake(w, [], lost, NOW - 500, NOW)).toBe(NOW - 500 + 60_000);
  });
  it("otherwise, the outbox's own next due event", () => {
    expect(webhookWake({ ...w, dueAt: NOW + 7 }, [], null, NOW, NOW)).toBe(NOW + 7);
  });
});
