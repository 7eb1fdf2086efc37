// Sign-in codes on the OAuth sign-in page in the real runtime: POST /sign-in-codes makes one for a
// baton token (never for an OAuth grant's), the page takes it instead of the token and signs in as
// that token (its account, name and scopes, its hash in the grant), the approval spends it; a
// form with both or neither, a refused form, a malformed, wrong or used code grant nothing; codes
// typed are counted per client address; a code of a removed token is refused, and without OAuth or
// the code limit no code is made.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/env.ts";
import { grantListSchema, SIGN_IN_CODE_LIMITS, signInCodeSchema } from "../../worker/wire/grants.ts";
import { authorize, clientAddress, exchangeCode, openSignIn, registerClient, submitSignIn } from "../e2e/oauth-dance.ts";
import { BASE, DEV_TOKEN } from "./helpers.ts";
import { as, aWrongCode, errorOf, f, mintCode, newPage, withEnv } from "./sign-in-code-helpers.ts";

const PERSON = "dev-person-token"; // answer (and read)
const ADMIN = "dev-admin-token";

describe("POST /sign-in-codes", () => {
  it(`answers 201 with a code XXXX-XXXX-XXXX that lapses in ${SIGN_IN_CODE_LIMITS.minutes} minutes; an OAuth grant's access token may not make one`, async () => {
    const before = Date.now();
    const made = await as(PERSON, "POST", "/sign-in-codes");
    expect(made.status).toBe(201);
    const { code, expires_at } = signInCodeSchema.parse(made.body);
    expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
    expect(expires_at - before).toBeGreaterThanOrEqual(SIGN_IN_CODE_LIMITS.minutes * 60_000 - 1000);
    expect(expires_at - Date.now()).toBeLessThanOrEqual(SIGN_IN_CODE_LIMITS.minutes * 60_000 + 1000);
    expect(await mintCode(PERSON)).not.toBe(code);
    const { tokens } = await authorize(f, BASE, { token: DEV_TOKEN, scopes: ["read"] });
    expect(await as(tokens.access_token, "POST", "/sign-in-codes")).toMatchObject({ status: 403, body: { error: "forbidden", message: expect.stringContaining("not with an OAuth grant's") } });
  });

  it("without OAUTH_KV or without OAUTH_CODE_LIMIT no code is made (501), and without the limit the page takes none", async () => {
    expect(await as(PERSON, "POST", "/sign-in-codes", withEnv({ OAUTH_KV: undefined }))).toMatchObject({ status: 501, body: { error: "not_configured", message: expect.stringContaining("OAUTH_KV") } });
    const unlimited = withEnv({ OAUTH_CODE_LIMIT: undefined });
    expect(await as(PERSON, "POST", "/sign-in-codes", unlimited)).toMatchObject({ status: 501, body: { error: "not_configured", message: expect.stringContaining("OAUTH_CODE_LIMIT") } });
    const code = await mintCode(PERSON);
    const page = await newPage(unlimited);
    expect(await submitSignIn(unlimited, BASE, page, { code, scopes: ["answer"] })).toMatchObject({ status: 400, html: expect.stringContaining("takes no sign-in codes") });
    expect((await submitSignIn(f, BASE, page, { code, scopes: ["answer"] })).status).toBe(302);
  });
});

