// One page of history (GET /agents/{agent}/messages) is bounded in bytes as well as in messages:
// 500 messages of 32 KiB once made one 16.6 MB answer that held the agent's object for 1.5 s. A
// page ends before LIMITS.historyPageBytes of JSON (always at least one message), says `more`, and
// its cursor resumes where it ended, with nothing lost or repeated.
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { BASE, DEV_TOKEN, post, stubFor, uniqueAgent } from "./helpers.ts";
import { SELF } from "cloudflare:test";

const KIB32 = 32 * 1024;

/** `n` stored messages of `bytes` each, inserted in SQL as a post stores them (500 posts through HTTP take most of a minute here). */
async function seed(agent: string, n: number, bytes: number): Promise<void> {
  await runInDurableObject(stubFor(agent), (_i, state) => {
    state.storage.sql.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
      INSERT INTO messages (text, created_at) SELECT printf('%05d', i) || substr(replace(hex(zeroblob(?)), '0', 'x'), 1, ? - 5), 1 FROM n`, n, bytes, bytes);
  });
}

async function page(agent: string, after: number, limit: number) {
  const started = performance.now();
  const res = await SELF.fetch(`${BASE}/agents/${agent}/messages?after=${after}&limit=${limit}`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
  const raw = await res.text();
  return { status: res.status, bytes: new TextEncoder().encode(raw).length, ms: performance.now() - started, body: JSON.parse(raw) as { messages: { id: number; text: string }[]; cursor: number; more: boolean } };
}

describe("a history page", () => {
  it("500 messages of 32 KiB: each page stays within the byte budget and says more; following its cursor reads all 500 once, in order", async () => {
    const agent = uniqueAgent();
    await seed(agent, 500, KIB32);
    await page(agent, 0, 1);
    const first = await page(agent, 0, 500);
    const ms = [first.ms];
    for (let i = 0; i < 4; i++) ms.push((await page(agent, 0, 500)).ms);
    console.log(`history page of 500 x 32 KiB asked: ${first.body.messages.length} messages, ${first.bytes} bytes, median ${ms.sort((a, b) => a - b)[2]!.toFixed(0)} ms of 5`);
    expect(first.status).toBe(200);
    expect(first.bytes).toBeLessThanOrEqual(LIMITS.historyPageBytes);
    expect(first.body).toMatchObject({ more: true, cursor: first.body.messages.at(-1)!.id });
    const seen = [...first.body.messages];
    let cursor = first.body.cursor;
    for (let pages = 1; ; pages++) {
      expect(pages).toBeLessThan(100);
      const next = await page(agent, cursor, 500);
      expect(next.bytes).toBeLessThanOrEqual(LIMITS.historyPageBytes);
      seen.push(...next.body.messages);
      cursor = next.body.cursor;
      if (!next.body.more) break;
    }
    expect(seen.map((m) => m.id)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    expect(seen.every((m, i) => m.text.length === KIB32 && m.text.startsWith(String(i + 1).padStart(5, "0")))).toBe(true);
    expect(await page(agent, cursor, 500)).toMatchObject({ body: { messages: [], cursor, more: false } });
  });

  it("small messages fill a page up to its count; the count and the byte budget each end a page", async () => {
    const agent = uniqueAgent();
    await seed(agent, 7, 10);
    const three = await page(agent, 0, 3);
    expect(three.body).toMatchObject({ cursor: 3, more: true });
    expect(three.body.messages.map((m) => m.id)).toEqual([1, 2, 3]);
    const rest = await page(agent, 3, 100);
    expect(rest.body).toMatchObject({ cursor: 7, more: false });
    expect(rest.body.messages.map((m) => m.id)).toEqual([4, 5, 6, 7]);
    const id = await post(agent, "one more");
    expect((await page(agent, 7, 100)).body.messages.map((m) => m.id)).toEqual([id]);
  });
});
