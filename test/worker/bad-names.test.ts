// Bad agent names in the real runtime: near-miss spellings of a live agent's name and empty or
// dot-only names are refused before any object is reached, and change nothing. Run with a long
// heartbeat TTL (vitest.workers.config.ts): what they assert has nothing to do with expiry, and a
// one-second TTL let a busy machine expire the scene's connections mid-test.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { BASE, DEV_TOKEN, settle } from "./helpers.ts";
import { scene, snapshot } from "./scene.ts";

const auth = { Authorization: `Bearer ${DEV_TOKEN}` };

describe("bad names", () => {
  const badAgents = ["Agent", "UPPER", "a".repeat(64), "a%2Fb", "a%2fb%2f..", ".hidden", "-dash", "%2E%2E%2Fx", "a%20b", "a%00", "%E0%A4%A", "caf%C3%A9"];

  for (const name of badAgents) {
    it(`agent name ${JSON.stringify(name)} gets 400 bad_name on every agent route and creates nothing`, async () => {
      for (const [method, route, upgrade] of [["GET", "serve", true], ["GET", "presence", false], ["GET", "messages", false], ["POST", "messages", false]] as const) {
        const res = await SELF.fetch(`${BASE}/agents/${name}/${route}`, {
          method,
          headers: { ...auth, ...(upgrade ? { Upgrade: "websocket" } : {}), "Content-Type": "application/json" },
          body: method === "POST" ? JSON.stringify({ text: "x" }) : undefined,
        });
        expect(res.status, `${method} ${route}`).toBe(400);
        expect(await res.json()).toMatchObject({ error: "bad_name" });
      }
    });
  }

  it("near-miss spellings of a live agent's name are refused and leave its lease and data as they were", async () => {
    const s = await scene();
    const before = await snapshot(s.agent);
    const variants = [s.agent.toUpperCase(), `${s.agent}%2Fx`, `${s.agent}%00`, `%2E%2E%2F${s.agent}`, `${s.agent}%E0%A4%A`, `${s.agent}${"x".repeat(64)}`];
    for (const name of variants) {
      for (const [method, route] of [["GET", "serve"], ["POST", "messages"], ["GET", "presence"]] as const) {
        const res = await SELF.fetch(`${BASE}/agents/${name}/${route}`, {
          method,
          headers: { ...auth, Upgrade: "websocket", "Content-Type": "application/json" },
          body: method === "POST" ? JSON.stringify({ text: "sneaky" }) : undefined,
        });
        expect(res.status, `${method} ${name}/${route}`).toBe(400);
      }
    }
    expect(await snapshot(s.agent)).toEqual(before);
    await settle(s.holder);
    expect(s.holder.framesOf("message")).toEqual([]);
  });

  it("an empty agent name or a dot-only one never reaches an agent", async () => {
    // URL parsing resolves the dot segments first, so each of these names a route that does not exist.
    for (const path of ["/agents//presence", "/agents/../presence", "/agents/./presence", "/agents/%2e%2e/presence"]) {
      const res = await SELF.fetch(`${BASE}${path}`, { headers: auth });
      expect(res.status, path).toBe(404);
      expect(await res.json(), path).toMatchObject({ error: "not_found" });
    }
  });

  const badSessions = ["a%2Fb", "-x", "a:b", "x".repeat(129), "%E0%A4%A", "a%20b"];
  for (const name of badSessions) {
    it(`session name ${JSON.stringify(name)} gets 400 bad_name`, async () => {
      const res = await SELF.fetch(`${BASE}/leases/${name}/acquire`, {
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json" },
        body: JSON.stringify({ run_id: crypto.randomUUID() }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: "bad_name" });
    });
  }
});
