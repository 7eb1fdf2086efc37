// Who may call what. One table maps each route the coordinator answers to the scope it needs;
// index.ts checks it right after authentication, so no route handler decides access on its own.
// A route missing from the table is answered 404 before it is routed: a new route without a row
// is unreachable, never open.
import { SCOPES, type Scope } from "./wire/token-scopes.ts";

/** The authenticated caller of one request: its account, its token's name and what it may do. */
export interface Caller {
  account: string;
  tokenName: string;
  scopes: readonly Scope[];
}

/** What configured scopes grant, in SCOPES order: admin grants every scope, and every scope grants read. */
export function grantedScopes(configured: readonly Scope[]): Scope[] {
  if (configured.includes("admin")) return [...SCOPES];
  return SCOPES.filter((scope) => scope === "read" || configured.includes(scope));
}

type Method = "GET" | "PUT" | "POST" | "DELETE";

/** [methods, path, scope]; `{id}` is a message id, any other `{…}` one non-empty segment. */
const TABLE: readonly (readonly [readonly Method[], string, Scope])[] = [
  [["GET"], "/whoami", "read"],
  [["GET"], "/metrics", "read"],
  [["GET"], "/agents", "read"],
  [["GET"], "/observe", "read"],
  [["GET", "PUT", "DELETE"], "/webhook", "admin"],
  [["POST"], "/webhook/test", "admin"],
  [["GET"], "/agents/{agent}/serve", "serve"],
  [["GET"], "/agents/{agent}/presence", "read"],
  [["GET"], "/agents/{agent}/messages", "read"],
  [["POST"], "/agents/{agent}/messages", "send"],
  [["GET"], "/agents/{agent}/policy", "read"],
  [["PUT"], "/agents/{agent}/policy", "admin"],
  [["POST"], "/agents/{agent}/pause", "admin"],
  [["POST"], "/agents/{agent}/unpause", "admin"],
  [["POST"], "/agents/{agent}/drain", "admin"],
  [["POST"], "/agents/{agent}/undrain", "admin"],
  [["GET", "PUT", "DELETE"], "/agents/{agent}/webhook", "admin"],
  [["POST"], "/agents/{agent}/webhook/test", "admin"],
  [["GET"], "/agents/{agent}/messages/{id}", "read"],
  [["POST"], "/agents/{agent}/messages/{id}/resume", "answer"],
  [["POST"], "/agents/{agent}/messages/{id}/approve", "answer"],
  [["POST"], "/agents/{agent}/messages/{id}/reject", "answer"],
  [["POST"], "/agents/{agent}/messages/{id}/answer", "answer"],
  [["POST"], "/agents/{agent}/messages/{id}/retry", "admin"],
  // Stopping work weighs like answering for it: a send-only token may not cancel, even its own message (docs/security.md).
  [["POST"], "/agents/{agent}/messages/{id}/cancel", "answer"],
  [["POST"], "/agents/{agent}/messages/{id}/ask", "serve"],
  [["POST"], "/agents/{agent}/messages/{id}/heartbeat", "serve"],
  [["GET", "PUT"], "/agents/{agent}/messages/{id}/steps/{step}", "serve"],
  [["PUT"], "/agents/{agent}/messages/{id}/blobs", "serve"],
  [["GET"], "/agents/{agent}/messages/{id}/blobs/{blob}", "read"],
  [["GET"], "/leases/{session}", "read"],
  [["DELETE"], "/leases/{session}", "serve"],
  [["POST"], "/leases/{session}/acquire", "serve"],
  [["POST"], "/leases/{session}/renew", "serve"],
  [["POST"], "/leases/{session}/release", "serve"],
  [["POST"], "/leases/{session}/check", "serve"],
  [["GET"], "/leases/{session}/data", "read"],
  [["PUT"], "/leases/{session}/data", "serve"],
  [["GET"], "/leases/{session}/data/list", "read"],
  [["POST"], "/leases/{session}/data/delete", "serve"],
];

const ROUTES = TABLE.map(([methods, path, scope]) => ({
  methods: methods as readonly string[],
  pattern: new RegExp(`^${path.replace(/\{id\}/g, "\\d{1,15}").replace(/\{\w+\}/g, "[^/]+")}$`),
  scope,
}));

/**
 * The scope a request needs, or null when no route answers it. Empty segments are dropped first,
 * as the router drops them, so `/agents/a/presence/` needs what `/agents/a/presence` needs.
 */
export function requiredScope(method: string, pathname: string): Scope | null {
  const path = `/${pathname.split("/").filter(Boolean).join("/")}`;
  return ROUTES.find((route) => route.methods.includes(method) && route.pattern.test(path))?.scope ?? null;
}

const callers = new WeakMap<Request, Caller>();

/** Set by index.ts once the token is checked; nothing a client sends can set or change it. */
export function rememberCaller(request: Request, caller: Caller): void {
  callers.set(request, caller);
}

/**
 * Who made this request (account, token name, scopes), for handlers that record who acted, as
 * the answer routes do. Throws for a request the Worker did not authenticate: that is a bug.
 */
export function callerOf(request: Request): Caller {
  const caller = callers.get(request);
  if (!caller) throw new Error("callerOf: this request was not authenticated by the Worker");
  return caller;
}
