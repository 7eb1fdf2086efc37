// What guards a sign-in code in the real runtime, after an adversarial review: a token makes at
// most so many a minute; the page checks the form and the browser's consent binding before it
// spends a code, so a stale tab or a missing cookie burns nothing; nothing before the spend tells
// a right code from a wrong one but a scope its token lacks, and that refusal never names the
// token; a code of the public dev token signs in on loopback only, as the token does; a token
// narrowed since it made the code signs in with what it has now; of two approvals racing with one
// code one signs in and the other is told to start again; the page keeps a code typed (escaped)
// and tells password managers which field is which.
import { describe, expect, it } from "vitest";
import { SIGN_IN_CODE_LIMITS } from "../../worker/wire/grants.ts";
import { exchangeCode, openSignIn, registerClient, submitSignIn } from "../e2e/oauth-dance.ts";
import { BASE, DEV_TOKEN } from "./helpers.ts";
import { as, aWrongCode, codeFieldOf, errorOf, f, mintCode, newPage, tokensWith, withEnv } from "./sign-in-code-helpers.ts";

/** An unnamed token of account dev with every scope (not the public dev token). */
const TWIN = "dev-twin-token";
const ADMIN = "dev-admin-token";
/** Read only, and used by no other file (routes.test.ts makes a code with the reader), so its minute's mint budget is this file's alone. */
const MINTER = "dev-minter-token";
const AWAY = "https://baton.example";

describe("POST /sign-in-codes, made too fast", () => {
  it(`a token makes at most ${SIGN_IN_CODE_LIMITS.mintsPerMinute} codes a minute: the next is 429 rate_limited, saying so, with retry-after 60; another token still makes one`, async () => {
    let refused = { status: 0, headers: new Headers(), body: {} as Record<string, unknown> };
    let made = 0;
    // Up to two windows' worth: the limiter's 60 s window may end while this counts.
    for (let i = 0; i < 2 * SIGN_IN_CODE_LIMITS.mintsPerMinute + 1 && refused.status !== 429; i++) {
      refused = await as(MINTER, "POST", "/sign-in-codes");
      if (refused.status === 201) made++;
    }
    expect(made).toBeGreaterThanOrEqual(SIGN_IN_CODE_LIMITS.mintsPerMinute);
    expect(refused).toMatchObject({ status: 429, body: { error: "rate_limited", message: `at most ${SIGN_IN_CODE_LIMITS.mintsPerMinute} sign-in codes a minute from one token: wait a minute, then ask again` } });
    expect(refused.headers.get("retry-after")).toBe("60");
    expect((await as(ADMIN, "POST", "/sign-in-codes")).status).toBe(201);
  });
});

