// OAuth 2.1 against a real `wrangler dev` (the e2e-browser project's), as a remote MCP host does
// it in plain fetch: the metadata documents, register a client, authorize with PKCE, sign in on
// baton's page with a baton token, exchange the code, call routes with the access token, refresh;
// a grant without answer cannot answer, a grant limited to an agent reaches no other, and `baton
// grants revoke` ends a grant: its access token is 401 at once. Baton tokens work beside OAuth
// throughout.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grantListSchema } from "../../worker/wire/grants.ts";
import { OAUTH_PERSON } from "./dashboard-accounts.ts";
import { projectChromium, projectCoordinator, type ProjectCoordinator } from "./dashboard-browser.ts";
import { authorize, exchangeCode, openSignIn, REDIRECT_URI, refresh, registerClient, type FetchLike } from "./oauth-dance.ts";
import { runBaton, uniqueAgent } from "./serve-helpers.ts";
import { DEV_TOKEN } from "./wrangler-dev.ts";

const PERSON = OAUTH_PERSON.token;
const f: FetchLike = (url, init) => fetch(url, init);

// The e2e-browser project's wrangler dev and Chromium (dashboard-dev.global.ts), which know PERSON
// as "ana" of account "dev": no other file of the project uses account "dev" or makes grants.
let dev: ProjectCoordinator;
let chromium: Browser;
beforeAll(async () => {
  [dev, chromium] = await Promise.all([projectCoordinator(), projectChromium()]);
});
afterAll(async () => {
  await chromium?.close();
  await dev?.own?.stop();
});

