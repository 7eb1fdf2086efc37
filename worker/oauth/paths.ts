// What the pipeline knows of OAuth without loading the provider: its paths, whether it is on, and
// the 401 challenge. The provider itself (server.ts, authorize.ts, grant-routes.ts, on Cloudflare's
// workers-oauth-provider) is loaded by the first request that needs it (pipeline.ts, routes.ts).
import type { Env } from "../env.ts";

export const OAUTH_PATHS = {
  authorize: "/authorize",
  token: "/oauth/token",
  register: "/oauth/register",
  serverMetadata: "/.well-known/oauth-authorization-server",
  resourceMetadata: "/.well-known/oauth-protected-resource",
} as const;

/** Whether OAuth is on: the KV namespace it keeps clients, grants and tokens in is bound. */
export function oauthEnabled(env: Env): env is Env & { OAUTH_KV: KVNamespace } {
  return env.OAUTH_KV !== undefined;
}

/** The paths the provider answers without a baton token (registration, tokens, metadata); the sign-in page is authorize.ts's. */
export function isProviderPath(pathname: string): boolean {
  return pathname === OAUTH_PATHS.token || pathname === OAUTH_PATHS.register || pathname === OAUTH_PATHS.serverMetadata
    || pathname === OAUTH_PATHS.resourceMetadata || pathname.startsWith(`${OAUTH_PATHS.resourceMetadata}/`);
}

/** Whether a token that is no baton token may be one of the provider's access tokens, which are `user:grant:secret`. */
export function mayBeAccessToken(token: string): boolean {
  return token.split(":").length === 3;
}

/** Why an origin has no OAuth: OAuth 2.1 wants https, or plain http on a loopback address (`wrangler dev`). */
export const NOT_HERE = "OAuth is served over https only (or plain http on localhost, 127.0.0.0/8 or [::1]; wrangler dev)";

/** The WWW-Authenticate challenge on a 401, which sends an OAuth client to the metadata document (RFC 9728 §5.1). */
export function bearerChallenge(request: Request): string {
  return `Bearer resource_metadata="${new URL(request.url).origin}${OAUTH_PATHS.resourceMetadata}"`;
}
