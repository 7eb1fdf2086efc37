// A schedule fire that throws halfway: storage rolls back to before the fire, and nothing the fire
// did leaves the object, so a message id and its token are handed out once, by a transaction that
// commits. The slots are then posted one transaction each; a slot that throws again is recorded
// skipped (reason `failed`, with the error) in a write of its own, so a fire that throws every time
// never stops the agent's posts, presence or runners.
// The throw is forced by a stored SQLite trigger (no code of the project is replaced): handing out
// the second slot's message to runner "a" fails, after the first slot's message was handed to it.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { call, claimant, message, settle, stubFor, uniqueAgent, type TestSocket } from "./helpers.ts";
import { advanceClock, freezeClock } from "./clock.ts";

const MIN = 60_000;

async function texts(agent: string): Promise<string[]> {
  return ((await call("GET", `/agents/${agent}/messages`)).body as { messages: { text: string }[] }).messages.map((m) => m.text);
}

async function runnerWithSlots(agent: string, machine: string, slots: number): Promise<{ sock: TestSocket; claimSeq: number }> {
  const { sock, lease } = await claimant(agent, machine);
  sock.send({ type: "hello", concurrency: slots });
  await settle(sock);
  return { sock, claimSeq: lease.claim_seq! };
}

describe("a schedule fire that throws", () => {
  it("hands nothing of the rolled-back fire out; the slots posted again one by one hand each message id and token out once", async () => {
    const agent = uniqueAgent();
    await freezeClock(agent);
    for (const text of ["first", "second"]) expect((await call("POST", `/agents/${agent}/schedules`, { every_seconds: 600, text })).status).toBe(201);
    // The runner connects just before the slots: a connection goes stale one TTL after its last frame.
    await advanceClock(10 * MIN - 1, { agent });
    const { sock: a, claimSeq } = await runnerWithSlots(agent, "a", 2);
    await runInDurableObject(stubFor(agent), (_o, state) => {
      for (const when of ["INSERT", "UPDATE"]) {
        state.storage.sql.exec(`CREATE TRIGGER fail_${when} BEFORE ${when} ON messages WHEN NEW.text = 'second' AND NEW.runner = '${claimSeq}'
          BEGIN SELECT RAISE(ABORT, 'forced: the second slot cannot be handed to a'); END`);
      }
    });
    await advanceClock(1, { agent });
    // After the rollback each slot posts in a transaction of its own: only the second is skipped.
    const views = ((await call("GET", `/agents/${agent}/schedules`)).body as { schedules: { fires: { outcome: string; reason: string | null; message_id: number | null; error?: string }[] }[] }).schedules;
    expect(views[0]!.fires[0]).toMatchObject({ outcome: "posted", reason: null, message_id: expect.any(Number) });
    expect(views[1]!.fires[0]).toMatchObject({ outcome: "skipped", reason: "failed", message_id: null, error: expect.stringMatching(/forced: the second slot/) });
    // The first slot was handed to a by the rolled-back fire too: a sees it once, from the transaction that committed.
    await settle(a);
    const toA = a.framesOf("message").filter((f) => f.run);
    expect(toA.map((f) => [f.id, f.text])).toEqual([[views[0]!.fires[0]!.message_id, "first"]]);
    expect(await message(agent, toA[0]!.id)).toMatchObject({ status: "running", token: toA[0]!.token, attempts: 1 });
    // Later fires run without runner a (the trigger no longer matches) and commit: b takes the first
    // slot's message again (its runner left) and the next slot's.
    a.close();
    await a.waitForClose().catch(() => null);
    await advanceClock(10 * MIN, { agent });
    const { sock: b } = await runnerWithSlots(agent, "b", 2);
    const handed = [await b.next("message", (f) => f.run), await b.next("message", (f) => f.run)];
    const all: MessageFrame[] = [...toA, ...handed];
    expect(new Set(all.map((f) => `${f.id} ${f.attempt}`)).size).toBe(all.length);
    expect(new Set(all.map((f) => f.token)).size).toBe(all.length);
    for (const f of handed) expect(await message(agent, f.id)).toMatchObject({ status: "running", token: f.token, attempts: f.attempt });
    expect(await texts(agent)).toEqual(["first", "first", "second"]);
  });

  it("a slot whose fire throws every time is recorded skipped, and posts, presence and runners keep working; once it stops, the next slot fires", async () => {
    const agent = uniqueAgent();
    await freezeClock(agent);
    const created = await call("POST", `/agents/${agent}/schedules`, { every_seconds: 600, text: "poison" });
    expect(created.status).toBe(201);
    const id = (created.body as { id: number }).id;
    await runInDurableObject(stubFor(agent), (_o, state) => {
      state.storage.sql.exec(`CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ABORT, 'forced: poison'); END`);
      // Ten minutes pass in the object's stored time while it sleeps, as in production: the slot is
      // due when the object wakes, and its constructor fires it.
      const moves = state.storage.kv.get("baton.test_clock.moves") as { at: number; time: number }[];
      state.storage.kv.put("baton.test_clock.moves", [...moves, { at: Date.now(), time: moves.at(-1)!.time + 10 * MIN }]);
    });
    await runInDurableObject(stubFor(agent), (_o, state) => state.abort("asleep")).catch(() => null);
    const posted = await call("POST", `/agents/${agent}/messages`, { text: "plain" }).catch(() => ({ status: -1 }));
    const presence = await call("GET", `/agents/${agent}/presence`).catch(() => ({ status: -1 }));
    expect([posted.status, presence.status]).toEqual([201, 200]);
    const { sock } = await runnerWithSlots(agent, "r", 2);
    expect((await sock.next("message", (f) => f.run)).text).toBe("plain");
    const failed = (await call("GET", `/agents/${agent}/schedules/${id}`)).body as { fires: { slot: number; outcome: string; reason: string; error?: string }[] };
    expect(failed.fires[0]).toMatchObject({ outcome: "skipped", reason: "failed", error: expect.stringMatching(/forced: poison/) });
    // The trigger stays: the alarm's fire of the next slot fails the same way, and the agent still serves.
    sock.close();
    await sock.waitForClose().catch(() => null);
    await advanceClock(10 * MIN, { agent });
    const again = (await call("GET", `/agents/${agent}/schedules/${id}`)).body as { fires: { slot: number; reason: string }[] };
    expect(again.fires.map((f) => f.reason)).toEqual(["failed", "failed"]);
    expect((await call("POST", `/agents/${agent}/messages`, { text: "still" })).status).toBe(201);
    expect((await call("GET", `/agents/${agent}/presence`)).status).toBe(200);
    const { sock: next } = await runnerWithSlots(agent, "s", 3);
    expect((await next.next("message", (f) => f.run && f.text === "still")).text).toBe("still");
    next.close();
    await next.waitForClose().catch(() => null);
    await runInDurableObject(stubFor(agent), (_o, state) => void state.storage.sql.exec(`DROP TRIGGER poison`));
    await advanceClock(10 * MIN, { agent });
    const fired = (await call("GET", `/agents/${agent}/schedules/${id}`)).body as { fires: { outcome: string; message_id: number | null }[] };
    expect(fired.fires[0]).toMatchObject({ outcome: "posted" });
    expect(await message(agent, fired.fires[0]!.message_id!)).toMatchObject({ text: "poison" });
  });
});
