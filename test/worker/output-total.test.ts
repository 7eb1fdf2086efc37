// The agent's stored total of kept output bytes (output-store.ts message_output_total), which the
// agent's budget reads on every batch instead of summing the heads: it equals the heads' sum after
// appends, drops for the message's budget and for the agent's, history pruning and a rolled-back
// write, and its migration starts it from the heads an object already has.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { OutputStore } from "../../worker/objects/output-store.ts";
import { call, claimant, post, stubFor, uniqueAgent, write, type TestSocket } from "./helpers.ts";

const KIB = 1024;
const block = (i: number) => `${String(i).padStart(4, "0")}${"x".repeat(8 * KIB - 4)}`;

function run(sock: TestSocket, id: number): Promise<MessageFrame> {
  return sock.next("message", (f) => f.run && f.id === id);
}

async function writeBlocks(sock: TestSocket, m: MessageFrame, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await write(sock, { type: "output", id: m.id, token: m.token, chunks: [{ stream: "stdout", text: block(i) }] });
}

/** The stored total beside the heads' sum, and which messages have heads, read in the object itself. */
function kept(agent: string) {
  return runInDurableObject(stubFor(agent), (_, state) => {
    const { sql } = state.storage;
    return {
      total: sql.exec<{ n: number }>(`SELECT kept_bytes AS n FROM message_output_total`).one().n,
      sum: sql.exec<{ n: number }>(`SELECT COALESCE(SUM(kept_bytes), 0) AS n FROM message_output_heads`).one().n,
      heads: sql.exec<{ id: number }>(`SELECT message_id AS id FROM message_output_heads ORDER BY message_id`).toArray().map((r) => r.id),
    };
  });
}

describe("the agent's total of kept output", () => {
  it("stays equal to the heads' sum across appends, message-budget drops, agent-budget drops and history pruning", async () => {
    const agent = uniqueAgent();
    const { sock: a } = await claimant(agent, "m");
    // 96 KiB into one message: its 64 KiB budget drops the oldest 32 KiB.
    const first = await post(agent, "first");
    const m1 = await run(a, first);
    await writeBlocks(a, m1, 12);
    expect(await kept(agent)).toEqual({ total: 64 * KIB, sum: 64 * KIB, heads: [first] });
    await write(a, { type: "reply", id: first, token: m1.token, key: "k", text: "ok" });
    const second = await post(agent, "second");
    const m2 = await run(a, second);
    await writeBlocks(a, m2, 8);
    await write(a, { type: "reply", id: second, token: m2.token, key: "k", text: "ok" });
    expect(await kept(agent)).toMatchObject({ total: 128 * KIB, sum: 128 * KIB });
    // A third past the agent's 128 KiB: the oldest finished message's output goes whole.
    const third = await post(agent, "third");
    const m3 = await run(a, third);
    await writeBlocks(a, m3, 4);
    expect(await kept(agent)).toEqual({ total: 96 * KIB, sum: 96 * KIB, heads: [first, second, third] });
    // History pruning (BATON_HISTORY_MESSAGES 20 here) takes the finished messages and their heads; the running one's stays.
    a.close();
    await a.waitForClose();
    for (let i = 0; i < 21; i++) {
      const later = await post(agent, `later ${i}`);
      expect((await call("POST", `/agents/${agent}/messages/${later}/cancel`, {})).status).toBe(200);
    }
    expect(await kept(agent)).toEqual({ total: 32 * KIB, sum: 32 * KIB, heads: [third] });
  });

  it("a write rolled back leaves the total as it was", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "work");
    const total = await runInDurableObject(stubFor(agent), (_, state) => {
      const store = new OutputStore(state.storage.sql);
      const batch = { token: 1, attempt: 1, machine: "m", offset: 0, chunks: [{ stream: "stdout" as const, text: "hello" }], bytes: 5, free: 0 };
      expect(() => state.storage.transactionSync(() => {
        store.append(id, batch, 1);
        throw new Error("the step threw");
      })).toThrow("the step threw");
      return store.keptTotal();
    });
    expect(total).toBe(0);
    expect(await kept(agent)).toEqual({ total: 0, sum: 0, heads: [] });
  });

  it("migration 3 starts the total from the heads an object already has, and running it again counts them once", async () => {
    const agent = uniqueAgent();
    await post(agent, "one");
    const seen = await runInDurableObject(stubFor(agent), (_, state) => {
      const { sql } = state.storage;
      // The object as the release before the total left it: output at version 2, heads, no total.
      sql.exec(`DROP TABLE message_output_total`);
      sql.exec(`UPDATE schema_versions SET version = 2 WHERE store = 'output'`);
      for (const [id, bytes] of [[1, 1000], [2, 0], [3, 65536]] as const) {
        sql.exec(`INSERT INTO message_output_heads (message_id, next_offset, kept_bytes, dropped_bytes, dropped_through, dropped_for) VALUES (?, ?, ?, 0, 0, NULL)`, id, bytes, bytes);
      }
      const upgraded = new OutputStore(sql).keptTotal();
      const version = sql.exec<{ version: number }>(`SELECT version FROM schema_versions WHERE store = 'output'`).one().version;
      sql.exec(`UPDATE schema_versions SET version = 2 WHERE store = 'output'`);
      return { upgraded, version, again: new OutputStore(sql).keptTotal() };
    });
    expect(seen).toEqual({ upgraded: 66536, version: 3, again: 66536 });
  });
});
