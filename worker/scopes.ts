// Who may call what. The route table (wire/routes.ts) gives each route the scope it needs; index.ts
// checks it right after authentication, so no route handler decides access on its own. A request
// no row matches is answered 404 before it is routed: a route without a row is unreachable, never open.
// Here: what a token's configured scopes grant, and the authenticated caller of a request.
import { errorResponse } from "./wire/protocol.ts";
import { matchRoute, ROUTES, type RouteKey } from "./wire/routes.ts";
import { SCOPES, type Scope } from "./wire/token-scopes.ts";

/** The authenticated caller of one request: its account, its token's name and what it may do. */
export interface Caller {
  account: string;
  tokenName: string;
  /**
   * Which credential it is, for what must be one caller's own (idempotency keys): `token.<sha256 hex>`
   * or `grant.<user>:<grant id>`. A name is not one: unnamed tokens are all `default`, and every grant one token signs is `oauth.<name>`.
   */
  credential: string;
  scopes: readonly Scope[];
  /** Only these agents (an OAuth grant limited to agents: rules/oauth-grants.ts); absent: every agent. */
  agents?: readonly string[];
}

/** What configured scopes grant, in SCOPES order: admin grants every scope, and every scope grants read. */
export function grantedScopes(configured: readonly Scope[]): Scope[] {
  if (configured.includes("admin")) return [...SCOPES];
  return SCOPES.filter((scope) => scope === "read" || configured.includes(scope));
}

/**
 * The scope a request needs, or null when no route answers it (then it is 404 for every token).
 * Read from the route table (wire/routes.ts), the one index.ts checks.
 */
export function requiredScope(method: string, pathname: string): Scope | null {
  const route = matchRoute(method, pathname);
  return route === null ? null : ROUTES[route.key].scope;
}

/**
 * 403 when the caller's token lacks the scope the route needs, else null: the one check index.ts
 * makes for every request and the A2A layer for each route a JSON-RPC method goes through.
 */
export function refuseScope(caller: Caller, key: RouteKey, method: string, pathname: string): Response | null {
  const needed = ROUTES[key].scope;
  if (caller.scopes.includes(needed)) return null;
  return errorResponse(403, "forbidden", `token ${caller.tokenName} of account ${caller.account} lacks the ${needed} scope that ${method} ${pathname} needs`);
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

