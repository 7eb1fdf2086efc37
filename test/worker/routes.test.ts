// The route table in the real runtime: every row reaches its handler with a token of its scope
// (whatever the handler then answers, it is never "no route" or "forbidden"), a token without the
// row's scope is refused 403 naming that scope, and a known path under another method is 404.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { routeParts, routePath, ROUTES, type RouteKey, type RoutePattern } from "../../worker/wire/routes.ts";
import type { Scope } from "../../worker/wire/token-scopes.ts";
import { BASE, uniqueAgent } from "./helpers.ts";

/** A dev token holding exactly this scope (and read, which every scope grants): vitest.workers.config.ts. */
const TOKEN_OF: Record<Scope, string> = {
  read: "dev-reader-token", send: "dev-sender-token", serve: "dev-runner-token", answer: "dev-person-token", admin: "dev-admin-token",
};
const KEYS = Object.keys(ROUTES) as RouteKey[];

async function call(token: string, method: string, path: string) {
  const res = await SELF.fetch(`${BASE}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: method === "GET" || method === "DELETE" ? undefined : "{}",
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON (metrics, a blob): not a refusal
  }
  const error = (res.ok ? {} : json ?? {}) as { error?: string; message?: string };
  return { status: res.status, error, json };
}

function pathOf(key: RouteKey, agent: string): string {
  const params = { agent, id: 1, step: "plan", blob: "b-123", session: `s-${agent}` };
  return routePath(routeParts(key).path as "/agents/{agent}/messages/{id}/steps/{step}" & RoutePattern, params);
}

describe("every row of the route table", () => {
  it("reaches its handler with a token of its scope, and a JSON answer matches the row's response schema", async () => {
    const agent = uniqueAgent();
    const answered: string[] = [];
    for (const key of KEYS) {
      const { status, error, json } = await call(TOKEN_OF[ROUTES[key].scope], routeParts(key).method, pathOf(key, agent));
      expect(error.error, `${key}: ${status} ${error.message}`).not.toBe("forbidden");
      expect(error.message ?? "", key).not.toMatch(/^no route for /);
      const { response } = ROUTES[key];
      if (status < 300 && typeof response !== "string") {
        answered.push(key);
        expect(response.safeParse(json).success, `${key} answers what the table says`).toBe(true);
      }
    }
    expect(answered.length).toBeGreaterThan(10);
  });

  it("is refused 403 to a read-only token unless it only reads, naming the scope it needs", async () => {
    const agent = uniqueAgent();
    for (const key of KEYS.filter((k) => ROUTES[k].scope !== "read")) {
      const { status, error } = await call(TOKEN_OF.read, routeParts(key).method, pathOf(key, agent));
      expect({ status, error: error.error }, key).toEqual({ status: 403, error: "forbidden" });
      expect(error.message, key).toContain(`lacks the ${ROUTES[key].scope} scope`);
    }
  });

  it("answers 404 no route under a method its path does not take, for a token with every scope", async () => {
    const agent = uniqueAgent();
    const methodsOf = new Map<string, string[]>();
    for (const key of KEYS) methodsOf.set(routeParts(key).path, [...(methodsOf.get(routeParts(key).path) ?? []), routeParts(key).method]);
    for (const key of KEYS) {
      const { path } = routeParts(key);
      for (const other of ["GET", "PUT", "POST", "DELETE", "PATCH"].filter((m) => !methodsOf.get(path)!.includes(m))) {
        const { status, error } = await call("baton-dev-token", other, pathOf(key, agent));
        expect({ status, error: error.error }, `${other} ${path}`).toEqual({ status: 404, error: "not_found" });
      }
    }
  });
});
