// The route table (worker/wire/routes.ts) as data: every row is reachable by its own path and no
// other row shadows it, every row names a scope, paths are built with each parameter encoded as
// one segment, and a known path under another method is no route.
import { describe, expect, it } from "vitest";
import { requiredScope } from "../../worker/scopes.ts";
import { matchRoute, routeParts, routePath, ROUTES, type RouteKey } from "../../worker/wire/routes.ts";
import { SCOPES } from "../../worker/wire/token-scopes.ts";

const KEYS = Object.keys(ROUTES) as RouteKey[];
const SAMPLE: Record<string, string> = { agent: "reviewer", id: "7", step: "plan", blob: "b-123", session: "job-1", schedule: "3", grant: "u3Cq0vVDpJ7uGm2e", target: "pager" };

/** The row's path with a sample value in each parameter. */
function concrete(key: RouteKey): string {
  return routeParts(key).path.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLE[name] ?? "?");
}

describe("the route table", () => {
  it.each(KEYS)("%s is matched by its own path, by no other row, with its parameters", (key) => {
    const { method } = routeParts(key);
    const match = matchRoute(method, concrete(key));
    expect(match?.key).toBe(key);
    const names = [...routeParts(key).path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    expect(match?.params).toEqual(Object.fromEntries(names.map((name) => [name, SAMPLE[name]])));
  });

  it("every row needs one of the scopes, says what it is for, and the scope check reads the table", () => {
    for (const key of KEYS) {
      expect(SCOPES, key).toContain(ROUTES[key].scope);
      expect(ROUTES[key].what.length, key).toBeGreaterThan(0);
      expect(requiredScope(routeParts(key).method, concrete(key)), key).toBe(ROUTES[key].scope);
    }
  });

  it("keys are METHOD and path, one row per pair, with only the parameters the router knows", () => {
    for (const key of KEYS) {
      expect(key).toMatch(/^(GET|PUT|POST|DELETE) \/[a-z0-9./{}-]*$/);
      for (const [, name] of routeParts(key).path.matchAll(/\{(\w+)\}/g)) expect(Object.keys(SAMPLE), key).toContain(name);
    }
  });

  it("a dot in a path is a dot, not any character", () => {
    expect(matchRoute("GET", "/agents/reviewer/a2a/.well-known/agent-card.json")?.key).toBe("GET /agents/{agent}/a2a/.well-known/agent-card.json");
    expect(matchRoute("GET", "/agents/reviewer/a2a/Xwell-known/agent-cardXjson")).toBeNull();
  });

  it("a known path under a method it does not take is no route", () => {
    const methodsOf = new Map<string, string[]>();
    for (const key of KEYS) {
      const { method, path } = routeParts(key);
      methodsOf.set(path, [...(methodsOf.get(path) ?? []), method]);
    }
    for (const [path, methods] of methodsOf) {
      for (const other of ["GET", "PUT", "POST", "DELETE", "PATCH", "HEAD"].filter((m) => !methods.includes(m))) {
        expect(matchRoute(other, concrete(`GET ${path}` as RouteKey)), `${other} ${path}`).toBeNull();
      }
    }
  });

  it("a message id is 1-15 digits; any other parameter is one non-empty segment", () => {
    expect(matchRoute("GET", "/agents/a/messages/abc")).toBeNull();
    expect(matchRoute("GET", "/agents/a/messages/1234567890123456")).toBeNull();
    expect(matchRoute("GET", "/agents/a/messages/123456789012345")?.params).toEqual({ agent: "a", id: "123456789012345" });
    expect(matchRoute("GET", "/agents/a/b/presence")).toBeNull();
  });
});

describe("routePath", () => {
  it("fills each parameter in, percent-encoded as one segment", () => {
    expect(routePath("/whoami")).toBe("/whoami");
    expect(routePath("/agents/{agent}/messages/{id}/steps/{step}", { agent: "reviewer", id: 7, step: "a:b/c" })).toBe("/agents/reviewer/messages/7/steps/a%3Ab%2Fc");
    expect(routePath("/leases/{session}/acquire", { session: "job 1" })).toBe("/leases/job%201/acquire");
  });

  it("builds paths the table matches back to the same row", () => {
    const path = routePath("/agents/{agent}/messages/{id}/cancel", { agent: "reviewer", id: 12 });
    expect(matchRoute("POST", path)).toEqual({ key: "POST /agents/{agent}/messages/{id}/cancel", params: { agent: "reviewer", id: "12" } });
  });
});
