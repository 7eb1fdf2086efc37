// The one way into the coordinator: a request is checked for its origin, turned into its caller
// (requestCaller: the seam every kind of credential goes through: a baton token, else an OAuth
// access token, oauth/server.ts), matched in the route table (wire/routes.ts), checked for the
// route's scope and, for a grant limited to some agents, for the agent it names
// (rules/oauth-grants.ts), and handed to the route's handler (routes.ts). The remote MCP endpoint
// sends its tools' calls through here too (mcp/route.ts), with its caller's own credential: no side door.
import { authenticate, parseTokenConfig, presentedToken, type TokenEntry } from "./auth.ts";
import { checkConfig, type ConfigVerdict } from "./config.ts";
import type { Env } from "./env.ts";
import { authorizeRoute } from "./oauth/authorize.ts";
import { bearerChallenge, isProviderPath, oauthCaller, oauthEnabled, OAUTH_PATHS, providerResponse } from "./oauth/server.ts";
import { agentLimitRefusal } from "./rules/oauth-grants.ts";
import { dispatch } from "./routes.ts";
import { refuseScope, rememberCaller, type Caller } from "./scopes.ts";
import { parseAllowedOrigins, refuseForeignOrigin, refuseRebindingDevToken } from "./origins.ts";
import { testClockRoute } from "./test-clock.ts";
import { errorResponse } from "./wire/protocol.ts";
import { matchRoute } from "./wire/routes.ts";

/** Parsing the vars once per distinct value, not once per request. */
function memo<T>(parse: (env: Env) => T, key: (env: Env) => string): (env: Env) => T {
  let cached: { key: string; value: T } | null = null;
  return (env) => {
    const k = key(env);
    if (cached?.key !== k) cached = { key: k, value: parse(env) };
    return cached.value;
  };
}

const tokenConfig = memo(
  (env): { ok: true; entries: TokenEntry[] } | { ok: false; message: string } => {
    try {
      return { ok: true, entries: parseTokenConfig(env.BATON_TOKENS) };
    } catch (err) {
      return { ok: false, message: (err as Error).message };
    }
  },
  (env) => env.BATON_TOKENS ?? "",
);
const allowedOrigins = memo((env) => parseAllowedOrigins(env.BATON_ALLOWED_ORIGINS), (env) => env.BATON_ALLOWED_ORIGINS ?? "");
const coordinatorConfig = memo<ConfigVerdict>(checkConfig, (env) => `${env.BATON_HEARTBEAT_TTL_SECONDS}|${env.BATON_PRESENCE_SCAN_SECONDS}`);

export type CallerVerdict = { ok: true; caller: Caller } | { ok: false; response: Response };

/** The agent a route's path names, decoded; null for account routes or a name dispatch will refuse anyway. */
function pathAgent(params: Record<string, string>): string | null {
  if (params.agent === undefined) return null;
  try {
    return decodeURIComponent(params.agent);
  } catch {
    return params.agent;
  }
}

/**
 * Who a request speaks for: {account, tokenName, scopes, agents?}, or the refusal to answer it
 * with. A baton token (Authorization: Bearer, or a browser socket's subprotocol), else an OAuth
 * access token resolved to the same shape (its grant's scopes and agent limit), so every route,
 * the MCP endpoint's tool calls included, sees one Caller.
 */
export async function requestCaller(request: Request, env: Env, allowed: ReadonlySet<string>): Promise<CallerVerdict> {
  const tokens = tokenConfig(env);
  if (!tokens.ok) return { ok: false, response: errorResponse(500, "internal", tokens.message) };
  if (tokens.entries.length === 0) {
    return { ok: false, response: errorResponse(401, "unauthorized", "no tokens are configured on this coordinator; it refuses every request") };
  }
  const token = presentedToken(request);
  const rebound = refuseRebindingDevToken(request, token, allowed);
  if (rebound) return { ok: false, response: rebound };
  const caller = await authenticate(token, tokens.entries) ?? (token === null ? null : await oauthCaller(token, request, env, tokens.entries));
  if (caller === null) {
    const refused = errorResponse(401, "unauthorized", "missing or wrong bearer token");
    if (oauthEnabled(env)) refused.headers.set("www-authenticate", bearerChallenge(request));
    return { ok: false, response: refused };
  }
  return { ok: true, caller };
}

