// A schedule fire that throws halfway: storage rolls back to before the fire, and nothing the fire
// did leaves the object, so a message id and its token are handed out once, by the fire that commits.
// The throw is forced by a stored SQLite trigger (no code of the project is replaced): handing out
// the second slot's message to runner "a" fails, after the first slot's message was handed to it.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { call, claimant, message, settle, stubFor, uniqueAgent, type TestSocket } from "./helpers.ts";
import { advanceClock, freezeClock } from "./clock.ts";

const MIN = 60_000;

async function runnerWithSlots(agent: string, machine: string, slots: number): Promise<{ sock: TestSocket; claimSeq: number }> {
  const { sock, lease } = await claimant(agent, machine);
  sock.send({ type: "hello", concurrency: slots });
  await settle(sock);
  return { sock, claimSeq: lease.claim_seq! };
}

describe("a schedule fire that throws", () => {
  it("hands nothing out, and the fire that commits hands each message id and token out once", async () => {
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
    await expect(advanceClock(1, { agent })).rejects.toThrow(/forced: the second slot/);
    // Later fires run without runner a (the trigger no longer matches) and commit: the slots queue.
    a.close();
    await a.waitForClose().catch(() => null);
    const failed = a.framesOf("message");
    await advanceClock(10 * MIN, { agent });
    const { sock: b } = await runnerWithSlots(agent, "b", 2);
    const handed = [await b.next("message", (f) => f.run), await b.next("message", (f) => f.run)];
    const all: MessageFrame[] = [...failed, ...handed].filter((f) => f.run);
    expect(new Set(all.map((f) => f.id)).size).toBe(all.length);
    expect(new Set(all.map((f) => f.token)).size).toBe(all.length);
    expect(failed).toEqual([]);
    expect(handed.map((f) => f.text).sort()).toEqual(["first", "second"]);
    for (const f of handed) expect(await message(agent, f.id)).toMatchObject({ status: "running", token: f.token, attempts: 1 });
  });

  // KNOWN BUG (it.fails: goes red once fixed, then make it `it`): nothing quarantines a slot whose
  // fire throws every time, so each wake (the constructor fires due slots) aborts the object:
  // every request fails and every runner's reconnect is cut, for as long as the slot stays due.
  it.fails("a slot whose fire throws every time leaves the agent usable for posts and presence", async () => {
    const agent = uniqueAgent();
    await freezeClock(agent);
    expect((await call("POST", `/agents/${agent}/schedules`, { every_seconds: 600, text: "poison" })).status).toBe(201);
    await runInDurableObject(stubFor(agent), (_o, state) => {
      state.storage.sql.exec(`CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ABORT, 'forced: poison'); END`);
      // Ten minutes pass in the object's stored time while it sleeps, as in production (an advance
      // that fires in its own turn is discarded with the abort, so it cannot show this).
      const moves = state.storage.kv.get("baton.test_clock.moves") as { at: number; time: number }[];
      state.storage.kv.put("baton.test_clock.moves", [...moves, { at: Date.now(), time: moves.at(-1)!.time + 10 * MIN }]);
    });
    await runInDurableObject(stubFor(agent), (_o, state) => state.abort("asleep")).catch(() => null);
    const posted = await call("POST", `/agents/${agent}/messages`, { text: "plain" }).catch(() => ({ status: -1 }));
    const presence = await call("GET", `/agents/${agent}/presence`).catch(() => ({ status: -1 }));
    expect([posted.status, presence.status]).toEqual([201, 200]);
  });
});
