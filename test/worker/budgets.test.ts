// Byte budgets in the real runtime: a sync answers one page, the client asks for the next; a sync
// flood past the replay budget is refused with rate_limited while the holder keeps its lease; a
// connection's frames are budgeted in characters as well as in count.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../worker/wire/protocol.ts";
import { BASE, claimant, connect, DEV_TOKEN, presence, settle, uniqueAgent, waitFor, type TestSocket } from "./helpers.ts";

const TEXT_BYTES = 30 * 1024;

async function postMany(agent: string, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST",
      headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ text: `${i}`.padEnd(TEXT_BYTES, "x") }),
    });
    ids.push(((await res.json()) as { id: number }).id);
  }
  return ids;
}

const answers = (sock: TestSocket) => sock.frames.filter((f) => f.type === "result" || f.type === "error");

describe("byte budgets", () => {
  it("a sync answers one page within syncPageBytes; the client asks again from its cursor until more is false", async () => {
    const agent = uniqueAgent();
    const ids = await postMany(agent, 12);
    const sock = await connect(agent, { machine: "reader" });
    const seen: number[] = [];
    let after = 0;
    for (let page = 0; page < 5; page++) {
      sock.send({ type: "sync", after, req: `p${page}` });
      const result = await sock.next("result", (f) => f.req === `p${page}`);
      if (result.op !== "sync") throw new Error(`expected a sync result, got ${result.op}`);
      const pageIds = sock.framesOf("message").map((m) => m.id);
      sock.frames.length = 0;
      expect(pageIds.length * TEXT_BYTES).toBeLessThanOrEqual(LIMITS.syncPageBytes);
      seen.push(...pageIds);
      expect(result.cursor).toBe(pageIds.at(-1));
      if (result.more !== true) break;
      after = result.cursor;
    }
    expect(seen).toEqual(ids);
  });

  it("a sync flood past the replay budget gets rate_limited, every frame one answer, and the holder keeps its lease", async () => {
    const agent = uniqueAgent();
    await postMany(agent, 12);
    const holder = await claimant(agent, "holder");
    holder.sock.frames.length = 0;
    const flooder = await connect(agent, { machine: "flooder" });
    const SYNCS = 40;
    for (let i = 0; i < SYNCS; i++) flooder.send({ type: "sync", after: 0, req: `s${i}` });
    holder.sock.send({ type: "ping", fence: holder.lease.fence });
    await holder.sock.next("pong");
    await waitFor(() => answers(flooder).length >= SYNCS, "answers");
    const refused = flooder.framesOf("error");
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((f) => f.code === "rate_limited" && f.message.includes("replay budget"))).toBe(true);
    expect(flooder.framesOf("result").length + refused.length).toBe(SYNCS);
    await settle(holder.sock);
    expect(holder.sock.framesOf("serve_lease")).toEqual([]);
    const p = await presence(agent);
    expect(p.holder?.machine).toBe("holder");
    expect(p.fence).toBe(1);
  });

  it(`frames past ${LIMITS.frameCharsPerSecond} characters in a second are refused even under the frame count`, async () => {
    const agent = uniqueAgent();
    const holder = await claimant(agent, "holder");
    // Frames near the frame cap (their checkpoint is over its own limit, so each is refused for that
    // until the character budget runs out): few enough to stay under the frame count.
    const big = JSON.stringify({ type: "agent_checkpoint", fence: holder.lease.fence, value: "x".repeat(LIMITS.frameBytes - 1024) });
    const frames = Math.ceil(LIMITS.frameCharsPerSecond / big.length) + 2;
    expect(frames).toBeLessThan(LIMITS.framesPerSecond);
    for (let i = 0; i < frames; i++) holder.sock.sendRaw(big.replace('"agent_checkpoint"', `"agent_checkpoint","req":"c${i}"`));
    await waitFor(() => answers(holder.sock).length >= frames, "answers");
    const codes = holder.sock.framesOf("error").map((f) => f.code);
    expect(codes.filter((c) => c === "rate_limited").length).toBeGreaterThan(0);
    expect(codes.slice(0, Math.floor(LIMITS.frameCharsPerSecond / big.length)).every((c) => c !== "rate_limited"), "within the budget, only the checkpoint's own limit refuses").toBe(true);
  });
});
