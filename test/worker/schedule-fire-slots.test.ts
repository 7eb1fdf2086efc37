// A fire whose one slot throws: after the rollback each due slot posts in a transaction of its own,
// so a healthy schedule's slot is posted once (and handed out once) and only the throwing slot is
// recorded skipped `failed`. What the fire threw is kept and webhooked cut to
// LIMITS.scheduleErrorBytes. The throws are forced by stored SQLite triggers (no code replaced).
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AgentCoordinator } from "../../worker/objects/agent-object.ts";
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