describe("signing in with a code", () => {
  it("signs in as the token that made it: its account and name, scopes capped by it (the refusal not naming it), its hash in the grant; a refused form spends nothing, the approval spends it", async () => {
    const code = await mintCode(PERSON);
    const client = await registerClient(f, BASE);
    const page = await openSignIn(f, BASE, client, "read answer");
    expect(page.html).toContain('name="code"');
    const tooMuch = await submitSignIn(f, BASE, page, { code, scopes: ["read", "send"] });
    expect(tooMuch.status).toBe(400);
    // Before the spend a code's refusal never names its token: whoever holds the code must not learn it without spending it.
    expect(errorOf(tooMuch.html)).toBe("the token of this sign-in code lacks the send scope: a grant never has more than the token that approves it");
    // Typed as a person might: lower case, a space for one dash, none for the other.
    const signed = await submitSignIn(f, BASE, page, { code: code.toLowerCase().replace("-", " ").replace("-", ""), scopes: ["read", "answer"] });
    expect(signed.status, signed.html).toBe(302);
    const tokens = await exchangeCode(f, BASE, client, page, signed.location!);
    expect(await as(tokens.access_token, "GET", "/whoami")).toMatchObject({ status: 200, body: { account: "dev", token: "oauth.person", scopes: ["read", "answer"] } });
    const grant = grantListSchema.parse((await as(ADMIN, "GET", "/grants")).body).grants.find((g) => g.client_id === client.client_id);
    expect(grant).toMatchObject({ scopes: ["read", "answer"], signed_in_with: "person" });
    // The grant names the token by its hash, as a token's sign-in does: removing the token ends it.
    const configured = (env as unknown as Env).BATON_TOKENS!;
    const withoutPerson = withEnv({ BATON_TOKENS: configured.split(",").filter((e) => !e.startsWith("dev:person:")).join(",") });
    expect((await as(tokens.access_token, "GET", "/whoami", withoutPerson)).status).toBe(401);

    const again = await submitSignIn(f, BASE, await newPage(), { code, scopes: ["read"] });
    expect(again).toMatchObject({ status: 400, html: expect.stringContaining("that sign-in code is wrong, used or expired") });
  });

  it("a token and a code together, or neither, are refused with the page and grant nothing; the code still signs in after", async () => {
    const code = await mintCode(PERSON);
    const client = await registerClient(f, BASE);
    const page = await openSignIn(f, BASE, client, "read");
    expect(await submitSignIn(f, BASE, page, { token: PERSON, code, scopes: ["read"] })).toMatchObject({ status: 400, html: expect.stringContaining("a baton token or a sign-in code, not both") });
    expect(await submitSignIn(f, BASE, page, { scopes: ["read"] })).toMatchObject({ status: 400, html: expect.stringContaining("paste a baton token, or type a sign-in code") });
    expect(grantListSchema.parse((await as(ADMIN, "GET", "/grants")).body).grants.filter((g) => g.client_id === client.client_id)).toEqual([]);
    expect((await submitSignIn(f, BASE, page, { code, scopes: ["read"] })).status).toBe(302);
  });

  it("a malformed or a wrong code is refused with the page; a code whose token was removed from BATON_TOKENS is refused and not spent", async () => {
    const page = await newPage();
    expect(await submitSignIn(f, BASE, page, { code: "K7QD-M2X", scopes: ["read"] })).toMatchObject({ status: 400, html: expect.stringContaining("that is not a sign-in code") });
    expect(await submitSignIn(f, BASE, page, { code: aWrongCode(), scopes: ["read"] })).toMatchObject({ status: 400, html: expect.stringContaining("that sign-in code is wrong, used or expired") });
    const code = await mintCode(PERSON);
    const configured = (env as unknown as Env).BATON_TOKENS!;
    const removed = withEnv({ BATON_TOKENS: configured.split(",").filter((e) => !e.startsWith("dev:person:")).join(",") });
    const gone = await newPage(removed);
    expect(await submitSignIn(removed, BASE, gone, { code, scopes: ["read"] })).toMatchObject({ status: 400, html: expect.stringContaining("no longer configured") });
    expect((await submitSignIn(f, BASE, page, { code, scopes: ["read"] })).status).toBe(302);
  });

  it(`at most ${SIGN_IN_CODE_LIMITS.triesPerMinute} codes a minute from one address: the next is refused with the limit's message, a right one too, which stays unspent; another address still signs in with it`, async () => {
    const code = await mintCode(PERSON);
    const page = await newPage();
    const address = clientAddress();
    const statuses: number[] = [];
    // Up to two windows' worth: the limiter's 60 s window may end while this counts.
    let refused = { status: 0, html: "" };
    for (let i = 0; i < 2 * SIGN_IN_CODE_LIMITS.triesPerMinute + 1 && !refused.html.includes("a minute from one address"); i++) {
      refused = await submitSignIn(f, BASE, page, { code: aWrongCode(), scopes: ["read"], address });
      statuses.push(refused.status);
    }
    expect(statuses.length).toBeGreaterThan(SIGN_IN_CODE_LIMITS.triesPerMinute);
    expect(refused.html).toContain(`at most ${SIGN_IN_CODE_LIMITS.triesPerMinute} sign-in codes a minute from one address`);
    expect(await submitSignIn(f, BASE, page, { code, scopes: ["read"], address })).toMatchObject({ status: 400, html: expect.stringContaining("a minute from one address") });
    expect((await submitSignIn(f, BASE, page, { code, scopes: ["read"], address: clientAddress() })).status).toBe(302);
  });
});
