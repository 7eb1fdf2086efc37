// The Worker: authenticates every request, validates names, and routes to the object that owns
// the (account, agent) pair. Static dashboard files are served by the assets binding before this runs.
import { authenticate, parseTokenConfig, presentedToken, type TokenEntry } from "./auth.ts";
import type { Env } from "./env.ts";
import { directoryId } from "./objects/directory-object.ts";
import { metricsResponse } from "./objects/metrics-scrape.ts";
import { readBody } from "./objects/http.ts";
import { leaseRequest } from "./leases.ts";
import { AGENT_NAME, LIMITS, SESSION_NAME, type ErrorCode } from "./wire/protocol.ts";

export { AgentCoordinator } from "./objects/agent-object.ts";
export { LeaseShard } from "./objects/lease-shard.ts";
export { AgentDirectory } from "./objects/directory-object.ts";

export function jsonError(status: number, code: ErrorCode, message: string): Response {
  return Response.json({ error: code, message }, { status });
}

let cachedTokens: { raw: string | undefined; entries: TokenEntry[] } | null = null;
function tokenEntries(env: Env): TokenEntry[] {
  if (!cachedTokens || cachedTokens.raw !== env.BATON_TOKENS) {
    cachedTokens = { raw: env.BATON_TOKENS, entries: parseTokenConfig(env.BATON_TOKENS) };
  }
  return cachedTokens.entries;
}

function objectKey(account: string, name: string): string {
  return `${account}:${name}`;
}

/** A path segment with its %-escapes decoded, or null when they are malformed (a bad name, not a crash). */
function decodedSegment(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}

/**
 * Hands the request to an object with the names the Worker established (x-baton-account and the
 * like); a client's own headers of those names are overwritten, never trusted. A body is read here,
 * within LIMITS.requestBodyBytes, so an object that refuses it early never leaves a client stream half-read.
 */
async function forward(stub: { fetch(request: Request): Promise<Response> }, request: Request, names: Record<string, string>): Promise<Response> {
  const body = await readBody(request, LIMITS.requestBodyBytes);
  if (!body.ok) return body.response;
  const forwarded = new Request(request, request.body ? { body: body.bytes } : {});
  for (const [name, value] of Object.entries(names)) forwarded.headers.set(`x-baton-${name}`, value);
  return stub.fetch(forwarded);
}

async function route(request: Request, env: Env, account: string, url: URL): Promise<Response> {
  const parts = url.pathname.split("/").filter(Boolean);
  if (url.pathname === "/metrics" && request.method === "GET") return metricsResponse(env, account);
  if ((url.pathname === "/agents" && request.method === "GET") || url.pathname === "/observe") {
    // The account's directory: every agent with connections, and the dashboard's observer socket.
    return forward(env.DIRECTORY.get(directoryId(env.DIRECTORY, account)), request, { account });
  }
  if (parts[0] === "agents" && parts.length >= 3) {
    const agent = decodedSegment(parts[1]!);
    if (agent === null || !AGENT_NAME.test(agent)) {
      return jsonError(400, "bad_name", "agent names are 1-63 chars of a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
    }
    return forward(env.AGENTS.get(env.AGENTS.idFromName(objectKey(account, agent))), request, { account, agent });
  }
  if (parts[0] === "leases" && parts.length >= 2) {
    const session = parts[1]!;
    if (!SESSION_NAME.test(session)) {
      return jsonError(400, "bad_name", "session names are 1-128 chars of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit");
    }
    return leaseRequest(request, env, account, session, url.pathname);
  }
  return jsonError(404, "not_found", `no route for ${request.method} ${url.pathname}`);
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    let entries: TokenEntry[];
    try {
      entries = tokenEntries(env);
    } catch (err) {
      return jsonError(500, "bad_request", (err as Error).message);
    }
    if (entries.length === 0) {
      return jsonError(401, "unauthorized", "no tokens are configured on this coordinator; it refuses every request");
    }
    const account = await authenticate(presentedToken(request), entries);
    if (account === null) return jsonError(401, "unauthorized", "missing or wrong bearer token");
    return route(request, env, account, url);
  },
} satisfies ExportedHandler<Env>;
