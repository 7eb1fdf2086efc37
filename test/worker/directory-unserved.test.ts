// The agent directory in the real runtime, continued (directory.test.ts has reports, observers and
// account walls): at most MAX_OBSERVERS observers per account, /observe needs an upgrade, and an
// agent nobody serves stays listed while messages wait for it.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_OBSERVERS } from "../../worker/objects/directory-object.ts";
import type { DirectoryEntry } from "../../worker/wire/protocol.ts";
import { BASE, claimant, DEV_TOKEN, LIMITS_TOKEN, post, uniqueAgent } from "./helpers.ts";

async function listed(token = DEV_TOKEN): Promise<DirectoryEntry[]> {
  const res = await SELF.fetch(`${BASE}/agents`, { headers: { Authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { agents: DirectoryEntry[] }).agents;
}

describe("observer limit", () => {
  it(`exactly ${MAX_OBSERVERS} observers watch one account; the next is refused with 429`, async () => {
    const open: WebSocket[] = [];
    for (let i = 0; i < MAX_OBSERVERS; i++) {
      const res = await SELF.fetch(`${BASE}/observe`, { headers: { Upgrade: "websocket", Authorization: `Bearer ${LIMITS_TOKEN}` } });
      expect(res.status, `observer ${i + 1}`).toBe(101);
      res.webSocket!.accept();
      open.push(res.webSocket!);
    }
    const refused = await SELF.fetch(`${BASE}/observe`, { headers: { Upgrade: "websocket", Authorization: `Bearer ${LIMITS_TOKEN}` } });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: "too_many_connections", message: `at most ${MAX_OBSERVERS} observers per account` });
    for (const ws of open) ws.close(1000, "test done");
  });

  it("a request to /observe without an upgrade gets 426 upgrade_required", async () => {
    const res = await SELF.fetch(`${BASE}/observe`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(res.status).toBe(426);
    expect(await res.json()).toMatchObject({ error: "upgrade_required" });
  });
});

describe("agents nobody serves", () => {
  it("an agent with waiting messages and no connection is listed (no holder, confirmed), and leaves once its work is done and nobody is connected", async () => {
    const agent = uniqueAgent();
    const post = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ text: "waits" }),
    });
    expect(post.status).toBe(201);
    await expect.poll(async () => (await listed()).find((e) => e.agent === agent), { timeout: 3000 })
      .toMatchObject({ connection_count: 0, holder: null, confirmed: true, work: { counts: { queued: 1 } } });
    const a = await claimant(agent, "a");
    const run = await a.sock.next("message", (f) => f.run);
    a.sock.send({ type: "ack", id: run.id, token: run.token, req: "done" });
    await a.sock.next("result", (f) => f.req === "done");
    a.sock.close();
    await expect.poll(async () => (await listed()).some((e) => e.agent === agent), { timeout: 3000 }).toBe(false);
  });
});
