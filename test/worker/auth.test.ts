// Authentication in the real runtime: every route, socket upgrades included, refuses a missing
// or wrong token with 401 before anything is touched; tokens may also ride in the subprotocol.
import { createExecutionContext, env, runInDurableObject, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { tokenProtocol } from "../../worker/auth.ts";
import type { Env } from "../../worker/env.ts";
import { AgentCoordinator } from "../../worker/objects/agent-object.ts";
import worker from "../../worker/index.ts";
import { BASE, DEV_TOKEN, presence, uniqueAgent } from "./helpers.ts";

interface RouteCase {
  method: string;
  path: string;
  upgrade?: boolean;
  body?: unknown;
}

/** Every route the coordinator answers, with a name that would be valid. */
function everyRoute(agent: string, session: string): RouteCase[] {
  return [
    { method: "GET", path: `/agents/${agent}/serve`, upgrade: true },
    { method: "GET", path: `/agents/${agent}/serve` },
    { method: "GET", path: `/agents/${agent}/presence` },
    { method: "GET", path: `/agents/${agent}/messages` },
    { method: "POST", path: `/agents/${agent}/messages`, body: { text: "hello" } },
    { method: "GET", path: `/agents/${agent}/messages/1` },
    { method: "GET", path: "/agents" },
    { method: "GET", path: "/observe", upgrade: true },
    { method: "GET", path: "/observe" },
    { method: "GET", path: `/leases/${session}` },
    { method: "DELETE", path: `/leases/${session}` },
    { method: "POST", path: `/leases/${session}/acquire`, body: { run_id: crypto.randomUUID() } },
    { method: "POST", path: `/leases/${session}/renew`, body: { run_id: crypto.randomUUID() } },
    { method: "POST", path: `/leases/${session}/release`, body: { run_id: crypto.randomUUID() } },
    { method: "POST", path: `/leases/${session}/check`, body: { fence: 1 } },
    // Routes that do not exist and names that are bad are refused before they are looked at.
    { method: "GET", path: "/no-such-route" },
    { method: "GET", path: "/agents/NOT-VALID/presence" },
    { method: "POST", path: "/report", body: {} },
  ];
}

function requestFor(route: RouteCase, headers: Record<string, string>): Request {
  const all: Record<string, string> = { ...headers };
  if (route.upgrade) all.Upgrade = "websocket";
  if (route.body !== undefined) all["Content-Type"] = "application/json";
  return new Request(`${BASE}${route.path}`, {
    method: route.method,
    headers: all,
    body: route.body === undefined ? undefined : JSON.stringify(route.body),
  });
}

const WRONG_CREDENTIALS: Record<string, Record<string, string>> = {
  "no token": {},
  "a wrong token": { Authorization: "Bearer not-the-token" },
  "the dev token with another scheme": { Authorization: `Basic ${DEV_TOKEN}` },
  "the dev token's hash": { Authorization: "Bearer 8eb1988b5d11e51b42a73fbede6ec8602a22164ed1eecb7d67e729042623a371" },
  "an empty bearer": { Authorization: "Bearer " },
  "a wrong token in the subprotocol": { "Sec-WebSocket-Protocol": `baton, ${tokenProtocol("not-the-token")}` },
  "a prefix of the dev token": { Authorization: `Bearer ${DEV_TOKEN.slice(0, -1)}` },
};

async function expectUnauthorized(res: Response, label: string): Promise<void> {
  expect(res.status, label).toBe(401);
  expect(res.webSocket, label).toBeFalsy();
  expect(await res.json(), label).toMatchObject({ error: "unauthorized" });
}

describe("authentication", () => {
  for (const [name, headers] of Object.entries(WRONG_CREDENTIALS)) {
    it(`${name} gets 401 on every route, socket upgrades included, and touches nothing`, async () => {
      const agent = uniqueAgent();
      const session = `s-${crypto.randomUUID()}`;
      for (const route of everyRoute(agent, session)) {
        const res = await SELF.fetch(requestFor(route, headers));
        await expectUnauthorized(res, `${route.method} ${route.path}`);
      }
      const after = await presence(agent);
      expect(after).toMatchObject({ connection_count: 0, fence: 0, holder: null });
      const messages = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
      expect((await messages.json()) as { messages: unknown[] }).toMatchObject({ messages: [] });
      const lease = await SELF.fetch(`${BASE}/leases/${session}`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
      expect(lease.status).toBe(200);
      expect(await lease.json()).toMatchObject({ held: false });
    });
  }

  it("a coordinator with no tokens configured refuses every request, the dev token included", async () => {
    const unconfigured = { ...(env as unknown as Env), BATON_TOKENS: "" };
    for (const route of everyRoute(uniqueAgent(), "s-1")) {
      const res = await worker.fetch(requestFor(route, { Authorization: `Bearer ${DEV_TOKEN}` }), unconfigured, createExecutionContext());
      await expectUnauthorized(res, `${route.method} ${route.path}`);
    }
  });

  it("a malformed token configuration refuses with 500 and does not repeat the configuration", async () => {
    const secretish = "dev:8eb1988b5d11e51b42a73fbede6ec8602a22164ed1eecb7d67e729042623a37";
    const broken = { ...(env as unknown as Env), BATON_TOKENS: secretish };
    const res = await worker.fetch(requestFor({ method: "GET", path: "/agents" }, { Authorization: `Bearer ${DEV_TOKEN}` }), broken, createExecutionContext());
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toContain("application/json");
    const text = await res.text();
    expect(text).not.toContain("8eb1988b");
    expect(text).toContain("BATON_TOKENS entry 1 must be account:sha256-hex");
  });

  it("a malformed TTL var gets 500 internal with its exact message, and an object built with it does not throw", async () => {
    const agent = uniqueAgent();
    const broken = { ...(env as unknown as Env), BATON_HEARTBEAT_TTL_SECONDS: "soon" };
    const expected = { error: "internal", message: 'BATON_HEARTBEAT_TTL_SECONDS must be a number of seconds between 0 and 86400, got "soon"' };
    const res = await worker.fetch(requestFor({ method: "GET", path: `/agents/${agent}/presence` }, { Authorization: `Bearer ${DEV_TOKEN}` }), broken, createExecutionContext());
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual(expected);
    const stub = env.AGENTS.get(env.AGENTS.idFromName(`dev:${agent}`));
    const answer = await runInDurableObject(stub, async (_instance: AgentCoordinator, state) => {
      const direct = await new AgentCoordinator(state, broken).fetch(new Request(`${BASE}/agents/${agent}/presence`));
      return { status: direct.status, body: await direct.json() };
    });
    expect(answer).toEqual({ status: 500, body: expected });
  });

  it("a serve or observe request without an upgrade gets 426 upgrade_required", async () => {
    for (const path of [`/agents/${uniqueAgent()}/serve`, "/observe"]) {
      const res = await SELF.fetch(`${BASE}${path}`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
      expect(res.status, path).toBe(426);
      expect(await res.json(), path).toMatchObject({ error: "upgrade_required", message: "expected a WebSocket upgrade" });
    }
  });

  it("a token in the subprotocol opens a serve socket and the 101 response names only the baton protocol", async () => {
    const agent = uniqueAgent();
    const res = await SELF.fetch(`${BASE}/agents/${agent}/serve?machine=browser`, {
      headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `baton, ${tokenProtocol(DEV_TOKEN)}` },
    });
    expect(res.status).toBe(101);
    expect(res.headers.get("sec-websocket-protocol")).toBe("baton");
    const ws = res.webSocket!;
    ws.accept();
    const welcome = new Promise<string>((resolve) => ws.addEventListener("message", (e) => resolve(e.data as string), { once: true }));
    expect(JSON.parse(await welcome)).toMatchObject({ type: "welcome", agent });
    expect((await presence(agent)).connections.map((c) => c.machine)).toEqual(["browser"]);
    ws.close(1000, "done");
  });

  it("a token in the subprotocol opens the observer socket, naming only the baton protocol", async () => {
    const res = await SELF.fetch(`${BASE}/observe`, {
      headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `baton, ${tokenProtocol(DEV_TOKEN)}` },
    });
    expect(res.status).toBe(101);
    expect(res.headers.get("sec-websocket-protocol")).toBe("baton");
    res.webSocket!.accept();
    res.webSocket!.close(1000, "done");
  });

  it("headers a client sets to name an account are overwritten by the authenticated one", async () => {
    const agent = uniqueAgent();
    const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
      method: "POST",
      headers: { Authorization: `Bearer ${DEV_TOKEN}`, "x-baton-account": "other", "x-baton-agent": "victim", "Content-Type": "application/json" },
      body: JSON.stringify({ text: "mine" }),
    });
    expect(res.status).toBe(201);
    const mine = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(await mine.json()).toMatchObject({ agent, messages: [{ text: "mine" }] });
  });
});
