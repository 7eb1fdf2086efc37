// A2A's JSON-RPC in the real runtime with scoped tokens (vitest.workers.config.ts): each method
// needs the scope of the route it wraps, a refusal is HTTP 403 with JSON-RPC's error and changes
// nothing, a person's token answers an input-required task and cancels, and what every request
// meets first (the Origin check, the body limit) holds for A2A as well.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { A2A_REQUEST_BYTES } from "../../worker/wire/a2a.ts";
import { authorize, type FetchLike } from "../e2e/oauth-dance.ts";
import { BASE, claimant, DEV_TOKEN, message, post, uniqueAgent, write } from "./helpers.ts";

const SENDER = "dev-sender-token"; // send
const PERSON = "dev-person-token"; // answer
const TWIN = "dev-twin-token"; // unnamed like DEV_TOKEN, so also named `default`

async function rpc(agent: string, token: string, method: string, params: unknown, headers: Record<string, string> = {}) {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/a2a`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return { status: res.status, body: (await res.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } } };
}

async function optIn(agent: string): Promise<void> {
  const res = await SELF.fetch(`${BASE}/agents/${agent}/policy`, {
    method: "PUT", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ a2a: true }),
  });
  expect(res.status).toBe(200);
}

const send = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra }, configuration: { returnImmediately: true },
});

describe("A2A with scoped tokens", () => {
  it("a sender's token sends but may not cancel (403, nothing changed); a person's token cancels", async () => {
    const agent = uniqueAgent();
    await optIn(agent);
    const sent = await rpc(agent, SENDER, "SendMessage", send("work"));
    const id = (sent.body.result!.task as { id: string }).id;
    expect(sent.body.result).toMatchObject({ task: { status: { state: "TASK_STATE_SUBMITTED" } } });
    const before = await message(agent, Number(id));
    const refused = await rpc(agent, SENDER, "CancelTask", { id });
    expect(refused).toMatchObject({ status: 403, body: { error: { code: -32600, message: expect.stringMatching(/lacks the answer scope that POST .*\/cancel needs/) } } });
    expect(await message(agent, Number(id))).toEqual(before);
    expect(await rpc(agent, PERSON, "CancelTask", { id })).toMatchObject({ status: 200, body: { result: { id, status: { state: "TASK_STATE_CANCELED" } } } });
    expect(await rpc(agent, PERSON, "CancelTask", { id: "9999" })).toMatchObject({ body: { error: { code: -32001 } } });
  });

  it("an input-required task: the sender's answer is refused and it still waits; the person's answer queues it again", async () => {
    const agent = uniqueAgent();
    await optIn(agent);
    const { sock } = await claimant(agent, "ci");
    const id = await post(agent, "deploy");
    const run = await sock.next("message", (f) => f.run && f.id === id) as MessageFrame;
    expect(await write(sock, { type: "park", id, token: run.token, question: { text: "Ship?", choices: ["ship", "hold"] } })).toMatchObject({ op: "park" });
    const got = await rpc(agent, SENDER, "GetTask", { id: String(id) });
    expect(got.body.result).toMatchObject({ status: { state: "TASK_STATE_INPUT_REQUIRED", message: { parts: [{ text: "Ship?\nanswer with one of: ship, hold, reject" }] } } });
    const before = await message(agent, id);
    expect(await rpc(agent, SENDER, "SendMessage", send("ship", { taskId: String(id) }))).toMatchObject({ status: 403, body: { error: { message: expect.stringContaining("lacks the answer scope") } } });
    expect(await rpc(agent, PERSON, "SendMessage", send("later", { taskId: String(id) }))).toMatchObject({ body: { error: { code: -32602 } } });
    expect(await message(agent, id)).toEqual(before);
    const answered = await rpc(agent, PERSON, "SendMessage", send("ship", { taskId: String(id) }));
    expect(answered.body.result).toMatchObject({ task: { id: String(id), status: { state: expect.stringMatching(/TASK_STATE_(WORKING|SUBMITTED)/) } } });
    expect(((await message(agent, id)) as { answers: unknown[] }).answers.at(-1)).toMatchObject({ choice: "ship", token: "person", via: "a2a" });
    expect(await rpc(agent, PERSON, "SendMessage", send("ship", { taskId: String(id) }))).toMatchObject({ body: { error: { code: -32004 } } });
  });

  it("a messageId is one message per caller: the same caller's retry posts once, another token with the same messageId posts its own", async () => {
    const agent = uniqueAgent();
    await optIn(agent);
    const messageId = crypto.randomUUID();
    const withId = (text: string) => ({ ...send(text), message: { ...send(text).message, messageId } });
    const first = await rpc(agent, SENDER, "SendMessage", withId("from the sender"));
    const retried = await rpc(agent, SENDER, "SendMessage", withId("from the sender"));
    const other = await rpc(agent, DEV_TOKEN, "SendMessage", withId("from another caller"));
    const idOf = (r: typeof first) => (r.body.result!.task as { id: string }).id;
    expect(idOf(retried)).toBe(idOf(first));
    expect(idOf(other)).not.toBe(idOf(first));
    expect(await message(agent, Number(idOf(other)))).toMatchObject({ text: "from another caller" });
    expect(await message(agent, Number(idOf(first)))).toMatchObject({ text: "from the sender" });
  });

  it("a messageId is one message per credential, not per token name: two tokens named default, and two grants one person signed, each post their own", async () => {
    const agent = uniqueAgent();
    await optIn(agent);
    const messageId = crypto.randomUUID();
    const withId = (text: string) => ({ ...send(text), message: { ...send(text).message, messageId } });
    // Registered from an address of its own, so the per-address registration budget other files spend is not this test's.
    const f: FetchLike = (url, init) => SELF.fetch(url, { ...init, headers: { ...init?.headers as Record<string, string>, "cf-connecting-ip": "192.0.2.51" } });
    const grant = async () => (await authorize(f, BASE, { token: DEV_TOKEN, scopes: ["send"] })).tokens.access_token;
    const [first, second] = [await grant(), await grant()];
    const idOf = (r: Awaited<ReturnType<typeof rpc>>) => (r.body.result!.task as { id: string }).id;
    const byFirst = await rpc(agent, first, "SendMessage", withId("secret of the first client"));
    const bySecond = await rpc(agent, second, "SendMessage", withId("from the second client"));
    expect(idOf(bySecond)).not.toBe(idOf(byFirst));
    expect(JSON.stringify(bySecond.body)).not.toContain("secret of the first client");
    const byDefault = await rpc(agent, DEV_TOKEN, "SendMessage", withId("from baton-dev-token"));
    const byTwin = await rpc(agent, TWIN, "SendMessage", withId("from the twin"));
    expect(idOf(byTwin)).not.toBe(idOf(byDefault));
    expect(await message(agent, Number(idOf(byTwin)))).toMatchObject({ text: "from the twin" });
    expect(idOf(await rpc(agent, TWIN, "SendMessage", withId("from the twin")))).toBe(idOf(byTwin));
  });

  it("a REST Idempotency-Key equal to the key an A2A SendMessage derived never returns that message to another credential", async () => {
    const agent = uniqueAgent();
    await optIn(agent);
    const messageId = crypto.randomUUID();
    const sent = await rpc(agent, DEV_TOKEN, "SendMessage", { ...send("a2a secret"), message: { ...send("a2a secret").message, messageId } });
    const id = Number((sent.body.result!.task as { id: string }).id);
    const { sendKey } = await import("../../worker/a2a-calls.ts");
    const { authenticate, parseTokenConfig } = await import("../../worker/auth.ts");
    const caller = (await authenticate(DEV_TOKEN, parseTokenConfig((env as { BATON_TOKENS: string }).BATON_TOKENS)))!;
    const key = await sendKey({ caller } as Parameters<typeof sendKey>[0], messageId);
    for (const token of [SENDER, TWIN]) {
      const res = await SELF.fetch(`${BASE}/agents/${agent}/messages`, {
        method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": key }, body: JSON.stringify({ text: "rest" }),
      });
      expect(res.status).toBe(201);
      const view = (await res.json()) as { id: number; text: string };
      expect(view.id).not.toBe(id);
      expect(view.text).toBe("rest");
    }
  });

  it("a web page on another origin is refused before any method; an A2A version other than 1.x is -32009; a body over the limit is -32600 with 413; none posts anything", async () => {
    const agent = uniqueAgent();
    await optIn(agent);
    const foreign = await SELF.fetch(`${BASE}/agents/${agent}/a2a`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, origin: "https://evil.example", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: send("x") }),
    });
    expect(foreign.status).toBe(403);
    expect(await rpc(agent, DEV_TOKEN, "SendMessage", send("x"), { "a2a-version": "0.3" })).toMatchObject({ body: { error: { code: -32009 } } });
    const big = await rpc(agent, DEV_TOKEN, "SendMessage", send("x".repeat(A2A_REQUEST_BYTES)));
    expect(big).toMatchObject({ status: 413, body: { error: { code: -32600 } } });
    const history = await SELF.fetch(`${BASE}/agents/${agent}/messages`, { headers: { Authorization: `Bearer ${DEV_TOKEN}` } });
    expect(((await history.json()) as { messages: unknown[] }).messages).toEqual([]);
  });
});
