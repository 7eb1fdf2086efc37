// Attacks on the newest surfaces (OAuth grants, quorum questions, approval permits, the remote
// endpoints) that once worked, each kept as the test that saw it go red: the repro, then what
// must hold instead.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { authorize, clientAddress, openSignIn, pkce, REDIRECT_URI, registerClient, submitSignIn, type FetchLike } from "../e2e/oauth-dance.ts";
import { grantCaller } from "../../worker/rules/oauth-grants.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { BASE, call, claimant, DEV_TOKEN, message, OTHER_TOKEN, post, uniqueAgent, write } from "./helpers.ts";

const f: FetchLike = (url, init) => SELF.fetch(url, init);
const PERSON = "dev-person-token"; // token "person", scope answer
const ADMIN = "dev-admin-token"; // token "admin", every scope
const READER = "dev-reader-token"; // token "reader", read only

async function as(token: string, method: string, path: string, body?: unknown) {
  const res = await SELF.fetch(`${BASE}${path}`, {
    method, headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe("a question several people decide", () => {
  it("one token approving directly and again through an OAuth grant it signed in counts once", async () => {
    const agent = uniqueAgent();
    const id = await post(agent, "q", { question: { text: "Pay $500?", needs: 2 } });
    const { tokens } = await authorize(f, BASE, { token: PERSON, scopes: ["answer"] });
    expect((await as(PERSON, "POST", `/agents/${agent}/messages/${id}/approve`, {})).body).toMatchObject({ status: "parked" });
    // Before: "oauth.person" was a second name, so the same token decided a question that needs two people.
    const twice = await as(tokens.access_token, "POST", `/agents/${agent}/messages/${id}/approve`, {});
    expect(twice).toMatchObject({ status: 200, body: { status: "parked", question: { quorum: { approvals: 1, needs: 2 } } } });
    expect(twice.body.answers.map((a: { token: string }) => a.token)).toEqual(["person", "oauth.person"]);
    expect((await as(ADMIN, "POST", `/agents/${agent}/messages/${id}/approve`, {})).body).toMatchObject({ status: "acknowledged" });
  });
});

describe("OAuth grants", () => {
  it("another token approving the same client adds its own grant and leaves the first one working; the same token approving again replaces its own", async () => {
    const { client, tokens } = await authorize(f, BASE, { token: ADMIN, scopes: ["admin"] });
    // Before: any token of the account that knew the client id (a read-only one too) ended the admin's grant this way.
    const page = await openSignIn(f, BASE, client, null);
    expect(await submitSignIn(f, BASE, page, { token: READER, scopes: ["read"] })).toMatchObject({ status: 302 });
    expect(await as(tokens.access_token, "GET", "/whoami")).toMatchObject({ status: 200, body: { token: "oauth.admin" } });
    const again = await openSignIn(f, BASE, client, null);
    expect(await submitSignIn(f, BASE, again, { token: ADMIN, scopes: ["read"] })).toMatchObject({ status: 302 });
    expect((await as(tokens.access_token, "GET", "/whoami")).status).toBe(401);
    const listed = (await as(ADMIN, "GET", "/grants")).body.grants.filter((g: { client_id: string }) => g.client_id === client.client_id);
    expect(listed.map((g: { signed_in_with: string }) => g.signed_in_with).sort()).toEqual(["admin", "reader"]);
  });
});

describe("OAuth grants: admin", () => {
  it("a grant of admin alone has every scope, as an admin token has (it could not send before)", async () => {
    const { tokens } = await authorize(f, BASE, { token: ADMIN, scopes: ["admin"] });
    expect(await as(tokens.access_token, "GET", "/whoami")).toMatchObject({ status: 200, body: { scopes: ["read", "send", "serve", "answer", "admin"] } });
    expect((await as(tokens.access_token, "POST", `/agents/${uniqueAgent()}/messages`, { text: "x" })).status).toBe(201);
    // Narrowed with its signing token: the signer's scopes now, not read alone.
    expect(grantCaller({ account: "dev", signer: "ab", signerName: "admin", agents: null }, ["admin"], { account: "dev", tokenName: "admin", credential: "token.ab", scopes: ["read", "answer"] }, "u:g"))
      .toMatchObject({ scopes: ["read", "answer"] });
  });
});

describe("approval permits", () => {
  it("arguments holding a number JSON cannot carry exactly (beyond ±2^53) are refused, nothing asked: two amounts would share one digest", async () => {
    const agent = uniqueAgent();
    const { sock } = await claimant(agent, "a");
    const id = await post(agent, "pay");
    const run = await sock.next("message", (m) => m.run && m.id === id) as MessageFrame;
    // Raw text, as a Python runner sends its int: 9007199254740993 parses to ...992, so a person would
    // approve one amount and a run could spend the permit on the other.
    for (const [n, amount] of [["1", "9007199254740993"], ["2", "-9007199254740992"], ["3", "1e300"]] as const) {
      sock.sendRaw(`{"type":"step","id":${id},"token":${run.token},"name":"charge","kind":"effect","phase":"intent","approve":{"question":"Pay?","args":{"amount":${amount}}},"req":"big${n}"}`);
      expect(await sock.next("error", (e) => e.req === `big${n}`)).toMatchObject({ code: "bad_frame", message: expect.stringContaining("send it as a string") });
    }
    sock.sendRaw(`{"type":"step","id":${id},"token":${run.token},"name":"charge","kind":"effect","phase":"intent","approve":{"question":"Pay?","args":{"amount":9007199254740991,"cents":0.1}},"req":"ok"}`);
    expect(await sock.next("error", (e) => e.req === "ok")).toMatchObject({ code: "approval_required" });
    expect((await message(agent, id)).permits ?? []).toEqual([]);
  });
});

describe("the OAuth provider's own paths", () => {
  it("registration and the token endpoint refuse a body over 16 KiB (413) before reading it, and register nothing", async () => {
    const kv = (env as unknown as { OAUTH_KV: KVNamespace }).OAUTH_KV;
    const clients = async () => (await kv.list({ prefix: "client:" })).keys.length;
    const before = await clients();
    // Before: registration is unauthenticated and stored a 1 MB client name (201); the sign-in page then showed it.
    const huge = await SELF.fetch(`${BASE}/oauth/register`, {
      method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": clientAddress(), origin: "https://host.example" },
      body: JSON.stringify({ redirect_uris: ["http://127.0.0.1:9/cb"], client_name: "n".repeat(1_000_000), token_endpoint_auth_method: "none" }),
    });
    expect(huge.status).toBe(413);
    expect(huge.headers.get("access-control-allow-origin")).toBe("https://host.example"); // a browser client reads the 413
    const token = await SELF.fetch(`${BASE}/oauth/token`, {
      method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `grant_type=refresh_token&refresh_token=${"y".repeat(2_000_000)}`,
    });
    expect(token.status).toBe(413);
    expect(await clients()).toBe(before);
    const fits = await SELF.fetch(`${BASE}/oauth/register`, {
      method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": clientAddress() },
      body: JSON.stringify({ redirect_uris: ["http://127.0.0.1:9/cb"], client_name: "n".repeat(4000), token_endpoint_auth_method: "none" }),
    });
    expect(fits.status).toBe(201);
  });
});

describe("what held: a grant limited to one agent, without answer, on the remote endpoints", () => {
  it("MCP and A2A reach no other agent, nothing account-wide, and answer or cancel nothing; another account's token finds no task", async () => {
    const mine = uniqueAgent();
    const other = uniqueAgent();
    for (const agent of [mine, other]) expect((await call("PUT", `/agents/${agent}/policy`, { a2a: true })).status).toBe(200);
    const { tokens } = await authorize(f, BASE, { token: DEV_TOKEN, scopes: ["read", "send", "serve"], agents: mine });
    const mcp = async (name: string, args: Record<string, unknown>) => {
      const res = await SELF.fetch(`${BASE}/mcp`, {
        method: "POST", headers: { Authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
      });
      return res.text();
    };
    expect(await mcp("send", { agent: other, text: "sneak", wait_seconds: 0 })).toContain(`is limited to agents ${mine}, not ${other}`);
    expect(await mcp("lease_acquire", { session: "s1" })).toContain("is account-wide");
    expect((await call("GET", `/agents/${other}/messages`)).body.messages).toEqual([]);
    const rpc = async (token: string, agent: string, method: string, params: unknown) => {
      const res = await SELF.fetch(`${BASE}/agents/${agent}/a2a`, {
        method: "POST", headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    const parked = await post(mine, "q", { question: { text: "ok?" } });
    const answer = await rpc(tokens.access_token, mine, "SendMessage", { message: { messageId: "m1", role: "ROLE_USER", taskId: String(parked), parts: [{ text: "approve" }] } });
    expect(answer).toMatchObject({ status: 403, body: { error: { code: -32600, message: expect.stringContaining("lacks the answer scope") } } });
    expect((await rpc(tokens.access_token, mine, "CancelTask", { id: String(parked) })).status).toBe(403);
    expect((await rpc(tokens.access_token, other, "GetTask", { id: "1" })).status).toBe(403);
    expect((await message(mine, parked)).status).toBe("parked");
    const stranger = await rpc(OTHER_TOKEN, mine, "GetTask", { id: String(parked) });
    expect(stranger.body.error).toMatchObject({ code: -32004, message: expect.stringContaining("does not answer A2A") });
  });
});

describe("what held: codes, PKCE and redirects", () => {
  it("a code needs its verifier, its redirect URI and its client, works once, and a second use ends the grant; plain or no PKCE and an unregistered redirect get no page", async () => {
    const token = async (form: Record<string, string>) => (await SELF.fetch(`${BASE}/oauth/token`, {
      method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(form).toString(),
    })).status;
    const client = await registerClient(f, BASE);
    const page = await openSignIn(f, BASE, client, null);
    const signed = await submitSignIn(f, BASE, page, { token: DEV_TOKEN, scopes: ["read"] });
    const code = new URL(signed.location!).searchParams.get("code")!;
    const exchange = { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI, client_id: client.client_id, code_verifier: page.verifier };
    expect(await token({ ...exchange, code_verifier: "" })).toBe(400);
    expect(await token({ ...exchange, code_verifier: (await pkce()).verifier })).toBe(400);
    expect(await token({ ...exchange, redirect_uri: "http://127.0.0.1:9/other" })).toBe(400);
    expect(await token({ ...exchange, client_id: (await registerClient(f, BASE)).client_id })).toBe(400);
    const first = await SELF.fetch(`${BASE}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(exchange).toString() });
    const { access_token } = (await first.json()) as { access_token: string };
    expect((await as(access_token, "GET", "/whoami")).status).toBe(200);
    expect(await token(exchange)).toBe(400);
    expect((await as(access_token, "GET", "/whoami")).status).toBe(401);
    const authorizeWith = (params: Record<string, string>) => SELF.fetch(`${BASE}/authorize?${new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT_URI, state: "s", ...params })}`, { redirect: "manual" });
    expect((await authorizeWith({ code_challenge: "a".repeat(43), code_challenge_method: "plain" })).headers.get("location")).toContain("error=invalid_request");
    expect((await authorizeWith({})).headers.get("location")).toContain("error=invalid_request");
    const elsewhere = await authorizeWith({ redirect_uri: "https://evil.example/cb", code_challenge: "a".repeat(43), code_challenge_method: "S256" });
    expect([elsewhere.status, elsewhere.headers.get("location")]).toEqual([400, null]);
    for (const uri of ["javascript:alert(1)", "http://evil.example/cb", "https://evil.example/cb#x"]) {
      const registered = await SELF.fetch(`${BASE}/oauth/register`, { method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": clientAddress() }, body: JSON.stringify({ redirect_uris: [uri], token_endpoint_auth_method: "none" }) });
      expect(registered.status).toBe(400);
    }
  });
});

describe("what held: retries sent at once", () => {
  it("the same A2A messageId twice at once, and the same MCP session and request id twice at once, each post one message", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/policy`, { a2a: true })).status).toBe(200);
    const a2a = () => SELF.fetch(`${BASE}/agents/${agent}/a2a`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "once" }] }, configuration: { returnImmediately: true } } }),
    }).then(async (r) => ((await r.json()) as { result: { task: { id: string } } }).result.task.id);
    const [x, y] = await Promise.all([a2a(), a2a()]);
    expect(x).toBe(y);
    const mcp = () => SELF.fetch(`${BASE}/mcp`, {
      method: "POST", headers: { Authorization: `Bearer ${DEV_TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": "s-1" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 42, method: "tools/call", params: { name: "send", arguments: { agent, text: "once too", wait_seconds: 0 } } }),
    }).then((r) => r.text());
    await Promise.all([mcp(), mcp()]);
    expect((await as(DEV_TOKEN, "GET", `/agents/${agent}/messages`)).body.messages.map((m: { text: string }) => m.text)).toEqual(["once", "once too"]);
  });
});

/** Revokes the dev account's grant of an OAuth client, as its admin would. */
async function revokeGrantOf(clientId: string): Promise<void> {
  const grant = (await as(DEV_TOKEN, "GET", "/grants")).body.grants.find((g: { client_id: string }) => g.client_id === clientId);
  expect((await call("DELETE", `/grants/${grant.id}`)).status).toBe(200);
}

/** What a stream sends until it ends, or until `text` shows up in it. */
async function readUntilEndOr(reader: ReadableStreamDefaultReader<Uint8Array>, text: string): Promise<string> {
  const decoder = new TextDecoder();
  let seen = "";
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    seen += decoder.decode(chunk.value);
    if (seen.includes(text)) break;
  }
  return seen;
}

describe("a stream and its grant", () => {
  // Before: an A2A stream was authorised once, when it opened (a2a-calls.ts kept the Caller, not
  // the credential), so after DELETE /grants/{id} (whoami already 401) it went on delivering the
  // task's output for up to 5 minutes. Now it asks again before each page it reads.
  it("a revoked grant's open A2A stream ends before the next output", async () => {
    const agent = uniqueAgent();
    expect((await call("PUT", `/agents/${agent}/policy`, { a2a: true })).status).toBe(200);
    const { sock } = await claimant(agent, "a");
    const id = await post(agent, "work");
    const run = await sock.next("message", (x) => x.run && x.id === id) as MessageFrame;
    const { tokens, client } = await authorize(f, BASE, { token: PERSON, scopes: ["read"] });
    const res = await SELF.fetch(`${BASE}/agents/${agent}/a2a`, {
      method: "POST", headers: { Authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SubscribeToTask", params: { id: String(id) } }),
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toContain('"task"');
    await revokeGrantOf(client.client_id);
    expect((await as(tokens.access_token, "GET", "/whoami")).status).toBe(401);
    await write(sock, { type: "output", id, token: run.token, chunks: [{ stream: "stdout", text: "after the revoke" }] });
    expect(await readUntilEndOr(reader, "after the revoke")).not.toContain("after the revoke");
  }, 60_000);

  // Before: GET …/output as Server-Sent Events was authorised once, when it opened, and went on
  // delivering a running message's output for up to 5 minutes after the grant was revoked.
  it("a revoked grant's open output stream (SSE) ends before the next output", async () => {
    const agent = uniqueAgent();
    const { sock } = await claimant(agent, "a");
    const id = await post(agent, "work");
    const run = await sock.next("message", (x) => x.run && x.id === id) as MessageFrame;
    const { tokens, client } = await authorize(f, BASE, { token: PERSON, scopes: ["read"] });
    const res = await SELF.fetch(`${BASE}/agents/${agent}/messages/${id}/output`, { headers: { Authorization: `Bearer ${tokens.access_token}`, accept: "text/event-stream" } });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toContain("retry:");
    await reader.read(); // the first page, read when the stream opened
    await revokeGrantOf(client.client_id);
    await write(sock, { type: "output", id, token: run.token, chunks: [{ stream: "stdout", text: "after the revoke" }] });
    expect(await readUntilEndOr(reader, "after the revoke")).not.toContain("after the revoke");
    // The same token's reader with a credential that stands still gets it.
    const page = await as(DEV_TOKEN, "GET", `/agents/${agent}/messages/${id}/output?format=json`);
    expect(JSON.stringify(page.body)).toContain("after the revoke");
  }, 60_000);
});