/**
 * Whether the credential a request came with still stands for a caller of `account`: a stream
 * asks again before each page it reads (a2a-stream.ts), so a revoked grant or a removed token ends it.
 */
export async function stillCaller(request: Request, env: Env, account: string): Promise<boolean> {
  const origins = allowedOrigins(env);
  if (!origins.ok) return false;
  const verdict = await requestCaller(request, env, origins.origins);
  return verdict.ok && verdict.caller.account === account;
}

/** Answers one request: origin, caller, route, scope, agent limit, configuration, then its handler; `ctx` is absent for the MCP tools' internal calls. */
export async function handle(request: Request, env: Env, ctx?: ExecutionContext): Promise<Response> {
  const url = new URL(request.url);
  const origins = allowedOrigins(env);
  if (!origins.ok) return errorResponse(500, "internal", origins.message);
  // OAuth registration, tokens and metadata take no baton token and answer other origins' pages (CORS), as OAuth clients expect.
  if (isProviderPath(url.pathname)) {
    // An internal call (an MCP tool's, without ctx) never reaches the provider.
    return ctx !== undefined && oauthEnabled(env) ? providerResponse(request, env, ctx) : errorResponse(404, "not_found", "OAuth is off on this coordinator (no OAUTH_KV binding)");
  }
  const foreign = refuseForeignOrigin(request, origins.origins);
  if (foreign) return foreign;
  if (url.pathname === OAUTH_PATHS.authorize) {
    const tokens = tokenConfig(env);
    if (!tokens.ok) return errorResponse(500, "internal", tokens.message);
    return oauthEnabled(env) ? authorizeRoute(request, env, tokens.entries, origins.origins) : errorResponse(404, "not_found", "OAuth is off on this coordinator (no OAUTH_KV binding)");
  }
  const verdict = await requestCaller(request, env, origins.origins);
  if (!verdict.ok) return verdict.response;
  const { caller } = verdict;
  // Test-only (BATON_TEST_CLOCK): outside the route table, so never in the README's route list.
  const clockHook = await testClockRoute(request, env, caller.account, url);
  if (clockHook) return clockHook;
  return routed(request, env, caller, url);
}

/**
 * An MCP tool's call inside a request that `handle` already let in (origin, credential): for that
 * request's caller, from the route table on (route, scope, agent limit, configuration, handler),
 * without hashing the token or reading an OAuth grant again. Only for calls made within the
 * outer request's few milliseconds; a call that waits (a person's answer) goes through `handle`,
 * so a revoked grant or removed token ends it at once.
 */
export function handleAs(caller: Caller, request: Request, env: Env): Promise<Response> {
  return routed(request, env, caller, new URL(request.url));
}

async function routed(request: Request, env: Env, caller: Caller, url: URL): Promise<Response> {
  const route = matchRoute(request.method, url.pathname);
  // A known path under another method is no route either: 404 for every token, before any scope.
  if (route === null) return errorResponse(404, "not_found", `no route for ${request.method} ${url.pathname}`);
  const refused = refuseScope(caller, route.key, request.method, url.pathname);
  if (refused) return refused;
  const limited = agentLimitRefusal(caller, route.key, pathAgent(route.params));
  if (limited) return errorResponse(403, "forbidden", limited);
  rememberCaller(request, caller);
  const config = coordinatorConfig(env);
  if (!config.ok) return errorResponse(500, "internal", config.message);
  return dispatch(request, env, caller.account, url, route);
}
