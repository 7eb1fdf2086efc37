// Attacks on the newest surfaces (OAuth grants, quorum questions, approval permits, the remote
// endpoints) that once worked, each kept as the test that saw it go red: the repro, then what
// must hold instead.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { authorize, openSignIn, submitSignIn, type FetchLike } from "../e2e/oauth-dance.ts";
import { BASE, post, uniqueAgent } from "./helpers.ts";

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
