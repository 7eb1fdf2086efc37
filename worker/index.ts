// The Worker: authenticates every request, finds its route in the route table (wire/routes.ts),
// checks that its token has the route's scope, validates configuration, and hands it to the
// route's handler (routes.ts), which calls the object that owns the (account, name) pair by typed
// RPC; only socket upgrades are forwarded by fetch. Objects read who they are from their own name
// (names.ts), so nothing identifying rides in a header; handlers read the caller with
// callerOf(request). Static dashboard files are served by the assets binding before this runs.
// A caller is a baton token or, for remote hosts, an OAuth access token (oauth/server.ts), whose
// grant may be limited to agents: checked here after the scope, for every route alike.
import { authenticate, parseTokenConfig, presentedToken, type TokenEntry } from "./auth.ts";
import { checkConfig, type ConfigVerdict } from "./config.ts";
import type { Env } from "./env.ts";
import { authorizeRoute } from "./oauth/authorize.ts";
import { bearerChallenge, isProviderPath, oauthCaller, oauthEnabled, OAUTH_PATHS, providerResponse } from "./oauth/server.ts";
import { agentLimitRefusal } from "./rules/oauth-grants.ts";
import { dispatch } from "./routes.ts";
import { refuseScope, rememberCaller } from "./scopes.ts";
import { parseAllowedOrigins, refuseForeignOrigin, refuseRebindingDevToken } from "./origins.ts";
import { testClockRoute } from "./test-clock.ts";
import { errorResponse } from "./wire/protocol.ts";
import { matchRoute } from "./wire/routes.ts";

export { AgentCoordinator } from "./objects/agent-object.ts";
export { LeaseShard } from "./objects/lease-shard.ts";
export { AgentDirectory } from "./objects/directory-object.ts";

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

/** The agent a route's path names, decoded; null for account routes or a name dispatch will refuse anyway. */
function pathAgent(params: Record<string, string>): string | null {
  if (params.agent === undefined) return null;
  try {
    return decodeURIComponent(params.agent);
  } catch {
    return params.agent;
  }
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    const origins = allowedOrigins(env);
    if (!origins.ok) return errorResponse(500, "internal", origins.message);
    // OAuth registration, tokens and metadata take no baton token and answer other origins' pages (CORS), as OAuth clients expect.
    if (isProviderPath(url.pathname)) {
      return oauthEnabled(env) ? providerResponse(request, env, ctx) : errorResponse(404, "not_found", "OAuth is off on this coordinator (no OAUTH_KV binding)");
    }
    const foreign = refuseForeignOrigin(request, origins.origins);
    if (foreign) return foreign;
    const tokens = tokenConfig(env);
    if (!tokens.ok) return errorResponse(500, "internal", tokens.message);
    if (tokens.entries.length === 0) {
      return errorResponse(401, "unauthorized", "no tokens are configured on this coordinator; it refuses every request");
    }
    if (url.pathname === OAUTH_PATHS.authorize) {
      return oauthEnabled(env) ? authorizeRoute(request, env, tokens.entries, origins.origins) : errorResponse(404, "not_found", "OAuth is off on this coordinator (no OAUTH_KV binding)");
    }
    const token = presentedToken(request);
    const rebound = refuseRebindingDevToken(request, token, origins.origins);
    if (rebound) return rebound;
    const caller = await authenticate(token, tokens.entries) ?? (token === null ? null : await oauthCaller(token, request, env, tokens.entries));
    if (caller === null) {
      const refused = errorResponse(401, "unauthorized", "missing or wrong bearer token");
      if (oauthEnabled(env)) refused.headers.set("www-authenticate", bearerChallenge(request));
      return refused;
    }
    // Test-only (BATON_TEST_CLOCK): outside the route table, so never in the README's route list.
    const clockHook = await testClockRoute(request, env, caller.account, url);
    if (clockHook) return clockHook;
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
  },
} satisfies ExportedHandler<Env>;
