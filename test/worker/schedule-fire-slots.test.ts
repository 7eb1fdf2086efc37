// A fire whose one slot throws: after the rollback each due slot posts in a transaction of its own,
// so a healthy schedule's slot is posted once (and handed out once) and only the throwing slot is
// recorded skipped `failed`. What the fire threw is kept and webhooked cut to
// LIMITS.scheduleErrorBytes. A schedule whose record throws too is left undecided, so a later fire
// posts it: no slot is lost without a record. A slot whose message already exists is recorded with
// it, never as failed. The throws are forced by stored SQLite triggers (no code replaced).
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AgentCoordinator } from "../../worker/objects/agent-object.ts";
import { slotKey } from "../../worker/rules/schedules.ts";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { call, claimant, message, settle, stubFor, uniqueAgent } from "./helpers.ts";
import { advanceClock, freezeClock } from "./clock.ts";

const MIN = 60_000;
const HOOK = { url: "http://receiver.test/status/503", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" };

type Fire = { slot: number; outcome: string; reason: string | null; message_id: number | null; error?: string };

async function addSchedule(agent: string, text: string): Promise<number> {
  const res = await call("POST", `/agents/${agent}/schedules`, { every_seconds: 600, text });
  expect(res.status).toBe(201);
  return (res.body as { id: number }).id;
}

async function fires(agent: string, id: number): Promise<Fire[]> {
  return ((await call("GET", `/agents/${agent}/schedules/${id}`)).body as { fires: Fire[] }).fires;
}

async function texts(agent: string): Promise<string[]> {
  return ((await call("GET", `/agents/${agent}/messages`)).body as { messages: { text: string }[] }).messages.map((m) => m.text);
}

async function outbox(agent: string): Promise<{ type: string; facts: Record<string, unknown> }[]> {
  const rows = await runInDurableObject(stubFor(agent), (_o, state) => state.storage.sql
    .exec<{ type: string; facts: string }>(`SELECT type, facts FROM webhook_outbox ORDER BY seq`).toArray());
  return rows.map((r) => ({ type: r.type, facts: JSON.parse(r.facts) as Record<string, unknown> }));
}

/** A stored trigger that makes storing a message with this text throw `message`. */
async function poison(agent: string, text: string, message: string): Promise<void> {
  await runInDurableObject(stubFor(agent), (_o, state) => void state.storage.sql.exec(
    `CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.text = '${text}' BEGIN SELECT RAISE(ABORT, '${message}'); END`,
  ));
}

/** A stored trigger that makes recording a fire throw when `when` holds of the new row. */
async function unrecordable(agent: string, when: string): Promise<void> {
  await runInDurableObject(stubFor(agent), (_o, state) => void state.storage.sql.exec(
    `CREATE TRIGGER unrecordable BEFORE INSERT ON schedule_fires WHEN ${when} BEGIN SELECT RAISE(ABORT, 'forced: cannot record'); END`,
  ));
}

async function lastSlot(agent: string, id: number): Promise<number | null> {
  return ((await call("GET", `/agents/${agent}/schedules/${id}`)).body as { last_slot: number | null }).last_slot;
}

/** A message posted with `key` (a slot's key: the slot then finds its message already posted). */
async function postWithKey(agent: string, text: string, key: string): Promise<number> {
  const posted = await runInDurableObject(stubFor(agent), (o: AgentCoordinator) => o.post(text, { key, by: { account: "dev", token: "t", via: "http" } }));
  return (posted as { view: { id: number } }).view.id;
}

describe("a fire with one slot that throws", () => {
  it("posts the healthy schedule's slot once, hands it out once, records only the throwing slot skipped failed; an alarm run again posts nothing twice", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/webhook`, HOOK)).status).toBe(200);
    const start = await freezeClock(agent);
    const healthy = await addSchedule(agent, "healthy");
    const poisoned = await addSchedule(agent, "poisoned");
    await poison(agent, "poisoned", "forced: poisoned");
    await advanceClock(10 * MIN - 1, { agent });
    const { sock } = await claimant(agent, "r");
    sock.send({ type: "hello", concurrency: 2 });
    await settle(sock);
    await advanceClock(1, { agent });
    const slot = start + 10 * MIN;
    const [ok] = await fires(agent, healthy);
    expect(ok).toMatchObject({ slot, outcome: "posted", reason: null, message_id: expect.any(Number) });
    expect((await fires(agent, poisoned))[0]).toMatchObject({ slot, outcome: "skipped", reason: "failed", message_id: null, error: expect.stringMatching(/forced: poisoned/) });
    expect(await texts(agent)).toEqual(["healthy"]);
    // Handed out once, by the transaction that committed: the frame's token is the stored one.
    await settle(sock);
    const handed = await sock.next("message", (f) => f.run);
    expect(handed).toMatchObject({ id: ok!.message_id, text: "healthy" });
    expect(sock.framesOf("message").filter((f) => f.run)).toEqual([]);
    expect(await message(agent, handed.id)).toMatchObject({ status: "running", token: handed.token, attempts: 1 });
    const firstOutbox = await outbox(agent);
    expect(firstOutbox.map((e) => [e.type, e.facts.schedule, e.facts.reason ?? null])).toEqual([
      ["schedule.fired", { id: healthy, slot, late_ms: 0 }, null],
      ["schedule.skipped", { id: poisoned, slot, last_slot: slot, count: 1 }, "failed"],
    ]);
    // The alarm handler runs again at the same time (a retried alarm): both slots are decided.
    await runInDurableObject(stubFor(agent), async (o: AgentCoordinator) => {
      await o.alarm();
      await o.alarm();
    });
    await settle(sock);
    expect(await texts(agent)).toEqual(["healthy"]);
    expect(sock.framesOf("message").filter((f) => f.run)).toEqual([]);
    expect(await fires(agent, healthy)).toEqual([ok]);
    expect((await fires(agent, poisoned)).length).toBe(1);
    expect(await outbox(agent)).toEqual(firstOutbox);
    sock.close();
    await sock.waitForClose().catch(() => null);
  });

  it("when recording a schedule's failed slot throws too, the other schedule's slot posts once and the failing one is left due until a fire posts it", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const healthy = await addSchedule(agent, "healthy");
    const stuck = await addSchedule(agent, "stuck");
    await poison(agent, "stuck", "forced: stuck");
    await unrecordable(agent, `NEW.schedule_id = ${stuck}`);
    await advanceClock(10 * MIN, { agent });
    const slot = start + 10 * MIN;
    expect(await fires(agent, healthy)).toMatchObject([{ slot, outcome: "posted" }]);
    expect(await fires(agent, stuck)).toEqual([]);
    expect(await lastSlot(agent, stuck)).toBe(null);
    expect(await texts(agent)).toEqual(["healthy"]);
    await runInDurableObject(stubFor(agent), (_o, state) => {
      state.storage.sql.exec(`DROP TRIGGER poison`);
      state.storage.sql.exec(`DROP TRIGGER unrecordable`);
    });
    await advanceClock(1, { agent });
    expect(await fires(agent, stuck)).toMatchObject([{ slot, outcome: "posted", message_id: expect.any(Number) }]);
    expect(await lastSlot(agent, stuck)).toBe(slot);
    expect(await fires(agent, healthy)).toMatchObject([{ slot, outcome: "posted" }]);
    expect(await texts(agent)).toEqual(["healthy", "stuck"]);
  });

  it("a slot whose message already exists is never recorded failed: left due while its record throws, then recorded with its message", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const id = await addSchedule(agent, "again");
    const slot = start + 10 * MIN;
    const early = await postWithKey(agent, "again", slotKey(id, slot));
    await unrecordable(agent, `NEW.schedule_id = ${id} AND NEW.outcome = 'posted'`);
    await advanceClock(10 * MIN, { agent });
    expect(await fires(agent, id)).toEqual([]);
    expect(await lastSlot(agent, id)).toBe(null);
    await runInDurableObject(stubFor(agent), (_o, state) => void state.storage.sql.exec(`DROP TRIGGER unrecordable`));
    await advanceClock(1, { agent });
    expect(await fires(agent, id)).toMatchObject([{ slot, outcome: "posted", reason: null, message_id: early }]);
    expect(await texts(agent)).toEqual(["again"]);
  });

  it("records a slot whose message already exists with that message when its schedule's other slot throws", async () => {
    const agent = uniqueAgent();
    const start = await freezeClock(agent);
    const id = await addSchedule(agent, "again");
    const early = await postWithKey(agent, "again", slotKey(id, start + 10 * MIN));
    await poison(agent, "again", "forced: again");
    // Both slots fall due in one fire: the first already posted, the second throws.
    await advanceClock(20 * MIN, { agent });
    expect(await fires(agent, id)).toMatchObject([
      { slot: start + 20 * MIN, outcome: "skipped", reason: "failed", message_id: null, error: expect.stringMatching(/forced: again/) },
      { slot: start + 10 * MIN, outcome: "posted", reason: null, message_id: early },
    ]);
    expect(await texts(agent)).toEqual(["again"]);
  });

  it(`keeps and webhooks what a fire threw cut to ${LIMITS.scheduleErrorBytes} bytes of UTF-8, on a character boundary, with an ellipsis`, async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/webhook`, HOOK)).status).toBe(200);
    await freezeClock(agent);
    const id = await addSchedule(agent, "poisoned");
    // 10 KiB and more of 3-byte characters after a 7-byte start: no cut at 500 bytes falls on a character's end.
    const thrown = `forced:${"€".repeat(3500)}`;
    await poison(agent, "poisoned", thrown);
    await advanceClock(10 * MIN, { agent });
    const capped = `forced:${"€".repeat(163)}…`;
    expect(new TextEncoder().encode(capped).length).toBe(499);
    expect((await fires(agent, id))[0]).toMatchObject({ outcome: "skipped", reason: "failed", error: capped });
    const stored = await runInDurableObject(stubFor(agent), (_o, state) => state.storage.sql
      .exec<{ error: string }>(`SELECT error FROM schedule_fires WHERE schedule_id = ?`, id).one().error);
    expect(stored).toBe(capped);
    const skipped = (await outbox(agent)).filter((e) => e.type === "schedule.skipped");
    expect(skipped.map((e) => e.facts.error)).toEqual([capped]);
  });

  it("shows a failed fire recorded before the cap (its whole error stored) at the cap", async () => {
    const agent = uniqueAgent();
    await freezeClock(agent);
    const id = await addSchedule(agent, "old");
    await runInDurableObject(stubFor(agent), (_o, state) => void state.storage.sql.exec(
      `INSERT INTO schedule_fires (schedule_id, slot, outcome, at, message_id, reason, error, count, last_slot) VALUES (?, 1, 'skipped', 1, NULL, 'failed', ?, 1, 1)`,
      id, `forced:${"€".repeat(3500)}`,
    ));
    expect((await fires(agent, id))[0]).toMatchObject({ reason: "failed", error: `forced:${"€".repeat(163)}…` });
  });
});
