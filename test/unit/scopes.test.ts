// Who may call what, as a pure function: every route the coordinator answers needs exactly one
// scope, anything else is no route at all (null, answered 404 before routing). The expected scopes
// are written out here by hand, apart from the route table, so a wrong scope in the table fails.
import { describe, expect, it } from "vitest";
import { callerOf, grantedScopes, rememberCaller, requiredScope, type Caller } from "../../worker/scopes.ts";
import { matchRoute, ROUTES as TABLE } from "../../worker/wire/routes.ts";
import type { Scope } from "../../worker/wire/token-scopes.ts";

const A = "/agents/reviewer";
const M = `${A}/messages/7`;

const ROUTES: [string, string, Scope][] = [
  ["GET", "/whoami", "read"],
  ["GET", "/metrics", "read"],
  ["GET", "/agents", "read"],
  ["GET", "/observe", "read"],
  ["POST", "/webhook/test", "admin"],
  ["POST", "/mcp", "read"],
  ["GET", "/mcp", "read"],
  ["DELETE", "/mcp", "read"],
  ["POST", `${A}/webhook/test`, "admin"],
  ["GET", `${A}/serve`, "serve"],
  ["GET", `${A}/presence`, "read"],
  ["GET", `${A}/messages`, "read"],
  ["POST", `${A}/messages`, "send"],
  ["GET", M, "read"],
  ["GET", `${A}/policy`, "read"],
  ["PUT", `${A}/policy`, "admin"],
  ["POST", `${A}/pause`, "admin"],
  ["POST", `${A}/unpause`, "admin"],
  ["POST", `${A}/drain`, "admin"],
  ["POST", `${A}/undrain`, "admin"],
  ["GET", `${A}/a2a/.well-known/agent-card.json`, "read"],
  // Each JSON-RPC method then needs the scope of the route it wraps (worker/a2a-calls.ts).
  ["POST", `${A}/a2a`, "read"],
  ["GET", `${A}/schedules`, "read"],
  ["POST", `${A}/schedules`, "admin"],
  ["GET", `${A}/schedules/3`, "read"],
  ["POST", `${A}/schedules/3/pause`, "admin"],
  ["POST", `${A}/schedules/3/resume`, "admin"],
  ["DELETE", `${A}/schedules/3`, "admin"],
  ["GET", `${A}/webhook`, "admin"],
  ["PUT", `${A}/webhook`, "admin"],
  ["DELETE", `${A}/webhook`, "admin"],
  ["GET", "/webhook", "admin"],
  ["GET", "/grants", "admin"],
  ["DELETE", "/grants/u3Cq0vVDpJ7uGm2e", "admin"],
  ["POST", "/sign-in-codes", "read"],
  ["PUT", "/webhook", "admin"],
  ["DELETE", "/webhook", "admin"],
  ["POST", `${M}/resume`, "answer"],
  ["POST", `${M}/approve`, "answer"],
  ["POST", `${M}/reject`, "answer"],
  ["POST", `${M}/answer`, "answer"],
  ["POST", `${M}/retry`, "admin"],
  ["POST", `${M}/cancel`, "answer"],
  // A2A push targets make the coordinator send where they say: even reading them needs send.
  ["GET", `${M}/push`, "send"],
  ["PUT", `${M}/push/pager`, "send"],
  ["GET", `${M}/push/pager`, "send"],
  ["DELETE", `${M}/push/pager`, "send"],
  ["POST", `${M}/ask`, "serve"],
  ["POST", `${M}/heartbeat`, "serve"],
  ["POST", `${M}/output`, "serve"],
  ["GET", `${M}/output`, "read"],
  ["GET", `${M}/steps/plan`, "serve"],
  ["PUT", `${M}/steps/plan`, "serve"],
  ["PUT", `${M}/steps/a%3Ab`, "serve"],
  ["PUT", `${M}/blobs`, "serve"],
  ["GET", `${M}/blobs/b-123`, "read"],
  ["GET", "/leases/job-1", "read"],
  ["DELETE", "/leases/job-1", "serve"],
  ["POST", "/leases/job-1/acquire", "serve"],
  ["POST", "/leases/job-1/renew", "serve"],
  ["POST", "/leases/job-1/release", "serve"],
  ["POST", "/leases/job-1/check", "serve"],
  ["GET", "/leases/job-1/data", "read"],
  ["PUT", "/leases/job-1/data", "serve"],
  ["GET", "/leases/job-1/data/list", "read"],
  ["POST", "/leases/job-1/data/delete", "serve"],
];

