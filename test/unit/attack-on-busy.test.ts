// Probe (review of the guards merge): on_busy replace reads its whole group, however long the
// queue (open messages are never pruned), so the rule must decide over any length of it.
import { describe, expect, it } from "vitest";
import { decideOnBusy } from "../../worker/rules/on-busy.ts";
import type { MessageLease } from "../../worker/rules/message-lease.ts";

const NOW = 50_000;
const msg = (id: number): MessageLease => ({
  id, status: "queued", attempts: 0, token: 0, runner: null, expiresAt: null, group: "g", runTimeoutMs: null, retryAt: null, capAt: null, pendingAsk: null, onDeadline: null, parkMs: null, forPerson: false, heldSince: NOW - id,
});

describe("on_busy replace over a long queue", () => {
  it("a debounced replace decides over 300 000 queued messages of its group (no argument-list limit), from the oldest burst start", () => {
    const group = Array.from({ length: 300_000 }, (_, i) => msg(i + 1));
    const v = decideOnBusy({ mode: "single", onBusy: "replace", debounceMs: 300, debounceMaxMs: 10_000_000 }, group, "g", NOW);
    expect(v).toMatchObject({ action: "store", heldSince: NOW - 300_000 });
    expect(v.action === "store" && v.supersede.length).toBe(300_000);
  });
});
