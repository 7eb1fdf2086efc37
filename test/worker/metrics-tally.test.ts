// The message tally's one rule of redeliveries (objects/metrics-agent.ts): every hand-out of a
// message but its first, and but one right after a hand-out a stopping runner declined. Counted
// live by SQLite triggers as the store writes each lease the rules give, and counted again from the
// stored messages alone, as an agent from before metrics starts its tally (the backfill).
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MessageStore } from "../../worker/objects/message-store.ts";
import { leaseOf } from "../../worker/objects/message-row.ts";
import { AgentMetricsKeeper } from "../../worker/objects/metrics-agent.ts";
import { redeliveriesOf } from "../../worker/rules/metrics.ts";
import { decline, DEFAULT_POLICY, failAttempt, lease, retry, type MessageLease } from "../../worker/rules/message-lease.ts";
import { stubFor, uniqueAgent } from "./helpers.ts";

const KEEPS_TRYING = { ...DEFAULT_POLICY, maxAttempts: 100 };
const ONE_TRY = { ...DEFAULT_POLICY, maxAttempts: 1 };

/**
 * Each letter a step of one message: r a hand-out that runs and fails (queued again), f one that
 * runs and fails for good, d one a stopping runner declines, R a person's retry of the failed message.
 */
function play(store: MessageStore, history: string, now: number): void {
  const row = store.insert({ id: store.lastIssuedId() + 1, text: history, createdAt: now, group: null, runTimeoutMs: null, holdUntil: null, heldSince: null, first: false, forPerson: false, traceparent: null, key: null });
  let m: MessageLease = leaseOf(row);
  const save = (next: MessageLease) => (m = leaseOf(store.saveLease(next)));
  for (const step of history) {
    if (step === "R") {
      const retried = retry(m);
      if (!retried.ok) throw new Error(retried.message);
      save(retried.message);
      continue;
    }
    save(lease(m, "runner", m.token + 1, now, KEEPS_TRYING));
    save(step === "d" ? decline(m) : failAttempt(m, now, step === "f" ? ONE_TRY : KEEPS_TRYING));
  }
}

function redeliveries(sql: SqlStorage): number {
  return sql.exec<{ value: number }>(`SELECT value FROM message_tally WHERE key = 'redeliveries'`).one().value;
}

/** The tally started again from the stored messages, as for an agent from before metrics (no tally, no marks of declines). */
function backfilled(sql: SqlStorage): number {
  sql.exec(`DROP TABLE message_tally`);
  sql.exec(`DROP TABLE tally_declined_last`);
  sql.exec(`DELETE FROM schema_versions WHERE store = 'message_tally'`);
  new AgentMetricsKeeper(sql);
  return redeliveries(sql);
}

describe("redeliveries, live and backfilled", () => {
  const histories: [string, number][] = [
    ["r", 0], ["rr", 1], ["dr", 0], ["ddr", 0], ["rdr", 1], ["rrdrr", 3], ["rdrdr", 2], ["rfRr", 2], ["rfRdr", 2], ["rfRdrr", 3],
  ];
  for (const [history, expected] of histories) {
    it(`${history}: ${expected} redeliveries, counted live and from the stored message alike`, async () => {
      await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
        const { sql } = state.storage;
        const store = new MessageStore(sql);
        new AgentMetricsKeeper(sql);
        play(store, history, 1000);
        expect(redeliveries(sql)).toBe(expected);
        expect(backfilled(sql)).toBe(expected);
        // The rule as the chaos checks count it, from the message's view.
        expect(redeliveriesOf(store.get(1)!)).toBe(expected);
      });
    });
  }

  it("a decline's mark lasts until the next hand-out, or until its message is deleted", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      const store = new MessageStore(sql);
      new AgentMetricsKeeper(sql);
      const marks = () => sql.exec<{ message_id: number }>(`SELECT message_id FROM tally_declined_last ORDER BY message_id`).toArray().map((r) => r.message_id);
      play(store, "rd", 1000);
      play(store, "rdr", 1000);
      play(store, "dd", 1000);
      expect(marks()).toEqual([1, 3]);
      sql.exec(`DELETE FROM messages WHERE id IN (1, 3)`);
      expect(marks()).toEqual([]);
    });
  });

  it("a message whose latest hand-out was declined, not handed out since, counts one more live than its stored counts can show; its next hand-out evens the backfilled tally with the live one", async () => {
    await runInDurableObject(stubFor(uniqueAgent()), (_i, state) => {
      const { sql } = state.storage;
      const store = new MessageStore(sql);
      new AgentMetricsKeeper(sql);
      play(store, "rd", 1000);
      expect(redeliveries(sql)).toBe(1);
      expect(backfilled(sql)).toBe(0);
      // Without the decline's mark, the next hand-out counts: "rdr", 1, as a tally live throughout counts it.
      const [m] = store.pages.range(0, store.pages.lastId());
      store.saveLease(lease(leaseOf(m!), "runner", m!.token + 1, 2000, KEEPS_TRYING));
      expect(redeliveries(sql)).toBe(1);
    });
  });
});
