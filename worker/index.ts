// The Worker: authenticates every request, checks that its token has the scope the route needs
// (scopes.ts), validates names and configuration, and routes to the object that owns the
// (account, name) pair. The agent API (agents.ts) and the session-lease API (leases.ts) are
// answered here with typed RPC calls to the objects; only socket upgrades are forwarded by fetch.
// Objects read who they are from their own name (names.ts), so nothing identifying rides in a
// header; handlers read the caller with callerOf(request). Static dashboard files are served by
// the assets binding before this runs.
import { authenticate, parseTokenConfig, presentedToken, type TokenEntry } from "./auth.ts";
import { checkConfig, type ConfigVerdict } from "./config.ts";
import type { Env } from "./env.ts";
import { metricsResponse } from "./objects/metrics-scrape.ts";
import { readBody } from "./objects/http.ts";
import { agentRequest } from "./agents.ts";
import { leaseRequest } from "./leases.ts";
import { callerOf, rememberCaller, requiredScope } from "./scopes.ts";
import { webhookRoute, webhookTestRoute } from "./webhook-routes.ts";
import { directoryObjectName } from "./objects/names.ts";
import { parseAllowedOrigins, refuseForeignOrigin, refuseRebindingDevToken } from "./origins.ts";
import type { Whoami } from "./wire/http-responses.ts";
import { testClockRoute } from "./test-clock.ts";
import { AGENT_NAME, errorResponse, LIMITS, SESSION_NAME } from "./wire/protocol.ts";

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

/** A path segment with its %-escapes decoded, or null when they are malformed (a bad name, not a crash). */
function decodedSegment(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}

/**
 * Hands a request to an object unchanged, except that its body is read here, within
 * LIMITS.requestBodyBytes, so an object that refuses it early never leaves a client stream half-read.
 */
async function forward(stub: { fetch(request: Request): Promise<Response> }, request: Request): Promise<Response> {
  const body = await readBody(request, LIMITS.requestBodyBytes);
  if (!body.ok) return body.response;
  return stub.fetch(new Request(request, request.body ? { body: body.bytes } : {}));
}

function whoami(request: Request): Response {
  const { account, tokenName, scopes } = callerOf(request);
  return Response.json({ account, token: tokenName, scopes: [...scopes] } satisfies Whoami);
}

async function route(request: Request, env: Env, account: string, url: URL): Promise<Response> {
  const parts = url.pathname.split("/").filter(Boolean);
  if (url.pathname === "/whoami" && request.method === "GET") return whoami(request);
  if (url.pathname === "/metrics" && request.method === "GET") return metricsResponse(env, account);
  if (url.pathname === "/agents" && request.method === "GET") {
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account)));
    const view = url.searchParams.get("view");
    const body = await directory.listBody(view === "who" || view === "summary" ? view : "full");
    return new Response(body, { headers: { "content-type": "application/json" } });
  }
  if (url.pathname === "/webhook") {
    const directory = env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account)));
    return webhookRoute(request, directory, "the account", env.BATON_WEBHOOK_ALLOW_PRIVATE);
  }
  if (url.pathname === "/webhook/test" && request.method === "POST") {
    return webhookTestRoute(env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account))), "the account");
  }
  if (url.pathname === "/observe") {
    return forward(env.DIRECTORY.get(env.DIRECTORY.idFromName(directoryObjectName(account))), request);
  }
  if (parts[0] === "agents" && parts.length >= 3) {
    const agent = decodedSegment(parts[1]!);
    if (agent === null || !AGENT_NAME.test(agent)) {
      return errorResponse(400, "bad_name", "agent names are 1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
    }
    return agentRequest(request, env, account, agent, url);
  }
  if (parts[0] === "leases" && parts.length >= 2) {
    const session = parts[1]!;
    if (!SESSION_NAME.test(session)) {
      return errorResponse(400, "bad_name", "session names are 1-128 chars of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
    }
    return leaseRequest(request, env, account, session, url.pathname);
  }
  return errorResponse(404, "not_found", `no route for ${request.method} ${url.pathname}`);
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    const origins = allowedOrigins(env);
    if (!origins.ok) return errorResponse(500, "internal", origins.message);
    const foreign = refuseForeignOrigin(request, origins.origins);
    if (foreign) return foreign;
    const tokens = tokenConfig(env);
    if (!tokens.ok) return errorResponse(500, "internal", tokens.message);
    if (tokens.entries.length === 0) {
      return errorResponse(401, "unauthorized", "no tokens are configured on this coordinator; it refuses every request");
    }
    const rebound = refuseRebindingDevToken(request, presentedToken(request), origins.origins);
    if (rebound) return rebound;
    const caller = await authenticate(presentedToken(request), tokens.entries);
    if (caller === null) return errorResponse(401, "unauthorized", "missing or wrong bearer token");
    const clockHook = await testClockRoute(request, env, caller.account, url);
    if (clockHook) return clockHook;
    const needed = requiredScope(request.method, url.pathname);
    if (needed === null) return errorResponse(404, "not_found", `no route for ${request.method} ${url.pathname}`);
    if (!caller.scopes.includes(needed)) {
      return errorResponse(403, "forbidden", `token ${caller.tokenName} of account ${caller.account} lacks the ${needed} scope that ${request.method} ${url.pathname} needs`);
    }
    rememberCaller(request, caller);
    const config = coordinatorConfig(env);
    if (!config.ok) return errorResponse(500, "internal", config.message);
    return route(request, env, caller.account, url);
  },
} satisfies ExportedHandler<Env>;