async function call(token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${dev.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("OAuth against wrangler dev", () => {
  it("serves both metadata documents, and a 401 points at the protected-resource one", async () => {
    const resource = await (await fetch(`${dev.url}/.well-known/oauth-protected-resource`)).json();
    expect(resource).toMatchObject({ resource: dev.url, authorization_servers: [dev.url] });
    const server = await (await fetch(`${dev.url}/.well-known/oauth-authorization-server`)).json();
    expect(server).toMatchObject({ issuer: dev.url, registration_endpoint: `${dev.url}/oauth/register`, code_challenge_methods_supported: ["S256"] });
    const refused = await fetch(`${dev.url}/agents`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain(`resource_metadata="${dev.url}/.well-known/oauth-protected-resource"`);
  });

  it("the whole dance: register, PKCE, sign in, exchange, call, refresh, then `baton grants revoke` and the token fails", async () => {
    const agent = uniqueAgent("oauth");
    const { client, tokens } = await authorize(f, dev.url, { token: PERSON, scopes: ["read", "send"] }, "read send");
    expect(await call(tokens.access_token, "GET", "/whoami")).toMatchObject({ status: 200, body: { account: "dev", token: "oauth.ana", scopes: ["read", "send"] } });
    const posted = await call(tokens.access_token, "POST", `/agents/${agent}/messages`, { text: "from a remote host" });
    expect(posted).toMatchObject({ status: 201, body: { status: "queued" } });
    // Without answer the grant cannot answer, whatever the message: refused by the scope check before any object is asked.
    expect(await call(tokens.access_token, "POST", `/agents/${agent}/messages/${posted.body.id}/answer`, { choice: "yes" }))
      .toMatchObject({ status: 403, body: { message: expect.stringContaining("token oauth.ana of account dev lacks the answer scope") } });
    const renewed = await refresh(f, dev.url, client, tokens.refresh_token);
    expect(renewed.status).toBe(200);
    const access = String(renewed.body.access_token);
    expect((await call(access, "GET", `/agents/${agent}/messages`)).status).toBe(200);

    const listed = runBaton(["grants", "list", "--json"], { BATON_URL: dev.url });
    expect(listed.code, listed.stderr).toBe(0);
    const grant = grantListSchema.parse(JSON.parse(listed.stdout)).grants.find((g) => g.client_id === client.client_id)!;
    expect(grant).toMatchObject({ client_name: "test host", scopes: ["read", "send"], agents: null, signed_in_with: "ana" });
    expect(runBaton(["grants", "list"], { BATON_URL: dev.url }).stdout).toContain(`${grant.id}  test host`);
    const revoked = runBaton(["grants", "revoke", grant.id], { BATON_URL: dev.url });
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked grant ${grant.id}: its tokens no longer work\n` });
    expect((await call(access, "GET", "/whoami")).status).toBe(401);
    expect((await refresh(f, dev.url, client, String(renewed.body.refresh_token))).status).toBe(400);
    expect(runBaton(["grants", "revoke", grant.id], { BATON_URL: dev.url })).toMatchObject({ code: 1, stderr: expect.stringContaining(`no grant ${grant.id}`) });
    expect(await call(DEV_TOKEN, "GET", "/whoami")).toMatchObject({ status: 200, body: { token: "default" } });
  });

  it("a grant limited to one agent posts to it and is refused every other agent and the directory", async () => {
    const mine = uniqueAgent("oauth-mine");
    const other = uniqueAgent("oauth-other");
    const { tokens } = await authorize(f, dev.url, { token: PERSON, scopes: ["send", "answer"], agents: mine });
    expect((await call(tokens.access_token, "POST", `/agents/${mine}/messages`, { text: "hi" })).status).toBe(201);
    expect(await call(tokens.access_token, "POST", `/agents/${other}/messages`, { text: "hi" })).toMatchObject({ status: 403, body: { message: expect.stringContaining(`limited to agents ${mine}, not ${other}`) } });
    expect((await call(tokens.access_token, "GET", "/agents")).status).toBe(403);
    expect((await call(DEV_TOKEN, "GET", `/agents/${other}/messages`)).body).toMatchObject({ messages: [] });
  });
});

describe("OAuth in a real browser", () => {
  it("a person signs in on the page (its CSP, cookie and redirect as a browser keeps them), then revokes the grant from the dashboard", async () => {
    const browser = await chromium.newContext({ viewport: { width: 1100, height: 900 } });
    try {
      const client = await registerClient(f, dev.url, "browser host");
      // The page's PKCE request, opened by the browser rather than by fetch: only its URL is borrowed.
      const planned = await openSignIn(f, dev.url, client, "read answer");
      const page = await browser.newPage();
      const violations: string[] = [];
      page.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
      await page.goto(`${dev.url}/authorize${planned.query}`);
      expect(await page.locator("h1").textContent()).toBe("Allow browser host to use baton?");
      expect(await page.locator('input[name="scope"][value="answer"]').isChecked()).toBe(true);
      await page.fill('input[name="token"]', PERSON);
      const back = page.waitForRequest((r) => r.url().startsWith(REDIRECT_URI));
      await page.click('button[value="approve"]');
      const location = (await back).url();
      const tokens = await exchangeCode(f, dev.url, client, planned, location);
      expect(await call(tokens.access_token, "GET", "/whoami")).toMatchObject({ status: 200, body: { scopes: ["read", "answer"] } });
      expect(violations).toEqual([]);

      const dashboard = await browser.newPage();
      dashboard.on("dialog", (d) => void d.accept());
      await dashboard.goto(dev.url);
      await dashboard.locator('#status[data-state="live"]').waitFor();
      await dashboard.click("#grants-toggle");
      const row = dashboard.locator(`#grants li:has-text("browser host")`);
      await row.waitFor();
      expect(await row.textContent()).toContain("read answer · every agent · signed in with ana");
      await row.locator('[data-role="revoke-grant"]').click();
      await dashboard.locator('#grants [role="status"]').waitFor();
      expect(await dashboard.locator('#grants [role="status"]').textContent()).toMatch(/^revoked browser host/);
      expect(await dashboard.locator(`#grants li:has-text("browser host")`).count()).toBe(0);
      expect((await call(tokens.access_token, "GET", "/whoami")).status).toBe(401);
    } finally {
      await browser.close();
    }
  });
});