describe("the sign-in page with a code", () => {
  it("a form the browser's consent binding refuses (no cookie, another page's, a page used already) gets the start-again page and spends nothing: the code signs in after", async () => {
    const code = await mintCode(TWIN);
    const page = await newPage();
    const noCookie = await submitSignIn(f, BASE, { ...page, cookie: "" }, { code, scopes: ["read"] });
    expect(noCookie).toMatchObject({ status: 400, html: expect.stringContaining("start again") });
    const otherPage = await newPage();
    expect(await submitSignIn(f, BASE, { ...page, cookie: otherPage.cookie }, { code, scopes: ["read"] })).toMatchObject({ status: 400, html: expect.stringContaining("start again") });
    expect((await submitSignIn(f, BASE, otherPage, { token: TWIN, scopes: ["read"] })).status).toBe(302);
    expect(await submitSignIn(f, BASE, otherPage, { code, scopes: ["read"] })).toMatchObject({ status: 400, html: expect.stringContaining("already used; start again") });
    expect((await submitSignIn(f, BASE, page, { code, scopes: ["read"] })).status).toBe(302);
  });

  it("form mistakes are refused alike for a right code and a wrong one, before the code is looked up, and spend nothing", async () => {
    const code = await mintCode(TWIN);
    const page = await newPage();
    for (const form of [{ scopes: [] }, { scopes: ["read", "fly"] }, { scopes: ["read"], agents: "Not A Name!" }]) {
      const right = await submitSignIn(f, BASE, page, { code, ...form });
      const wrong = await submitSignIn(f, BASE, page, { code: aWrongCode(), ...form });
      expect(right.status, JSON.stringify(form)).toBe(400);
      expect(errorOf(right.html), JSON.stringify(form)).toBe(errorOf(wrong.html));
    }
    expect((await submitSignIn(f, BASE, page, { code, scopes: ["read"] })).status).toBe(302);
  });

  it("a code made with the public dev token signs in on a loopback address only, as the token does: on another host it is refused and not spent", async () => {
    const code = await mintCode(DEV_TOKEN);
    const away = await newPage(f, AWAY);
    expect(away.status).toBe(200);
    const refused = await submitSignIn(f, AWAY, away, { code, scopes: ["read"] });
    expect(refused.status).toBe(400);
    expect(errorOf(refused.html)).toBe("this sign-in code was made with the public dev token, which signs in on a loopback address only: make one with a token of your own");
    const pasted = await submitSignIn(f, AWAY, away, { token: DEV_TOKEN, scopes: ["read"] });
    expect(errorOf(pasted.html)).toBe("the public dev token signs in on a loopback address only; use a token of your own here");
    expect((await submitSignIn(f, BASE, await newPage(), { code, scopes: ["read"] })).status).toBe(302);
    expect((await submitSignIn(f, AWAY, away, { code: await mintCode(TWIN), scopes: ["read"] })).status).toBe(302);
  });

  it("a token narrowed between minting and use signs in with the scopes it has now: one it lost is refused, the grant carries only the rest", async () => {
    const code = await mintCode(ADMIN);
    const narrowed = withEnv({ BATON_TOKENS: tokensWith("dev:admin:", "dev:admin:read:1734d503f6aa6a047c36d113cbad769f719c93784b469b771c4c3e7c63adbefd") });
    const client = await registerClient(f, BASE);
    const page = await openSignIn(narrowed, BASE, client, "read admin");
    const lost = await submitSignIn(narrowed, BASE, page, { code, scopes: ["read", "admin"] });
    expect(lost.status).toBe(400);
    expect(errorOf(lost.html)).toBe("the token of this sign-in code lacks the admin scope: a grant never has more than the token that approves it");
    const signed = await submitSignIn(narrowed, BASE, page, { code, scopes: ["read"] });
    expect(signed.status, signed.html).toBe(302);
    const tokens = await exchangeCode(f, BASE, client, page, signed.location!);
    expect(await as(tokens.access_token, "GET", "/whoami", narrowed)).toMatchObject({ status: 200, body: { token: "oauth.admin", scopes: ["read"] } });
  });

  it("of two approvals racing with one code one signs in; the other gets the start-again page (used by another approval a moment ago) and no redirect", async () => {
    const code = await mintCode(TWIN);
    const [a, b] = [await newPage(), await newPage()];
    const raced = await Promise.all([a, b].map((page) => submitSignIn(f, BASE, page, { code, scopes: ["read"] })));
    expect(raced.map((r) => r.status).sort()).toEqual([302, 409]);
    const loser = raced.find((r) => r.status === 409)!;
    expect(loser.location).toBeNull();
    expect(loser.html).toContain("that sign-in code was used by another approval a moment ago: start signing in again from your client, with a new code from `baton login --code`");
  });

  it("the page shows a code typed back after an error, escaped; the token field takes new passwords, the code field one-time codes, and 'not both' says to clear the token field, never showing the token", async () => {
    const page = await newPage();
    expect(page.html).toMatch(/<input type="password" name="token" autocomplete="new-password">/);
    expect(page.html).toMatch(/<input type="text" name="code" autocomplete="one-time-code"[^>]*placeholder="XXXX-XXXX-XXXX"/);
    const hostile = `k7qd-m2xp"><script>alert(1)</script>`;
    const malformed = await submitSignIn(f, BASE, page, { code: hostile, scopes: ["read"] });
    expect(errorOf(malformed.html)).toContain("that is not a sign-in code");
    expect(codeFieldOf(malformed.html)).toBe(hostile);
    expect(malformed.html).not.toContain("<script>");
    const wrong = aWrongCode();
    expect(codeFieldOf((await submitSignIn(f, BASE, page, { code: wrong, scopes: ["read"] })).html)).toBe(wrong);
    const filled = "a-token-a-password-manager-filled";
    const both = await submitSignIn(f, BASE, page, { token: filled, code: wrong, scopes: ["read"] });
    expect(errorOf(both.html)).toBe("give a baton token or a sign-in code, not both: to use the code, clear the token field (a password manager may have filled it)");
    expect(codeFieldOf(both.html)).toBe(wrong);
    expect(both.html).not.toContain(filled);
  });
});