const NO_ROUTE: [string, string][] = [
  ["GET", "/"],
  ["GET", "/no-such-route"],
  ["POST", "/report"],
  ["POST", "/agents"],
  ["POST", "/observe"],
  ["POST", "/whoami"],
  ["GET", A],
  ["POST", `${A}/serve`],
  ["POST", `${A}/presence`],
  ["DELETE", `${A}/messages`],
  ["POST", `${A}/policy`],
  ["GET", `${A}/pause`],
  ["POST", `${A}/explode`],
  ["POST", `${A}/messages/abc/resume`],
  ["POST", `${A}/messages/1234567890123456/resume`],
  ["GET", `${M}/resume`],
  ["POST", `${M}/steps/plan`],
  ["DELETE", `${M}/steps/plan`],
  ["POST", `${M}/blobs`],
  ["POST", "/leases/job-1"],
  ["POST", "/leases/job-1/steal"],
  ["GET", "/leases/job-1/acquire"],
  ["HEAD", `${A}/presence`],
  ["PATCH", "/webhook"],
  ["POST", `${A}/webhook`],
  ["DELETE", "/leases/job-1/data"],
  ["GET", "/leases/job-1/data/delete"],
];

describe("requiredScope", () => {
  for (const [method, path, scope] of ROUTES) {
    it(`${method} ${path} needs ${scope}`, () => {
      expect(requiredScope(method, path)).toBe(scope);
    });
  }

  it("the list above names every row of the route table, so a new row needs its scope written twice: there and here", () => {
    const listed = new Set(ROUTES.map(([method, path]) => matchRoute(method, path)?.key));
    expect(Object.keys(TABLE).filter((key) => !listed.has(key as keyof typeof TABLE))).toEqual([]);
  });

  it("answers null for every method and path no route answers, so they stay 404", () => {
    for (const [method, path] of NO_ROUTE) expect(requiredScope(method, path), `${method} ${path}`).toBeNull();
  });

  it("drops empty segments as the router does: a trailing or doubled slash needs the same scope", () => {
    expect(requiredScope("POST", `${M}/resume/`)).toBe("answer");
    expect(requiredScope("POST", `/agents//reviewer/messages`)).toBe("send");
    expect(requiredScope("GET", "/agents//presence")).toBeNull();
  });

  it("matches the shape, not the name: a bad agent name still needs its route's scope, and the router refuses the name", () => {
    expect(requiredScope("POST", "/agents/NOT-VALID/messages")).toBe("send");
    expect(requiredScope("GET", "/agents/a%2Fb/serve")).toBe("serve");
  });
});

describe("grantedScopes", () => {
  it("grants read with every scope, every scope with admin, and only read with read", () => {
    expect(grantedScopes(["read"])).toEqual(["read"]);
    expect(grantedScopes(["serve"])).toEqual(["read", "serve"]);
    expect(grantedScopes(["answer", "send"])).toEqual(["read", "send", "answer"]);
    expect(grantedScopes(["admin"])).toEqual(["read", "send", "serve", "answer", "admin"]);
    expect(grantedScopes(["serve", "serve", "read"])).toEqual(["read", "serve"]);
  });
});

describe("callerOf", () => {
  it("returns the caller the Worker remembered for that very request and throws for any other", () => {
    const caller: Caller = { account: "dev", tokenName: "ana", credential: "token.ab", scopes: ["read", "answer"] };
    const request = new Request("http://baton.test/whoami", { headers: { "x-baton-token-name": "admin" } });
    rememberCaller(request, caller);
    expect(callerOf(request)).toBe(caller);
    expect(() => callerOf(new Request(request))).toThrow("callerOf: this request was not authenticated by the Worker");
  });
});

