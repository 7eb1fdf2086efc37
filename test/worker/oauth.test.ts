// OAuth 2.1 for remote hosts in the real runtime: the metadata documents, the whole dance in plain
// fetch (register, PKCE authorize, sign in with a baton token, exchange, refresh), and what the
// access token may then do. It resolves to the same caller as a baton token: every route's scope
// check applies unchanged, a grant limited to agents reaches only those agents, a revoked grant or
// a removed signing token ends it at once, and baton Bearer tokens keep working beside it.
import { createExecutionContext, env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/env.ts";
import worker from "../../worker/index.ts";
import { REGISTRATIONS_PER_MINUTE } from "../../worker/rules/registration-limit.ts";
import { agentLimitRefusal, grantableScopes, grantCaller, parseAgentLimit } from "../../worker/rules/oauth-grants.ts";
import { grantListSchema } from "../../worker/wire/grants.ts";
import type { MessageFrame } from "../../worker/wire/protocol.ts";
import { SCOPES, type Scope } from "../../worker/wire/token-scopes.ts";
import { authorize, openSignIn, REDIRECT_URI, refresh, registerClient, submitSignIn, type FetchLike } from "../e2e/oauth-dance.ts";
import { BASE, claimant, DEV_TOKEN, message, post, uniqueAgent, write } from "./helpers.ts";

const f: FetchLike = (url, init) => SELF.fetch(url, init);

/**
 * Runs `scene` (21 registrations) until one run fell inside one rate-limit window: the runtime's
 * limiter counts in fixed 60 s windows, and a run that crossed a window's end (it takes a few
 * seconds on a loaded machine) started counting again at zero. Two runs cannot both cross one.
 */
async function inOneWindow<T>(scene: () => Promise<T>): Promise<T> {
  const windowOf = (ms: number) => Math.floor(ms / 60_000);
  for (let tries = 0; ; tries++) {
    const start = Date.now();
    const result = await scene();
    // A second of slack either side: the limiter reads its own clock.
    if (windowOf(start - 1000) === windowOf(Date.now() + 1000) || tries === 2) return result;
  }
}
const READER = "dev-reader-token"; // read
const PERSON = "dev-person-token"; // answer
const ADMIN = "dev-admin-token"; // admin

async function as(token: string, method: string, path: string, body?: unknown) {
  const res = await SELF.fetch(`${BASE}${path}`, {
    method, headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, challenge: res.headers.get("www-authenticate") };
}

describe("OAuth metadata", () => {
  it("serves the protected-resource document (RFC 9728) and the authorization-server metadata (RFC 8414) without a token", async () => {
    const resource = await SELF.fetch(`${BASE}/.well-known/oauth-protected-resource`);
    expect(resource.status).toBe(200);
    expect(await resource.json()).toMatchObject({ resource: BASE, authorization_servers: [BASE], bearer_methods_supported: ["header"] });
    const server = await SELF.fetch(`${BASE}/.well-known/oauth-authorization-server`);
    expect(server.status).toBe(200);
    expect(await server.json()).toMatchObject({
      issuer: BASE, authorization_endpoint: `${BASE}/authorize`, token_endpoint: `${BASE}/oauth/token`, registration_endpoint: `${BASE}/oauth/register`,
      code_challenge_methods_supported: ["S256"], scopes_supported: [...SCOPES],
    });
  });

  it("registration is budgeted per client address: the 20th in a minute is accepted, the 21st is 429 rate_limited, another address still registers", async () => {
    const register = (ip: string, origin?: string) => SELF.fetch(`${BASE}/oauth/register`, {
      method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": ip, ...(origin ? { origin } : {}) },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "flood", token_endpoint_auth_method: "none" }),
    });
    const { answers, refused } = await inOneWindow(async () => {
      const flooder = `203.0.113.${Math.floor(Math.random() * 250) + 1}`;
      const answers = [];
      for (let i = 0; i < REGISTRATIONS_PER_MINUTE; i++) answers.push((await register(flooder)).status);
      return { answers, refused: await register(flooder) };
    });
    expect(answers).toEqual(new Array(REGISTRATIONS_PER_MINUTE).fill(201));
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await refused.json()).toMatchObject({ error: "rate_limited", message: expect.stringContaining(`at most ${REGISTRATIONS_PER_MINUTE} client registrations a minute`) });
    expect((await register("198.51.100.7")).status).toBe(201);
  });

  it("an IPv6 /64 is one budget: rotating addresses inside it is refused after 20, the next /64 still registers", async () => {
    const register = (ip: string) => SELF.fetch(`${BASE}/oauth/register`, {
      method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": ip },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "rotating", token_endpoint_auth_method: "none" }),
    });
    const { prefix, answers } = await inOneWindow(async () => {
      const prefix = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:1`;
      const answers = [];
      for (let i = 1; i <= REGISTRATIONS_PER_MINUTE + 1; i++) answers.push((await register(`${prefix}::${i.toString(16)}`)).status);
      return { prefix, answers };
    });
    expect(answers.slice(0, REGISTRATIONS_PER_MINUTE).every((s) => s === 201)).toBe(true);
    expect(answers[REGISTRATIONS_PER_MINUTE]).toBe(429);
    expect((await register(`${prefix.slice(0, -1)}2::1`)).status).toBe(201);
  });

  it("a browser client reads the 429: it carries the CORS headers the provider's own registration answers carry", async () => {
    const origin = "https://host.example";
    const register = (ip: string) => SELF.fetch(`${BASE}/oauth/register`, {
      method: "POST", headers: { "content-type": "application/json", "cf-connecting-ip": ip, origin },
      body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: "browser", token_endpoint_auth_method: "none" }),
    });
    const cors = (res: Response) => Object.fromEntries([...res.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary"));
    const ip = `192.0.2.${Math.floor(Math.random() * 250) + 1}`;
    const accepted = await register(ip);
    expect(accepted.status).toBe(201);
    expect(cors(accepted)).toMatchObject({ "access-control-allow-origin": origin, "access-control-expose-headers": expect.stringContaining("Retry-After") });
    let refused = accepted;
    // Up to two windows' worth: the limiter's 60 s window may end while this counts.
    for (let i = 0; i < 2 * REGISTRATIONS_PER_MINUTE + 1 && refused.status !== 429; i++) refused = await register(ip);
    expect(refused.status).toBe(429);
    expect(cors(refused)).toEqual(cors(accepted));
  });

  it("a request without a token is 401 with a challenge that points at the metadata document", async () => {
    const res = await SELF.fetch(`${BASE}/whoami`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource"`);
    expect(await res.json()).toMatchObject({ error: "unauthorized" });
  });
});

describe("the OAuth dance", () => {
  it("register, PKCE authorize, sign in, exchange: the access token is the caller the person approved, refresh gives a new one, baton tokens still work", async () => {
    const { client, tokens } = await authorize(f, BASE, { token: DEV_TOKEN, scopes: ["read", "send"] });
    expect(tokens.scope.split(" ").sort()).toEqual(["read", "send"]);
    expect(await as(tokens.access_token, "GET", "/whoami")).toMatchObject({ status: 200, body: { account: "dev", token: "oauth.default", scopes: ["read", "send"] } });
    const agent = uniqueAgent();
    expect(await as(tokens.access_token, "POST", `/agents/${agent}/messages`, { text: "from a remote host" })).toMatchObject({ status: 201, body: { text: "from a remote host" } });
    expect(await as(tokens.access_token, "PUT", `/agents/${agent}/policy`, { mode: "pool" })).toMatchObject({ status: 403, body: { message: expect.stringContaining("lacks the admin scope") } });
    const renewed = await refresh(f, BASE, client, tokens.refresh_token);
    expect(renewed.status).toBe(200);
    expect(renewed.body.access_token).not.toBe(tokens.access_token);
    expect(await as(String(renewed.body.access_token), "GET", "/whoami")).toMatchObject({ status: 200, body: { scopes: ["read", "send"] } });
    expect(await as(DEV_TOKEN, "GET", "/whoami")).toMatchObject({ status: 200, body: { token: "default", scopes: [...SCOPES] } });
  });

  it("a grant without answer cannot answer a parked question; one with answer can, and the record names the OAuth caller", async () => {
    const agent = uniqueAgent();
    const { sock } = await claimant(agent, "ci");
    const id = await post(agent, "deploy?");
    const run = await sock.next("message", (m) => m.run && m.id === id) as MessageFrame;
    expect(await write(sock, { type: "park", id, token: run.token, question: { text: "ship it?", choices: ["yes", "no"] } })).toMatchObject({ op: "park" });
    const before = await message(agent, id);
    const sender = await authorize(f, BASE, { token: DEV_TOKEN, scopes: ["read", "send"] });
    const refused = await as(sender.tokens.access_token, "POST", `/agents/${agent}/messages/${id}/answer`, { choice: "yes" });
    expect(refused).toMatchObject({ status: 403, body: { error: "forbidden", message: expect.stringContaining("token oauth.default of account dev lacks the answer scope") } });
    expect(await message(agent, id)).toEqual(before);
    const person = await authorize(f, BASE, { token: PERSON, scopes: ["answer"] });
    const answered = await as(person.tokens.access_token, "POST", `/agents/${agent}/messages/${id}/answer`, { choice: "yes" });
    expect(answered).toMatchObject({ status: 200, body: { answers: [{ choice: "yes", account: "dev", token: "oauth.person" }] } });
    sock.close();
  });

  it("only scopes the pasted token has can be granted: the page says what is missing and grants nothing, then approves what the token has", async () => {
    const client = await registerClient(f, BASE);
    const page = await openSignIn(f, BASE, client, "read send");
    expect(page.status).toBe(200);
    expect(page.html).toContain("test host");
    expect(page.html).toContain("127.0.0.1");
    const tooMuch = await submitSignIn(f, BASE, page, { token: READER, scopes: ["read", "send"] });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.html).toContain("token reader lacks the send scope");
    const wrong = await submitSignIn(f, BASE, page, { token: "not-a-token", scopes: ["read"] });
    expect(wrong).toMatchObject({ status: 400, html: expect.stringContaining("not a baton token of this coordinator") });
    const grants = grantListSchema.parse((await as(ADMIN, "GET", "/grants")).body);
    expect(grants.grants.filter((g) => g.client_id === client.client_id)).toEqual([]);
    const ok = await submitSignIn(f, BASE, page, { token: READER, scopes: ["read"] });
    expect(ok.status).toBe(302);
    expect(ok.location).toMatch(new RegExp(`^${REDIRECT_URI}\\?code=`));
  });

  it("deny sends the client access_denied and grants nothing", async () => {
    const client = await registerClient(f, BASE);
    const page = await openSignIn(f, BASE, client, null);
    const denied = await submitSignIn(f, BASE, page, { token: "", scopes: [], decision: "deny" });
    expect(denied.status).toBe(302);
    const back = new URL(denied.location!);
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe(page.state);
  });

  it("the sign-in form is refused from a page on another origin, and a form posted without the page's cookie is refused", async () => {
    const client = await registerClient(f, BASE);
    const page = await openSignIn(f, BASE, client, null);
    const foreign = await SELF.fetch(`${BASE}/authorize`, { method: "POST", headers: { origin: "https://evil.example", "content-type": "application/x-www-form-urlencoded", cookie: page.cookie }, body: `handle=${page.handle}&decision=approve` });
    expect(foreign.status).toBe(403);
    const stranger = await submitSignIn(f, BASE, { ...page, cookie: "" }, { token: DEV_TOKEN, scopes: ["read"] });
    expect(stranger.status).toBe(400);
    expect(stranger.html).toContain("not started in this browser");
  });

  it("the page carries a CSP with no external assets and cannot be framed", async () => {
    const client = await registerClient(f, BASE);
    const res = await SELF.fetch(`${BASE}/authorize?${new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT_URI, code_challenge: "x".repeat(43), code_challenge_method: "S256" })}`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toMatch(/^default-src 'none'; style-src 'nonce-[A-Za-z0-9+/=]+'; base-uri 'none'; form-action 'self' http:\/\/127\.0\.0\.1:9; frame-ancestors 'none'$/);
    expect(await res.text()).not.toMatch(/<(script|link|img)\b/);
  });
});

describe("grants", () => {
  it("a grant limited to agents reaches their routes only: another agent and account-wide routes are 403", async () => {
    const mine = uniqueAgent();
    const other = uniqueAgent();
    const { tokens } = await authorize(f, BASE, { token: DEV_TOKEN, scopes: ["read", "send"], agents: `${mine}` });
    expect(await as(tokens.access_token, "POST", `/agents/${mine}/messages`, { text: "hi" })).toMatchObject({ status: 201 });
    expect((await as(tokens.access_token, "GET", `/agents/${mine}/presence`)).status).toBe(200);
    expect(await as(tokens.access_token, "POST", `/agents/${other}/messages`, { text: "hi" })).toMatchObject({ status: 403, body: { message: expect.stringContaining(`is limited to agents ${mine}, not ${other}`) } });
    expect(await as(tokens.access_token, "GET", `/agents/${other}/presence`)).toMatchObject({ status: 403 });
    expect(await as(tokens.access_token, "GET", "/agents")).toMatchObject({ status: 403, body: { message: expect.stringContaining("GET /agents is account-wide") } });
    expect(await as(tokens.access_token, "GET", "/metrics")).toMatchObject({ status: 403 });
    expect(await as(tokens.access_token, "GET", "/whoami")).toMatchObject({ status: 200, body: { scopes: ["read", "send"], agents: [mine] } });
  });

  it("GET /grants lists each grant (client, scopes, agents, who signed in); revoking one ends its access and refresh tokens at once", async () => {
    const agent = uniqueAgent();
    const { client, tokens } = await authorize(f, BASE, { token: PERSON, scopes: ["read", "answer"], agents: agent });
    const listed = grantListSchema.parse((await as(ADMIN, "GET", "/grants")).body).grants.find((g) => g.client_id === client.client_id)!;
    expect(listed).toMatchObject({ client_name: "test host", scopes: ["read", "answer"], agents: [agent], signed_in_with: "person", expires_at: expect.any(Number) });
    expect(await as(READER, "GET", "/grants")).toMatchObject({ status: 403 });
    expect(await as(tokens.access_token, "GET", "/grants")).toMatchObject({ status: 403 });
    expect(await as(ADMIN, "DELETE", `/grants/${listed.id}`)).toMatchObject({ status: 200, body: { revoked: listed.id } });
    const after = await as(tokens.access_token, "GET", "/whoami");
    expect(after).toMatchObject({ status: 401, challenge: expect.stringContaining("resource_metadata=") });
    expect((await refresh(f, BASE, client, tokens.refresh_token)).status).toBe(400);
    expect(await as(ADMIN, "DELETE", `/grants/${listed.id}`)).toMatchObject({ status: 404, body: { error: "not_found" } });
    expect(await as(ADMIN, "DELETE", "/grants/no%20such")).toMatchObject({ status: 400, body: { error: "bad_name" } });
  });

  it("a grant ends when the token that signed it in is removed from BATON_TOKENS, and narrows with it", async () => {
    const { tokens } = await authorize(f, BASE, { token: PERSON, scopes: ["answer"] });
    const configured = (env as unknown as Env).BATON_TOKENS!;
    const whoami = (vars: Partial<Env>) => worker.fetch(new Request(`${BASE}/whoami`, { headers: { Authorization: `Bearer ${tokens.access_token}` } }), { ...(env as unknown as Env), ...vars }, createExecutionContext());
    expect((await whoami({})).status).toBe(200);
    const without = configured.split(",").filter((e) => !e.startsWith("dev:person:")).join(",");
    expect((await whoami({ BATON_TOKENS: without })).status).toBe(401);
    const narrowed = configured.replace("dev:person:answer:", "dev:person:read:");
    expect(await (await whoami({ BATON_TOKENS: narrowed })).json()).toMatchObject({ scopes: ["read"] });
  });

  it("a coordinator without OAUTH_KV answers OAuth paths 404 and sends no challenge", async () => {
    const off = { ...(env as unknown as Env), OAUTH_KV: undefined };
    const meta = await worker.fetch(new Request(`${BASE}/.well-known/oauth-authorization-server`), off, createExecutionContext());
    expect(meta.status).toBe(404);
    const refused = await worker.fetch(new Request(`${BASE}/whoami`), off, createExecutionContext());
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBeNull();
  });
});

describe("grant rules", () => {
  it("the agent field: blank is every agent; names are checked, deduplicated and sorted; too many or a bad name is refused", () => {
    expect(parseAgentLimit("  ")).toEqual({ ok: true, value: null });
    expect(parseAgentLimit("b, a a")).toEqual({ ok: true, value: ["a", "b"] });
    expect(parseAgentLimit("ok, Bad!")).toMatchObject({ ok: false, message: expect.stringContaining('"Bad!" is not an agent name') });
    expect(parseAgentLimit(Array.from({ length: 33 }, (_, i) => `a${i}`).join(","))).toMatchObject({ ok: false, message: "a grant may name at most 32 agents, got 33" });
  });

  it("only ticked scopes the token has: an unknown or missing one refuses the whole approval", () => {
    expect(grantableScopes(["send", "read"], ["read", "send"], "t")).toEqual({ ok: true, value: ["read", "send"] });
    expect(grantableScopes(["read", "admin"], ["read", "send"], "t")).toMatchObject({ ok: false, message: expect.stringContaining("token t lacks the admin scope") });
    expect(grantableScopes(["root"], [...SCOPES], "t")).toMatchObject({ ok: false, message: expect.stringContaining('unknown scope "root"') });
    expect(grantableScopes([], [...SCOPES], "t")).toMatchObject({ ok: false });
  });

  it("the caller is the grant's scopes that the signing token still has, read implied, and the grant its credential; another account's token is no signer", () => {
    const props = { account: "dev", signer: "ab", signerName: "ana", agents: ["a"] };
    const signer = { account: "dev", tokenName: "ana", credential: "token.ab", scopes: ["read", "answer"] as Scope[] };
    expect(grantCaller(props, ["send", "answer"], signer, "u:g1")).toEqual({ account: "dev", tokenName: "oauth.ana", credential: "grant.u:g1", scopes: ["read", "answer"], agents: ["a"] });
    expect(grantCaller(props, ["send"], { ...signer, account: "other", scopes: [...SCOPES] }, "u:g1")).toBeNull();
    expect(grantCaller(props, ["send"], null, "u:g1")).toBeNull();
  });

  it("agent limits: none for an unlimited caller; a limited one reaches its agents and whoami only", () => {
    const limited = { account: "dev", tokenName: "oauth.ana", credential: "grant.u:g1", scopes: [...SCOPES], agents: ["a"] };
    expect(agentLimitRefusal({ ...limited, agents: undefined }, "GET /agents", null)).toBeNull();
    expect(agentLimitRefusal(limited, "GET /agents/{agent}/presence", "a")).toBeNull();
    expect(agentLimitRefusal(limited, "GET /agents/{agent}/presence", "b")).toContain("not b");
    expect(agentLimitRefusal(limited, "GET /leases/{session}", null)).toContain("account-wide");
    expect(agentLimitRefusal(limited, "GET /whoami", null)).toBeNull();
  });
});
