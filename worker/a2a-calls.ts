// How an A2A method reaches baton: as the plain route it wraps, matched in the route table
// (wire/routes.ts), refused unless the caller's token has that route's scope (the check index.ts
// makes, scopes.ts refuseScope) and dispatched to that route's one handler (routes.ts). So an A2A
// call posts, answers, cancels and reads exactly as the HTTP API does, through the same plan; no
// object method is called from here.
import { hexDigest } from "./auth.ts";
import type { Env } from "./env.ts";
import { stillCaller } from "./pipeline.ts";
import { dispatch } from "./routes.ts";
import { callerOf, rememberCaller, refuseScope, type Caller } from "./scopes.ts";
import type { ErrorBody } from "./wire/http-responses.ts";
import { matchRoute } from "./wire/routes.ts";

/** One A2A request's way in: who asked, for which agent, where. */
export interface A2ACaller {
  env: Env;
  account: string;
  agent: string;
  origin: string;
  caller: Caller;
  /** Whether the request's credential still stands for the caller (a revoked grant no longer does): asked before each page a stream reads. */
  still: () => Promise<boolean>;
}

export type Inner<T> = { ok: true; status: number; value: T } | { ok: false; status: number; error: ErrorBody };

export function a2aCaller(request: Request, env: Env, account: string, agent: string, url: URL): A2ACaller {
  return { env, account, agent, origin: url.origin, caller: callerOf(request), still: () => stillCaller(request, env, account) };
}

/**
 * `METHOD /agents/{agent}{path}` through the route table, as `caller`; a JSON answer or baton's
 * error body (null for a 204). `path` starts with "/" and may carry a query.
 */
export async function inner<T>(
  c: A2ACaller, method: "GET" | "POST" | "PUT" | "DELETE", path: string, body?: unknown, headers: Record<string, string> = {},
): Promise<Inner<T>> {
  const url = new URL(`/agents/${encodeURIComponent(c.agent)}${path}`, c.origin);
  const route = matchRoute(method, url.pathname);
  if (route === null) throw new Error(`a2a: no route for ${method} ${url.pathname}`);
  const refused = refuseScope(c.caller, route.key, method, url.pathname);
  const response = refused ?? await dispatch(request(c, url, method, body, headers), c.env, c.account, url, route);
  const json = response.status === 204 ? null : await response.json();
  return response.ok ? { ok: true, status: response.status, value: json as T } : { ok: false, status: response.status, error: json as ErrorBody };
}

function request(c: A2ACaller, url: URL, method: string, body: unknown, headers: Record<string, string>): Request {
  const req = new Request(url, {
    method,
    headers: { ...headers, "x-baton-via": "a2a", ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  rememberCaller(req, c.caller);
  return req;
}

/**
 * The Idempotency-Key of a SendMessage: its messageId as this caller's (its credential, as MCP keys a
 * tool call's post; never its name, which many share), so a retry of one caller posts once and another caller who picks the same
 * messageId (A2A leaves the choice to the client) gets a message of its own, never the first one.
 */
export async function sendKey(c: A2ACaller, messageId: string): Promise<string> {
  // The first 20 bytes of the digest.
  return `a2a-${(await hexDigest(`${c.caller.credential}\n${messageId}`)).slice(0, 40)}`;
}
