// OAuth 2.1 for remote hosts (MCP and A2A clients), on Cloudflare's workers-oauth-provider: the
// authorization server (dynamic client registration, PKCE, tokens, refresh, revocation, RFC 8414
// metadata) and the RFC 9728 protected-resource document. The protected resource is the whole
// coordinator, its bare origin: an OAuth access token is one more way to present a caller, read in
// index.ts after baton's own tokens, so every route (the remote MCP endpoint, A2A, the REST routes)
// runs the same scope check. Issuer and resource are the origin a request arrives on (a Worker is
// only reached on the hosts it is routed to; `wrangler dev` on loopback http). Needs the OAUTH_KV
// binding; without it these paths are 404 and only baton tokens work.
import { OAuthAuthorizationServer, OAuthResourceServer, type OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { callerByHash, type TokenEntry } from "../auth.ts";
import type { Env } from "../env.ts";
import { readBody } from "../objects/http.ts";
import { grantCaller, type GrantProps } from "../rules/oauth-grants.ts";
import { registrationKey, REGISTRATIONS_PER_MINUTE } from "../rules/registration-limit.ts";
import type { Caller } from "../scopes.ts";
import { errorResponse } from "../wire/protocol.ts";
import { SCOPES } from "../wire/token-scopes.ts";

export const OAUTH_PATHS = {
  authorize: "/authorize",
  token: "/oauth/token",
  register: "/oauth/register",
  serverMetadata: "/.well-known/oauth-authorization-server",
  resourceMetadata: "/.well-known/oauth-protected-resource",
} as const;

/** An access token lives an hour; its grant (refresh token) 30 days, as the provider's default. */
const ACCESS_TOKEN_TTL_SECONDS = 3600;
/** Origins served at once; a Worker answers few hosts, so more than this is a misconfiguration, not load. */
const MAX_ORIGINS = 8;

interface OAuthRoles {
  origin: string;
  authorization: OAuthAuthorizationServer<Env>;
  resource: OAuthResourceServer<Env>;
}

const roles = new Map<string, OAuthRoles>();

/** The provider's roles for an origin, or null for one it refuses (plain http on a name that is not loopback). */
function rolesFor(origin: string): OAuthRoles | null {
  const known = roles.get(origin);
  if (known) return known;
  try {
    return makeRoles(origin);
  } catch {
    return null;
  }
}

function makeRoles(origin: string): OAuthRoles {
  const authorization = new OAuthAuthorizationServer<Env>({
    issuer: origin,
    resources: [origin],
    authorizeEndpoint: OAUTH_PATHS.authorize,
    tokenEndpoint: OAUTH_PATHS.token,
    clientRegistrationEndpoint: OAUTH_PATHS.register,
    scopesSupported: [...SCOPES],
    accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
  });
  const resource = new OAuthResourceServer<Env>({
    resourceMetadata: { resource: origin, authorization_servers: [origin], bearer_methods_supported: ["header"], resource_name: "baton" },
    validateToken: (env) => (res, token) => authorization.validateToken(res, token, env),
    // Only the metadata document is served through it; every other request goes through index.ts.
    handler: { fetch: () => new Response(null, { status: 404 }) },
  });
  if (roles.size >= MAX_ORIGINS) roles.delete(roles.keys().next().value!);
  const made = { origin, authorization, resource };
  roles.set(origin, made);
  return made;
}

/** Whether OAuth is on: the KV namespace it keeps clients, grants and tokens in is bound. */
export function oauthEnabled(env: Env): env is Env & { OAUTH_KV: KVNamespace } {
  return env.OAUTH_KV !== undefined;
}

/** The paths the provider answers without a baton token (registration, tokens, metadata); the sign-in page is authorize.ts's. */
export function isProviderPath(pathname: string): boolean {
  return pathname === OAUTH_PATHS.token || pathname === OAUTH_PATHS.register || pathname === OAUTH_PATHS.serverMetadata
    || pathname === OAUTH_PATHS.resourceMetadata || pathname.startsWith(`${OAUTH_PATHS.resourceMetadata}/`);
}

/**
 * A registration or token request is a few hundred bytes; registration takes no token, so a
 * larger body is refused before the provider reads or stores it (413, as on every route).
 */
const PROVIDER_BODY_BYTES = 16 * 1024;

/**
 * Registration is open to anyone (RFC 7591) and each one is a KV write kept 90 days, so it is
 * budgeted per client address (rules/registration-limit.ts). A deployment without the binding
 * registers without a budget and says so in its log once per isolate (docs/security.md).
 */
async function registrationAllowed(request: Request, env: Env): Promise<boolean> {
  if (env.OAUTH_REGISTER_LIMIT === undefined) {
    if (!warnedUnlimited) console.warn("OAUTH_REGISTER_LIMIT is not bound: OAuth client registration is not rate limited");
    warnedUnlimited = true;
    return true;
  }
  const { success } = await env.OAUTH_REGISTER_LIMIT.limit({ key: registrationKey(request.headers.get("cf-connecting-ip")) });
  return success;
}
let warnedUnlimited = false;

/**
 * The provider's CORS headers on an answer baton gives in its place (the 429, a 413), so a browser
 * client reads the status instead of a CORS failure. Its helper is not exported; this is its policy,
 * and test/worker/oauth.test.ts compares the two on the same request.
 */
function withProviderCors(response: Response, request: Request): Response {
  const origin = request.headers.get("origin");
  if (!origin) return response;
  const headers = response.headers;
  headers.set("access-control-allow-origin", origin);
  headers.set("access-control-allow-methods", "*");
  headers.set("access-control-allow-headers", "Authorization, *");
  headers.set("access-control-max-age", "86400");
  headers.set("vary", "Origin");
  headers.set("access-control-expose-headers", "WWW-Authenticate, Retry-After");
  return response;
}

/** Answers a provider path: the protected-resource document, or the authorization server's endpoints. */
export async function providerResponse(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const url = new URL(request.url);
  const found = rolesFor(url.origin);
  if (found === null) return errorResponse(404, "not_found", NOT_HERE);
  const { authorization, resource } = found;
  if (url.pathname.startsWith(OAUTH_PATHS.resourceMetadata)) return resource.fetch(request, env, ctx);
  if (url.pathname === OAUTH_PATHS.register && request.method === "POST" && !(await registrationAllowed(request, env))) {
    const refused = errorResponse(429, "rate_limited", `at most ${REGISTRATIONS_PER_MINUTE} client registrations a minute from one address; try again in a minute`);
    refused.headers.set("retry-after", "60");
    return withProviderCors(refused, request);
  }
  const body = await readBody(request, PROVIDER_BODY_BYTES);
  if (!body.ok) return withProviderCors(body.response, request);
  return authorization.fetch(new Request(request, request.body ? { body: body.bytes } : {}), env, ctx);
}

/** The provider's helpers (parse and complete authorizations, list and revoke grants) for the origin a request came to. */
export function oauthApi(request: Request, env: Env): OAuthHelpers | null {
  return rolesFor(new URL(request.url).origin)?.authorization.getOAuthApi(env) ?? null;
}

/** Why an origin has no OAuth: OAuth 2.1 wants https, or plain http on a loopback address (`wrangler dev`). */
export const NOT_HERE = "OAuth is served over https only (or plain http on localhost, 127.0.0.0/8 or [::1]; wrangler dev)";

/** The WWW-Authenticate challenge on a 401, which sends an OAuth client to the metadata document (RFC 9728 §5.1). */
export function bearerChallenge(request: Request): string {
  return `Bearer resource_metadata="${new URL(request.url).origin}${OAUTH_PATHS.resourceMetadata}"`;
}

function isGrantProps(value: unknown): value is GrantProps {
  if (typeof value !== "object" || value === null) return false;
  const p = value as Record<string, unknown>;
  return typeof p.account === "string" && typeof p.signer === "string" && typeof p.signerName === "string"
    && (p.agents === null || (Array.isArray(p.agents) && p.agents.every((a) => typeof a === "string")));
}

/**
 * The caller an OAuth access token stands for (rules/oauth-grants.ts grantCaller), or null when it
 * is not a live access token for this origin, or the baton token that approved its grant is gone.
 */
export async function oauthCaller(token: string, request: Request, env: Env, entries: TokenEntry[]): Promise<Caller | null> {
  // The provider's access tokens are `user:grant:secret`; anything else is not one of them.
  if (!oauthEnabled(env) || token.split(":").length !== 3) return null;
  const origin = new URL(request.url).origin;
  const found = rolesFor(origin);
  if (found === null) return null;
  const validated = await found.authorization.validateToken(origin, token, env);
  if (validated === null || !isGrantProps(validated.props)) return null;
  const [user, grant] = token.split(":");
  return grantCaller(validated.props, validated.scope, callerByHash(validated.props.signer, entries), `${user}:${grant}`);
}
