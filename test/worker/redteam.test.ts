// Attacks on the newest surfaces (OAuth grants, quorum questions, approval permits, the remote
// endpoints) that once worked, each kept as the test that saw it go red: the repro, then what
// must hold instead.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { authorize, type FetchLike } from "../e2e/oauth-dance.ts";
import { BASE, post, uniqueAgent } from "./helpers.ts";

const f: FetchLike = (url, init) => SELF.fetch(url, init);
const PERSON = "dev-person-token"; // token "person", scope answer
const ADMIN = "dev-admin-token"; // token "admin", every scope

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
