// Token scopes in the real runtime: each named dev token (vitest.workers.config.ts) may call only
// what its scope allows; a refusal is 403 forbidden, names the token and the missing scope, and
// changes nothing. The old-form dev token keeps every scope.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { tokenProtocol } from "../../worker/auth.ts";
import type { Env } from "../../worker/env.ts";
import worker from "../../worker/index.ts";
import { whoamiSchema } from "../../worker/wire/http-responses.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { BASE, claimant, connect, DEV_TOKEN, message, post, presence, uniqueAgent, write } from "./helpers.ts";

const RUNNER = "dev-runner-token"; // serve
const READER = "dev-reader-token"; // read
const SENDER = "dev-sender-token"; // send
const ADMIN = "dev-admin-token"; // admin
const PERSON = "dev-person-token"; // answer

async function as(token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await SELF.fetch(`${BASE}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function upgrade(token: string, path: string) {
  return SELF.fetch(`${BASE}${path}`, { headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `baton, ${tokenProtocol(token)}` } });
}

function forbidden(name: string, scope: string) {
  return { status: 403, body: { error: "forbidden", message: expect.stringMatching(new RegExp(`^token ${name} of account dev lacks the ${scope} scope that `)) } };
}

/** A message parked by a runner that serves with the runner token: what only a person may answer. */
async function parkedMessage(agent: string) {
  const { sock } = await claimant(agent, "ci", { token: RUNNER });
  const id = await post(agent, "deploy to prod");
  const run = await sock.next("message", (f) => f.run && f.id === id) as MessageFrame;
  expect(await write(sock, { type: "park", id, token: run.token, value: { plan: "ready" } })).toMatchObject({ op: "park" });
  return { sock, id, run };
}

describe("token scopes", () => {
  it("a runner's token (serve) that resumes a parked message gets 403 forbidden and changes nothing; a person's token resumes it", async () => {
    const agent = uniqueAgent();
    const { sock, id, run } = await parkedMessage(agent);
    const before = await message(agent, id);
    expect(await as(RUNNER, "POST", `/agents/${agent}/messages/${id}/resume`, { input: "approved by the runner itself" })).toMatchObject(forbidden("runner", "answer"));
    expect(await as(RUNNER, "POST", `/agents/${agent}/messages/${id}/resume`, { outcome: "done" })).toMatchObject(forbidden("runner", "answer"));
    expect(await message(agent, id)).toEqual(before);
    expect(before).toMatchObject({ status: "parked", attempts: 1, resume_input: null });
    expect(await as(PERSON, "POST", `/agents/${agent}/messages/${id}/resume`, { input: "approved by ana" })).toMatchObject({ status: 200, body: { status: "running" } });
    const again = await sock.next("message", (f) => f.run && f.id === id);
    expect(again).toMatchObject({ attempt: 2, resume_input: "approved by ana" });
    expect(again.token).toBeGreaterThan(run.token!);
  });

  it("a read-only token reads presence, messages and policy but is refused posting, the serve socket and policy changes", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "hello");
    expect(await as(READER, "GET", `/agents/${agent}/presence`)).toMatchObject({ status: 200, body: { agent, connection_count: 0 } });
    expect(await as(READER, "GET", `/agents/${agent}/messages`)).toMatchObject({ status: 200, body: { messages: [{ id, text: "hello" }] } });
    expect(await as(READER, "GET", `/agents/${agent}/messages/${id}`)).toMatchObject({ status: 200, body: { id } });
    expect(await as(READER, "GET", `/agents/${agent}/policy`)).toMatchObject({ status: 200, body: { mode: "single" } });
    expect((await as(READER, "GET", "/agents")).status).toBe(200);
    expect((await SELF.fetch(`${BASE}/metrics`, { headers: { Authorization: `Bearer ${READER}` } })).status).toBe(200);
    expect(await as(READER, "GET", "/leases/scoped-job")).toMatchObject({ status: 200, body: { held: false } });

    expect(await as(READER, "POST", `/agents/${agent}/messages`, { text: "sneaky" })).toMatchObject(forbidden("reader", "send"));
    expect(await as(READER, "PUT", `/agents/${agent}/policy`, { mode: "pool" })).toMatchObject(forbidden("reader", "admin"));
    expect(await as(READER, "POST", `/agents/${agent}/pause`, {})).toMatchObject(forbidden("reader", "admin"));
    expect(await as(READER, "POST", `/agents/${agent}/messages/${id}/resume`, {})).toMatchObject(forbidden("reader", "answer"));
    expect(await as(READER, "POST", "/leases/scoped-job/acquire", { run_id: crypto.randomUUID() })).toMatchObject(forbidden("reader", "serve"));
    const serve = await upgrade(READER, `/agents/${agent}/serve`);
    expect(serve.status).toBe(403);
    expect(serve.webSocket).toBeFalsy();
    expect(await serve.json()).toMatchObject({ error: "forbidden" });

    expect(await as(DEV_TOKEN, "GET", `/agents/${agent}/messages`)).toMatchObject({ body: { messages: [{ id, text: "hello" }] } });
    expect(await presence(agent)).toMatchObject({ connection_count: 0, fence: 0, controls: { paused: false } });
    expect(await as(DEV_TOKEN, "GET", `/agents/${agent}/policy`)).toMatchObject({ body: { mode: "single" } });
    expect(await as(DEV_TOKEN, "GET", "/leases/scoped-job")).toMatchObject({ body: { held: false, fence: 0 } });
  });

  it("a read-only token opens the dashboard's observer socket", async () => {
    const res = await upgrade(READER, "/observe");
    expect(res.status).toBe(101);
    res.webSocket!.accept();
    res.webSocket!.close(1000, "done");
  });

  it("a send token posts a message but cannot serve, answer or change the agent", async () => {
    const agent = uniqueAgent();
    const posted = await as(SENDER, "POST", `/agents/${agent}/messages`, { text: "review PR 7" });
    expect(posted).toMatchObject({ status: 201, body: { text: "review PR 7", status: "queued" } });
    const serve = await upgrade(SENDER, `/agents/${agent}/serve`);
    expect(serve.status).toBe(403);
    expect(await serve.json()).toMatchObject({ error: "forbidden", message: expect.stringContaining("token sender of account dev lacks the serve scope") });
    expect(await as(SENDER, "POST", `/agents/${agent}/messages/${posted.body.id}/resume`, {})).toMatchObject(forbidden("sender", "answer"));
    expect(await as(SENDER, "POST", `/agents/${agent}/drain`, {})).toMatchObject(forbidden("sender", "admin"));
    expect(await as(SENDER, "PUT", `/agents/${agent}/messages/${posted.body.id}/steps/plan`, {})).toMatchObject(forbidden("sender", "serve"));
    expect(await as(SENDER, "GET", `/agents/${agent}/messages/${posted.body.id}`)).toMatchObject({ status: 200, body: { status: "queued" } });
    expect((await presence(agent)).connection_count).toBe(0);
  });

  it("a serve token runs messages and holds session leases but cannot post", async () => {
    const agent = uniqueAgent();
    expect(await as(RUNNER, "POST", `/agents/${agent}/messages`, { text: "self-assigned" })).toMatchObject(forbidden("runner", "send"));
    expect((await as(DEV_TOKEN, "GET", `/agents/${agent}/messages`)).body.messages).toEqual([]);
    const session = `s-${crypto.randomUUID()}`;
    const run_id = crypto.randomUUID();
    // Any fence: a key its shard never saw starts above the shard's fence floor, which session-lease.test.ts's pruning raises in the shared workerd.
    expect(await as(RUNNER, "POST", `/leases/${session}/acquire`, { run_id })).toMatchObject({ status: 201, body: { run_id, fence: expect.any(Number) } });
    expect(await as(RUNNER, "POST", `/leases/${session}/release`, { run_id })).toMatchObject({ status: 200, body: { released: true } });
  });

  it("an admin token does everything: policy, controls, post, serve, resume, session leases", async () => {
    const agent = uniqueAgent();
    expect(await as(ADMIN, "PUT", `/agents/${agent}/policy`, { mode: "pool" })).toMatchObject({ status: 200, body: { mode: "pool" } });
    expect(await as(ADMIN, "POST", `/agents/${agent}/pause`, {})).toMatchObject({ status: 200, body: { paused: true } });
    expect(await as(ADMIN, "POST", `/agents/${agent}/unpause`, {})).toMatchObject({ status: 200, body: { paused: false } });
    const sock = await connect(agent, { token: ADMIN, machine: "boss" });
    sock.send({ type: "serve_lease", op: "claim" });
    expect(await sock.next("serve_lease")).toMatchObject({ held: true });
    const posted = await as(ADMIN, "POST", `/agents/${agent}/messages`, { text: "ship it" });
    expect(posted.status).toBe(201);
    const id = posted.body.id as number;
    const run = await sock.next("message", (f) => f.run && f.id === id);
    expect(await write(sock, { type: "park", id, token: run.token })).toMatchObject({ op: "park" });
    expect(await as(ADMIN, "POST", `/agents/${agent}/messages/${id}/resume`, { input: "go" })).toMatchObject({ status: 200, body: { status: "running" } });
    expect(await as(ADMIN, "POST", `/leases/s-${crypto.randomUUID()}/acquire`, { run_id: crypto.randomUUID() })).toMatchObject({ status: 201 });
    const observer = await upgrade(ADMIN, "/observe");
    expect(observer.status).toBe(101);
    observer.webSocket!.accept();
    observer.webSocket!.close(1000, "done");
  });

  it("GET /whoami tells each token's account, name and granted scopes; the old-form dev token is default with every scope", async () => {
    const expected: [string, unknown][] = [
      [DEV_TOKEN, { account: "dev", token: "default", scopes: ["read", "send", "serve", "answer", "admin"] }],
      [READER, { account: "dev", token: "reader", scopes: ["read"] }],
      [RUNNER, { account: "dev", token: "runner", scopes: ["read", "serve"] }],
      [SENDER, { account: "dev", token: "sender", scopes: ["read", "send"] }],
      [PERSON, { account: "dev", token: "person", scopes: ["read", "answer"] }],
      [ADMIN, { account: "dev", token: "admin", scopes: ["read", "send", "serve", "answer", "admin"] }],
      ["other-account-token", { account: "other", token: "default", scopes: ["read", "send", "serve", "answer", "admin"] }],
    ];
    for (const [token, body] of expected) {
      const res = await as(token, "GET", "/whoami");
      expect(res, token).toEqual({ status: 200, body });
      expect(whoamiSchema.safeParse(res.body).success).toBe(true);
    }
    expect((await SELF.fetch(`${BASE}/whoami`)).status).toBe(401);
  });

  it("headers a client sets to name a token or scopes change nothing: the configured ones decide", async () => {
    const agent = uniqueAgent();
    const spoof = { "x-baton-token-name": "admin", "x-baton-scopes": "admin", "x-baton-account": "other" };
    expect(await as(READER, "POST", `/agents/${agent}/messages`, { text: "x" }, spoof)).toMatchObject(forbidden("reader", "send"));
    expect(await as(READER, "GET", "/whoami", undefined, spoof)).toEqual({ status: 200, body: { account: "dev", token: "reader", scopes: ["read"] } });
  });

  it("routes that do not exist stay 404 for every token, a read-only one included", async () => {
    for (const token of [READER, SENDER, DEV_TOKEN]) {
      for (const [method, path] of [["POST", "/report"], ["GET", "/no-such-route"], ["POST", `/agents/${uniqueAgent()}/explode`], ["POST", "/leases/ok/steal"]]) {
        const res = await as(token, method!, path!, method === "GET" ? undefined : {});
        expect(res, `${token} ${method} ${path}`).toMatchObject({ status: 404, body: { error: "not_found" } });
      }
    }
  });

  it("a scoped entry with a bad scope or name refuses with 500, naming its position only", async () => {
    const hash = "8eb1988b5d11e51b42a73fbede6ec8602a22164ed1eecb7d67e729042623a371";
    for (const [tokens, message] of [
      [`dev:${hash},dev:ci:write:${"0".repeat(64)}`, "BATON_TOKENS entry 2 has an unknown or empty scope (scopes are read, send, serve, answer, admin, joined by '+')"],
      [`dev:ci runner:serve:${hash}`, "BATON_TOKENS entry 1 has a bad token name (1-64 chars of A-Z, a-z, 0-9, '.', '_' or '-')"],
    ]) {
      const broken = { ...(env as unknown as Env), BATON_TOKENS: tokens };
      const res = await worker.fetch(new Request(`${BASE}/whoami`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } }), broken, createExecutionContext());
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: "internal", message });
    }
  });
});
